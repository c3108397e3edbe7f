"""The draft's embedding and lm_head as SGLang 0.5.23 feeds them, on the CPU: copies of the zoo's default drafter
that differ only there (tests/real_engine/draft_embedding.py: a random embedding of its own; draft_head.py: a random
full-vocabulary lm_head with `"draft_vocab_size": null`, absent, or with an identity d2t, and no lm_head at all),
each served with K = 3 (chain: --speculative-num-steps 3 --speculative-eagle-topk 1 --speculative-num-draft-tokens
4) on the accept tier's prompts, beside the walk under each hypothesis (the drafter's own weight, or the target's
in its place), in bf16 as the accept tier walks.

Where SGLang served a copy, its reading (completion_tokens / spec_verify_ct, the accept tier's convention) is within
the accept tier's 2% of the walk under the weight the release's row says (rules/draft_weights.py, what `test
--engine` walks) and far from the walk under the other; where the row says SGLang refuses the copy, it failed at
load. The record is written as JSON (EAGLEWIRE_SGLANG_OUT, default sglang-results/sglang-draft-weights.json; the
committed copy is tests/sglang_engine/records/sglang-0.5.23-cpu-draft-weights.json, replayed by
tests/test_draft_weights_sglang_record.py).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
import torch
from real_engine import draft_embedding, draft_head
from real_engine.engine import files_sha256, prompts, sha256_json

from eaglewire import __version__, zoo
from eaglewire.formats import read_drafter
from eaglewire.jobs.evaluate import evaluate
from eaglewire.jobs.pair import drafter_for, feed_wiring, served_embedding
from eaglewire.targets import load_target

from .cases import TOL, own_chain, sglang_reading
from .conftest import ENGINE
from .cpu import kernel_build
from .engine import DTYPE, NEW_TOKENS, PROMPT_LEN, PROMPTS, accept, run_sglang

pytestmark = pytest.mark.sglang_engine

K = draft_embedding.K


def embedding_walks(drafter: Path, items, target) -> dict:
    """The walk at K with the drafter's own embedding and with the target's, and the one the row says."""
    ckpt = read_drafter(drafter)
    wiring, _ = feed_wiring(ckpt, target, None, ENGINE, "cpu")
    out = {}
    for embedding in ("own", "target"):
        model = drafter_for(ckpt, target, target.dtype, embedding=embedding)
        out[embedding] = evaluate(model, items, wiring, K, "chain").walks[K - 1]
    said, note = served_embedding(ckpt, target, ENGINE)
    return {"walks": out, "row_says": said, "note": note, "taps": str(wiring)}


def reading(w) -> dict:
    return {"accept_length": round(sglang_reading(w), 4), "drafts": w.drafts,
            "accepted_per_pos": list(w.accepted_per_pos)}  # fmt: skip


@pytest.fixture(scope="module")
def record(sglang_python, tmp_path_factory) -> dict:
    work = tmp_path_factory.mktemp("sglang-draft-weights")
    target = load_target(zoo.target_dir(), dtype=getattr(torch, DTYPE))
    ids = prompts(target.tokenizer, PROMPTS, PROMPT_LEN)
    copies = {"own-embedding": draft_embedding.write_drafters(work / "embedding")["own-embedding"]}
    copies |= draft_head.write_drafters(work / "head")
    items = own_chain(target, ids)
    preds = {name: embedding_walks(d, items, target) if name == "own-embedding"
             else draft_head.walks(d, items, ENGINE, target.dtype, target) for name, d in copies.items()}  # fmt: skip
    # a copy its row says serves is started again should it fail once (a machine's hiccup is no verdict)
    cases = [{"name": n, "drafter": str(d), "steps": K, "topk": 1, "draft_tokens": K + 1, "prompts": ids,
              "max_tokens": NEW_TOKENS, "must_serve": preds[n]["row_says"] != "fails"}
             for n, d in copies.items()]  # fmt: skip
    got = run_sglang(sglang_python, cases, work, "draft-weights")
    rows = []
    for name, d in copies.items():
        res, pred = got[name], preds[name]
        measured = accept(res) if res.get("stage") is None else None
        near = [h for h, w in pred["walks"].items()
                if measured and abs(sglang_reading(w) - measured["accept_length"]) <= TOL * measured["accept_length"]]  # fmt: skip
        rows.append({"copy": name, "weight": "embedding" if name == "own-embedding" else "lm_head",
                     "stage": res.get("stage"), "error": res.get("error"),
                     "measured": None if measured is None else {k: measured[k] for k in
                                                                ("accept_length", "verify_ct", "completion_tokens")},
                     "walks": {h: reading(w) for h, w in pred["walks"].items()}, "engine_within_tol_of_walk_under": near,
                     "row_says": pred["row_says"], "note": pred["note"], "taps": pred["taps"],
                     "drafter_sha256": files_sha256(d), "start_s": res.get("start_s")})  # fmt: skip
    rec = {"engine": ENGINE, "platform": "cpu", "k": K, "prompts": PROMPTS, "prompt_len": PROMPT_LEN,
           "new_tokens": NEW_TOKENS, "dtype": DTYPE, "tolerance": TOL,
           "convention": "SGLang's accept length: completion_tokens / spec_verify_ct summed over requests (bonus "
           "token included); each walk's the same reading, sum(min(N, 1+d+a)) / sum(d) over its requests",
           "what": "copies of the zoo's default drafter that differ in their embedding or lm_head: which one "
           "SGLang's draft computes with", "rows": rows,
           "provenance": {"eaglewire": __version__, "torch": torch.__version__,
                          "harness": "../shared/sglang-cpu", "kernels": kernel_build(), "prompts_sha256": sha256_json(ids),
                          "target_sha256": files_sha256(zoo.target_dir())}}  # fmt: skip
    out = Path(os.environ.get("EAGLEWIRE_SGLANG_OUT", "sglang-results"))
    out.mkdir(parents=True, exist_ok=True)
    (out / "sglang-draft-weights.json").write_text(json.dumps(rec, indent=1) + "\n")
    return rec


def test_sglang_feeds_what_its_rows_say(record):
    for row in record["rows"]:
        if row["row_says"] == "fails":
            assert row["stage"] == "load", row
            continue
        assert row["stage"] is None, row
        assert row["engine_within_tol_of_walk_under"] == [row["row_says"]], row


def test_the_copies_tell_the_hypotheses_apart(record):
    """Each copy's walks under the two hypotheses are far apart (else the engine's reading decides nothing)."""
    for row in record["rows"]:
        lengths = [w["accept_length"] for w in row["walks"].values()]
        if len(lengths) == 2:
            assert abs(lengths[0] - lengths[1]) > 4 * TOL * max(lengths), row
