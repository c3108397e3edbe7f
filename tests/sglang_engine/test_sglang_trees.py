"""SGLang's draft trees (top-k > 1) against eaglewire's SGLang tree walk (jobs/tree.py, `evaluate(..., trees=...)`):
the custom-taps drafter at SGLang's automatic choice for a Llama target (steps 5, top-k 4, 8 draft tokens) and at
three more: narrow and shallow (3, 2, 4), narrow and deeper with more tokens (4, 2, 8), wide and shallow (2, 4, 6); same prompts, bf16, as test_sglang_accept.py. SGLang's reading
1 + correct drafts / verify_ct against the tree walk's accept length, within 3% (bf16 arithmetic, and a tree ranks
its candidates by draft probability: near-ties reorder more than a chain's argmax)."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from real_engine.engine import as_samples, prompts

from eaglewire import zoo
from eaglewire.jobs.evaluate import TreeSetting, chain_data, evaluate
from eaglewire.jobs.pair import load_pair

from .conftest import ENGINE
from .engine import DTYPE, NEW_TOKENS, PROMPT_LEN, PROMPTS, TIMINGS, accept, run_sglang

pytestmark = pytest.mark.sglang_engine

TREES = (TreeSetting(5, 4, 8), TreeSetting(3, 2, 4), TreeSetting(4, 2, 8), TreeSetting(2, 4, 6))
DRAFTER = "custom-taps"
TOL = 0.03


@pytest.fixture(scope="module")
def pair():
    return load_pair(zoo.target_dir(), zoo.drafter_dir(DRAFTER), None, ENGINE, DTYPE, "cpu")


@pytest.fixture(scope="module")
def ids(pair) -> list[list[int]]:
    return prompts(pair.target.tokenizer, PROMPTS, PROMPT_LEN)


@pytest.fixture(scope="module")
def sglang(sglang_python, ids, tmp_path_factory) -> dict[str, dict]:
    cases = [
        {"name": f"{DRAFTER}/{t}", "drafter": str(zoo.drafter_dir(DRAFTER)), "steps": t.steps, "topk": t.topk,
         "draft_tokens": t.draft_tokens, "prompts": ids, "max_tokens": NEW_TOKENS, "must_serve": True}
        for t in TREES
    ]  # fmt: skip
    return run_sglang(sglang_python, cases, tmp_path_factory.mktemp("sglang-trees"), "trees")


@pytest.fixture(scope="module")
def predicted(pair, ids) -> dict[str, float]:
    L = pair.target.info.num_layers
    steps = max(t.steps for t in TREES)
    items = chain_data(pair.target, as_samples(ids), list(range(L + 1)), PROMPT_LEN, NEW_TOKENS, steps + 1)
    return evaluate(pair.drafter, items, pair.wiring, steps, "chain", trees=TREES).tree


def test_tree_walk_predicts_sglang(sglang, predicted):
    rows, wrong = [], []
    for t in TREES:
        res = sglang[f"{DRAFTER}/{t}"]
        assert res["stage"] is None, (str(t), res.get("error"))
        m = accept(res)
        p = predicted[str(t)]
        rows.append({"case": DRAFTER, "tree": str(t), "measured_accept_length_drafts": round(m["accept_length_drafts"], 4),
                     "predicted_accept_length": round(p, 4), "measured_accept_length": round(m["accept_length"], 4),
                     "verify_ct": m["verify_ct"], "error": round((p - m["accept_length_drafts"]) / m["accept_length_drafts"], 4),
                     "server": res.get("server_info")})  # fmt: skip
        if abs(p - m["accept_length_drafts"]) > TOL * m["accept_length_drafts"]:
            wrong.append(rows[-1])
    out = Path(os.environ.get("EAGLEWIRE_SGLANG_OUT", "sglang-results"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "sglang-trees.json").write_text(
        json.dumps(
            {
                "engine": ENGINE,
                "dtype": DTYPE,
                "tolerance": f"{TOL:.0%} (bf16, and near-tie reordering of a tree's "
                "candidates by draft probability)",
                "run_s": {k: round(v) for k, v in TIMINGS.items() if k.startswith("trees")},
                "rows": rows,
            },
            indent=1,
        )
    )
    assert not wrong, wrong
