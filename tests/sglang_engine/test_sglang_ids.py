"""The taps SGLang 0.5.23 (CPU, the harness venv) captures over a matrix of id variants, against eaglewire's
served taps for `sglang==0.5.23`: every variant SGLang serves, it serves with the taps eaglewire names; every one
it refuses, eaglewire says fails (the stage is recorded: SGLang's rows name none).

One server per variant (chain: 3 steps, top-k 1, 4 draft tokens; two side by side, one core each), the taps read from the running engine
(harness/sitecustomize.py: what `set_eagle3_layers_to_capture` got and the layers the first forward captured),
one /generate request of 64 prompt tokens. The run is recorded as the evidence of the SGLang 0.5.23 rows
(EAGLEWIRE_SGLANG_OUT/sglang-ids.json; the committed copy src/eaglewire/engines/sglang/data/observed/
sglang-0.5.23-cpu.json is replayed against the table by `make test`, tests/test_observed.py).
"""

from __future__ import annotations

import json
import os
import re
from pathlib import Path

import pytest
from real_engine.engine import prompts

from eaglewire import zoo
from eaglewire.engines.observed import record_variant
from eaglewire.jobs.check import check

from .conftest import ENGINE, SGLANG_VERSION
from .engine import TIMINGS, captured_taps, run_sglang
from .variants import L, variants, write_variant

pytestmark = pytest.mark.sglang_engine

PROMPT_TOKENS, NEW_TOKENS = 64, 8
CHAIN = {"steps": 3, "topk": 1, "draft_tokens": 4}
PARALLEL = 2


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("sglang-ids")
    return {v.name: write_variant(v, root) for v in variants()}


@pytest.fixture(scope="module")
def engine(sglang_python, built, tmp_path_factory) -> dict[str, dict]:
    from transformers import AutoTokenizer

    prompt = prompts(AutoTokenizer.from_pretrained(zoo.target_dir()), 1, PROMPT_TOKENS)
    # a variant eaglewire says serves is started again should it fail once (a machine's hiccup is no verdict)
    cases = [{"name": n, "drafter": str(d), **CHAIN, "prompts": prompt, "max_tokens": NEW_TOKENS, "timeout": 240,
              "must_serve": _verdict(d).status != "fails"} for n, d in built.items()]  # fmt: skip
    # two servers side by side, one core each: a variant's outcome is which taps it captures or where it fails
    return run_sglang(
        sglang_python, cases, tmp_path_factory.mktemp("sglang-ids-run"), "ids", parallel=PARALLEL
    )


def _verdict(drafter: Path):
    (verdict,) = check(drafter, zoo.target_dir(), [ENGINE]).verdicts
    return verdict


def _states_named(failure: str) -> set[int]:
    """The state counts eaglewire's failure text names ("2 of 3", "receives 2 states", "captures 4 states")."""
    pats = (r"\b(\d+) of \d+ aux", r"receives (\d+) state", r"captures (\d+) states", r"gets (\d+) of")
    return {int(m) for p in pats for m in re.findall(p, failure or "")}


def _row(v, res: dict, verdict, captured: list[int] | None) -> dict:
    row = record_variant(v.name, v.fmt, v.top, v.nested, res, verdict.served, captured or [])
    sets = [e for e in res.get("taps_events", []) if e["event"] == "set"]
    fwd = [e for e in res.get("taps_events", []) if e["event"] == "forward" and e["class"] == "LlamaModel"]
    row["engine"].pop("aux_hidden_state_layers", None)  # vLLM's attribute; SGLang's are below
    row["engine"]["set_eagle3_layers_to_capture"] = sets[-1]["layer_ids"] if sets else "not called"
    row["engine"]["layers_to_capture"] = sets[-1]["layers_to_capture"] if sets else None
    row["engine"]["aux_states_at_first_forward"] = fwd[0]["aux_states"] if fwd else None
    row["engine"]["start_s"] = res.get("start_s")
    row["eaglewire"]["status"] = verdict.status
    row["eaglewire"]["problems"] = [f.code for f in verdict.findings if f.severity == "problem"]
    return row


def test_engine_and_eaglewire_agree_on_every_variant(engine, built):
    rows, wrong, stage_unnamed = [], [], []
    for v in variants():
        res, verdict = engine[v.name], _verdict(built[v.name])
        served = verdict.served
        captured = captured_taps(res, L)
        rows.append(_row(v, res, verdict, captured))
        if rows[-1]["engine"]["error"]:  # the variant's folder lives in pytest's tmp: named, not pathed
            rows[-1]["engine"]["error"] = rows[-1]["engine"]["error"].replace(str(built[v.name]), "DRAFTER")
        if res["stage"] is None:  # served: the taps the running target captured are the ones eaglewire names
            if (
                verdict.status == "fails"
                or served.failure is not None
                or list(served.taps.indices) != captured
            ):
                wrong.append((v.name, "engine served", captured, "eaglewire", str(served.taps), verdict.status,
                              served.failure))  # fmt: skip
            continue
        # refused: eaglewire says it fails; where a forward ran, with the number of states that reached the fc
        fed = rows[-1]["engine"]["aux_states_at_first_forward"]
        counts_ok = fed is None or served.failure is None or fed in _states_named(served.failure)
        if verdict.status != "fails" or not counts_ok:
            wrong.append(
                (v.name, res["stage"], res.get("error"), "eaglewire", verdict.status, served.failure)
            )
        elif served.stage is None:
            stage_unnamed.append((v.name, res["stage"]))
        elif served.stage != res["stage"]:
            wrong.append((v.name, res["stage"], res.get("error"), "eaglewire stage", served.stage))
    out = Path(os.environ.get("EAGLEWIRE_SGLANG_OUT", "sglang-results"))
    out.mkdir(parents=True, exist_ok=True)
    starts = [r["engine"]["start_s"] for r in rows if r["engine"]["start_s"]]
    kernels = sorted({engine[v.name].get("kernels", "as shipped") for v in variants()})
    record = {"engine": ENGINE, "platform": "cpu", "runner": None, "target_layers": L, "level": "engine",
              "what": f"{len(rows)} id variants served by SGLang {SGLANG_VERSION} on the CPU (test harness); taps read from "
              "the running target", "kernels": kernels,
              "stages_compared": False,  # SGLang's rows name no failure stage: the replay checks fails/serves
              "harness": f"eaglewire's SGLang CPU test harness (SGLang {SGLANG_VERSION} wheel, CPU kernels built from source, intel_amx attention, bfloat16; tests only)",
              "server": "chain: --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens 4",
              "median_start_s": sorted(starts)[len(starts) // 2] if starts else None, "servers_side_by_side": PARALLEL,
              "run_s": {k: round(v) for k, v in TIMINGS.items() if k.startswith("ids")},
              "variants": rows}  # fmt: skip
    (out / "sglang-ids.json").write_text(json.dumps(record, indent=1))
    print("failures whose stage eaglewire does not name:", stage_unnamed)
    assert not wrong, wrong
