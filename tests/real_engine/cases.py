"""The accept-length tier's cases and eaglewire's side of them, shared by the tier (test_vllm_accept.py) and by
`make test`'s replay of its committed record (tests/test_accept_replay.py): the same drafter copies, the same
chain data, the same walk, so the replay recomputes exactly what the tier compared with the engine.

Also the id tier's reading of an engine failure (how many aux states reached the drafter's fc) and of eaglewire's
failure text (how many it says reach it), shared by test_vllm_ids.py and tests/test_observed.py.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

from eaglewire import zoo
from eaglewire.cli.demo import export_like_kimi
from eaglewire.jobs.check import check_job
from eaglewire.jobs.evaluate import chain_data, evaluate
from eaglewire.jobs.pair import load_pair
from eaglewire.metrics import WalkCounts
from eaglewire.taps import Wiring

from .engine import as_samples

KS = (1, 3, 5)
DRAFTERS = ("default", "custom-taps", "default-miswired", "custom-taps-idless", "custom-taps-fixed")
# Rates are kept to 4 decimals: |round(a/d, 4) * d - a| <= 0.00005 * d, below 1/2 while d < 10,000 drafts, so
# round(rate * d) recovers the integer a exactly (and no other integer rounds to the same rate) below that bound.
RECOVERABLE_DRAFTS = 10_000


def miswired(src: Path, dst: Path) -> Path:
    """The default drafter (trained on h2,h4,h5) with its ids pointing at h0,h1,h4 for every reader."""
    shutil.copytree(src, dst)
    cfg = json.loads((dst / "config.json").read_text())
    cfg["eagle_aux_hidden_state_layer_ids"] = [0, 1, 4]
    cfg["eagle_config"]["eagle_aux_hidden_state_layer_ids"] = [-1, 0, 3]
    (dst / "config.json").write_text(json.dumps(cfg, indent=2))
    return dst


def build_drafters(workdir: Path, engine: str) -> dict[str, Path]:
    """Both zoo drafters, a miswired copy, the Kimi-like id-less copy and `check --fix-into`'s fix of it."""
    idless = export_like_kimi(zoo.drafter_dir("custom-taps"), workdir / "custom-taps-idless")
    fixed = workdir / "custom-taps-fixed"
    check_job(idless, zoo.target_dir(), [engine], trained_on=Wiring.parse("h0,h1,h4"), fix_into=fixed,
              platform="cpu")  # fmt: skip
    out = {
        "default": zoo.drafter_dir("default"),
        "custom-taps": zoo.drafter_dir("custom-taps"),
        "default-miswired": miswired(zoo.drafter_dir("default"), workdir / "default-miswired"),
        "custom-taps-idless": idless,
        "custom-taps-fixed": fixed,
    }
    assert tuple(out) == DRAFTERS
    return out


def trained_drafter(name: str) -> Path:
    """The zoo drafter a case's weights come from (its trained taps)."""
    return zoo.drafter_dir("default" if name.startswith("default") else "custom-taps")


def chain(target, ids: list[list[int]], prompt_len: int, new_tokens: int, steps: int = max(KS)):
    """The target's greedy continuations (transformers, fp32) that every prediction walks: one for all cases."""
    L = target.info.num_layers
    return chain_data(target, as_samples(ids), list(range(L + 1)), prompt_len, new_tokens, steps + 1)


def predict(chain_items, drafters: dict[str, Path], engine: str, trained: bool = True) -> dict[str, dict]:
    """Per case: the taps eaglewire says `engine` feeds on a CPU, the trained taps, and the walk under each (K =
    1..max(KS) from one walk of max(KS) drafts). `trained=False`: the served walk only (what the engine runs)."""
    out = {}
    for name, path in drafters.items():
        pair = load_pair(zoo.target_dir(), path, None, engine, "float32", "cpu", platform="cpu")
        served = pair.wiring
        walks = {"served": evaluate(pair.drafter, chain_items, served, max(KS), "chain").walks}
        pred = {"served": served, "walks": walks}
        if trained:
            pred["trained"] = load_pair(zoo.target_dir(), trained_drafter(name)).wiring
            walks["trained"] = (
                walks["served"]
                if pred["trained"] == served
                else evaluate(pair.drafter, chain_items, pred["trained"], max(KS), "chain").walks
            )
        out[name] = pred
    return out


def walk_counters(w: WalkCounts) -> dict:
    """A walk's counts under vLLM's names: drafts and accepted tokens per draft position."""
    return {"num_drafts": w.drafts, "num_accepted_tokens_per_pos": list(w.accepted_per_pos)}


def engine_counters(metrics: dict) -> dict:
    """vLLM's spec-decode counters (LLM.get_metrics), as integers."""
    return {
        "num_drafts": int(metrics["num_drafts"]),
        "num_draft_tokens": int(metrics["num_draft_tokens"]),
        "num_accepted_tokens": int(metrics["num_accepted_tokens"]),
        "num_accepted_tokens_per_pos": [int(x) for x in metrics["num_accepted_tokens_per_pos"]],
    }


