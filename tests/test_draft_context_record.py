"""The short-drafter-context record (tests/real_engine/draft_context.py, vLLM's CPU build) replayed without an
engine: the copies and prompts are rebuilt (by sha256, the ones the engine ran), and for every copy the engine's
counters equal the walk of the batch under the release's context gate (rules/draft_context.py, engines/vllm/draft.py
CONTEXT_ROWS: V1 verifies zero drafts for the whole batch once its longest sequence + K passes the draft's
max_model_len), and no other walk where the gate changes anything; check calls a problem exactly the copies whose
acceptance collapsed; greedy output stayed lossless (the failure is silent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_engine.cases import chain
from real_engine.draft_context import PROMPT_COUNT, K, drafted, findings, walks, write_drafters
from real_engine.engine import NEW_TOKENS, PROMPT_LEN, files_sha256, prompts, sha256_json

from eaglewire import zoo
from eaglewire.jobs.pair import load_pair
from eaglewire.metrics import ContextGate, walk_batch
from eaglewire.targets import load_target

RECORDS = sorted((Path(__file__).parent / "real_engine" / "records").glob("vllm-*-cpu-draft-context.json"))
pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="needs the bundled zoo")


def _counters(row: dict) -> dict:
    return {
        "num_drafts": row["num_drafts"],
        "num_accepted_tokens_per_pos": row["num_accepted_tokens_per_pos"],
    }


def _as_counters(w) -> dict:
    return {"num_drafts": w.drafts, "num_accepted_tokens_per_pos": list(w.accepted_per_pos)}


@pytest.mark.parametrize("path", RECORDS, ids=[p.name for p in RECORDS])
def test_the_engine_counted_the_walk_under_the_context_gate(path, tmp_path):
    rec = json.loads(path.read_text())
    target = load_target(zoo.target_dir())
    ids = prompts(target.tokenizer, PROMPT_COUNT)
    assert sha256_json(ids) == rec["provenance"]["prompts_sha256"] and rec["k"] == K
    items = chain(target, ids, PROMPT_LEN, NEW_TOKENS, steps=K)
    drafters = write_drafters(tmp_path)
    full = next(
        r for r in rec["rows"] if r["max_position_embeddings"] == rec["target_max_position_embeddings"]
    )
    gated, batched = 0, 0
    for row in rec["rows"]:
        n = row["max_position_embeddings"]
        assert files_sha256(drafters[n]) == row["drafter_sha256"], n
        assert row["stage"] is None and row["lossless"], row
        now = walks(drafters[n], items, rec["engine"])
        assert now["counters"] == _counters(row), (n, now["row"], now["counters"], _counters(row))
        if now["gate"] is not None:
            pair = load_pair(
                zoo.target_dir(), drafters[n], None, rec["engine"], "float32", "cpu", platform="cpu"
            )
            requests = drafted(pair, items)
            own = ContextGate(now["gate"].limit, now["gate"].placeholder, batch=False)
            ungated, alone = walk_batch(requests, K), walk_batch(requests, K, own)
            # not the walk without the gate; where the requests' own lengths would gate otherwise, not that either
            gated += _counters(row) != _as_counters(ungated)
            batched += _as_counters(alone) != _as_counters(ungated) and _counters(row) != _as_counters(alone)
        collapsed = row["accept_length"] < 0.9 * full["accept_length"]
        problem = any(f["severity"] == "problem" for f in findings(drafters[n], rec["engine"]))
        assert problem == collapsed, (n, row["accept_length"], problem)
        assert findings(drafters[n], rec["engine"]) == row["check"], (
            "check's findings changed since the record: rerun the tier"
        )
    assert gated >= 2 and batched >= 1, "the record no longer tells the gate (or the batch's) apart"


def test_the_gate_reads_the_longest_request_of_the_batch():
    """Two requests from the same position: one accepts every draft and races ahead, the other only each first
    draft. With vLLM's batch gate the slow one loses its drafts when the fast one passes the limit; gated on its own
    length it drafts on. Without a gate the batch is the sum of its requests."""
    k, path, span = 3, list(range(1, 201)), (10, 150)
    fast = [[path[r + j] if r + j < len(path) else -2 for r in range(len(path) - 2)] for j in range(k)]
    slow = [fast[0], *([[-3] * (len(path) - 2)] * (k - 1))]
    both = [(fast, path, span), (slow, path, span)]
    batch, own = ContextGate(80, 0, True), ContextGate(80, 0, False)
    alone = [walk_batch([r], k, own) for r in both]
    assert walk_batch(both, k, own).accepted_per_pos == [
        a + b for a, b in zip(*(w.accepted_per_pos for w in alone), strict=True)
    ]
    assert walk_batch(both, k, batch).accepted < walk_batch(both, k, own).accepted
    assert walk_batch(both, k).accepted == sum(walk_batch([r], k).accepted for r in both)
    plain = walk_batch(
        both, k, ContextGate(80, None, True)
    )  # nothing drafted past it: plain decoding, not counted
    assert (
        plain.drafts < walk_batch(both, k, batch).drafts
        and plain.accepted == walk_batch(both, k, batch).accepted
    )


def test_the_record_exists():
    assert RECORDS, "no draft-context record (make test-real-engine writes it)"
