"""The batch-variance record (tests/real_engine/test_vllm_batch_variance.py, vLLM's CPU build) replayed without an
engine: the walk is recomputed on the record's prompts; the engine's counters one request at a time equal it as
integers, request by request, and the batch's differ (the record shows scheduling moving drafts) within
BATCH_VARIANCE."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_engine.cases import chain, walk_counters
from real_engine.engine import NEW_TOKENS, PROMPT_LEN, prompts, sha256_json
from real_engine.serial import BATCH_VARIANCE, equal, within_batch_variance

from eaglewire import zoo
from eaglewire.jobs.evaluate import evaluate
from eaglewire.jobs.pair import load_pair

RECORDS = sorted((Path(__file__).parent / "real_engine" / "records").glob("vllm-*-cpu-batch-variance.json"))
pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="needs the bundled zoo")


@pytest.mark.parametrize("path", RECORDS, ids=[p.name for p in RECORDS])
def test_one_request_at_a_time_is_the_walk(path):
    rec = json.loads(path.read_text())
    assert rec["batch_variance_bound"] == BATCH_VARIANCE
    pair = load_pair(zoo.target_dir(), zoo.drafter_dir("default"), None, rec["engine"], "float32", "cpu", platform="cpu")  # fmt: skip
    ids = prompts(pair.target.tokenizer)
    assert sha256_json(ids) == rec["provenance"]["prompts_sha256"]
    k = rec["k"]
    w = evaluate(
        pair.drafter, chain(pair.target, ids, PROMPT_LEN, NEW_TOKENS, steps=k), pair.wiring, k, "chain"
    )
    walk = w.walks[k - 1]
    assert walk_counters(walk) == rec["walk"]
    assert equal(rec["serial"]["counters"], rec["walk"])
    assert rec["serial"]["per_request"] == [list(x) for x in walk.per_sample]
    assert not equal(rec["batched"], rec["walk"]), "the batch counted the walk: the record shows no variance"
    assert within_batch_variance(rec["batched"], rec["walk"])