def recorded_engine_counters(row: dict) -> tuple[dict, str]:
    """The engine's counters of a record row and where they come from: the raw counters when the record keeps
    them; else recovered from the 4-decimal rates and the draft count (exact below RECOVERABLE_DRAFTS, see
    there; refused above)."""
    if "engine_counters" in row:
        return row["engine_counters"], "raw counters"
    d = row["drafts"]["measured"]
    assert d < RECOVERABLE_DRAFTS, (
        f"{row['case']} K={row['k']}: {d} drafts: 4-decimal rates do not fix the counts"
    )
    per_pos = [round(r * d) for r in row["measured_per_position"]]
    assert all(round(a / d, 4) == r for a, r in zip(per_pos, row["measured_per_position"], strict=True))
    return {"num_drafts": d, "num_accepted_tokens_per_pos": per_pos}, "recovered from 4-decimal rates"


# ---- the id tier ------------------------------------------------------------------------------------------------


def states_fed(error: str | None, hidden: int, prompt_tokens: int) -> int | None:
    """vLLM's fc error names the input size: states = size / (hidden * prompt tokens)."""
    m = re.search(r"invalid for input of size (\d+)", error or "")
    return int(m.group(1)) // (hidden * prompt_tokens) if m else None


_NAMED = re.compile(r"\b(\d+) of \d+ aux states|receives (\d+) states|captures (\d+) states")


def states_named(failure: str | None) -> int | None:
    """How many aux states eaglewire's failure text says reach the drafter's fc (None when it names none)."""
    m = _NAMED.search(failure or "")
    return None if m is None else int(next(g for g in m.groups() if g is not None))


# ---- make test's replay of a committed accept record -------------------------------------------------------------


_CHAINS: dict = {}
_WALKS: dict = {}


def replay(record: dict, workdir: Path) -> dict:
    """eaglewire's side of a committed accept record, recomputed from the inputs in this checkout as the tier
    computes it (one chain for every case, the served-taps walk of each drafter copy): per case and K the served
    taps and the walk's counters; whether each input has the sha256 the record gives (None: the record gives
    none); whether the walked continuation is the engine's plain output (by sha256)."""
    import time

    from eaglewire.targets import load_target

    from .engine import decode_prompts, files_sha256, prompts, sha256_json

    t0 = time.perf_counter()
    prov = record.get("provenance") or {}
    target = load_target(zoo.target_dir())
    ids = (
        decode_prompts(record["prompt_token_ids"])
        if "prompt_token_ids" in record
        else prompts(target.tokenizer)
    )
    drafters = build_drafters(workdir, record["engine"])
    sha = {row["case"]: row.get("drafter_sha256") for row in record["rows"]}
    inputs = {
        "target": files_sha256(zoo.target_dir()) == prov["target_sha256"]
        if "target_sha256" in prov
        else None,
        "prompts": sha256_json(ids) == prov["prompts_sha256"] if "prompts_sha256" in prov else None,
        "drafters": {
            n: None if sha[n] is None else files_sha256(p) == sha[n] for n, p in drafters.items() if n in sha
        },
    }
    steps = max(record.get("ks", KS))
    key = (sha256_json(ids), record["prompt_len"], record["new_tokens"], steps)
    if key not in _CHAINS:  # every record of one prompt set walks the same continuations: computed once
        _CHAINS[key] = chain(target, ids, record["prompt_len"], record["new_tokens"], steps)
    items = _CHAINS[key]
    walked = [
        s.input_ids[record["prompt_len"] : record["prompt_len"] + record["new_tokens"]].tolist()
        for s in items
    ]
    used = {row["case"] for row in record["rows"]}
    rows = {}
    for name, path in drafters.items():
        if name not in used:
            continue
        served = load_pair(
            zoo.target_dir(), path, None, record["engine"], "float32", "cpu", platform="cpu"
        ).wiring
        wkey = (key, sha256_json(files_sha256(path)), tuple(served.indices))
        if wkey not in _WALKS:  # the same copy served the same taps at another release: the same walk
            _WALKS[wkey] = predict(items, {name: path}, record["engine"], trained=False)[name]["walks"][
                "served"
            ]
        for k in record.get("ks", KS):
            rows[f"{name}/K={k}"] = {
                "served_taps": list(served.indices),
                **walk_counters(_WALKS[wkey][k - 1]),
                "per_request": [list(x) for x in _WALKS[wkey][k - 1].per_sample],
            }
    plain = prov.get("plain_tokens_sha256")
    return {
        "inputs": inputs,
        "plain_tokens": None if plain is None else sha256_json(walked) == plain,
        "rows": rows,
        "seconds": round(time.perf_counter() - t0, 1),
    }


def agreement(record: dict, replayed: dict) -> list[dict]:
    """Per greedy row: the engine's counters (raw, or recovered) against the recomputed walk, as integers: the
    batch's, or where the row was served again one request at a time (real_engine/serial.py), those, with the
    batch's within the scheduling noise serial.BATCH_VARIANCE bounds. `how` says which."""
    from .serial import KEYS, equal, within_batch_variance

    out = []
    for row in record["rows"]:
        engine, source = recorded_engine_counters(row)
        got = replayed["rows"][f"{row['case']}/K={row['k']}"]
        taps = got["served_taps"] == row["engine_taps"]
        serial = row.get("serial") or {}
        if equal(engine, got):
            how = "batched"
        elif (
            "counters" in serial
            and equal(serial["counters"], got)
            and serial["per_request"] == got["per_request"]
            and within_batch_variance(engine, got)
        ):
            how = "one request at a time"
        else:
            how = None
        out.append({
            "case": row["case"], "k": row["k"], "source": source, "equal": how is not None and taps, "how": how,
            "engine": {key: engine[key] for key in KEYS},
            "eaglewire": {key: v for key, v in got.items() if key != "per_request"},
        })  # fmt: skip
    return out
