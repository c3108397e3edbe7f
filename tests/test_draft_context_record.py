"""The short-drafter-context record (tests/real_engine/draft_context.py, vLLM's CPU build) against check: every
copy whose accept length the engine measured collapsed (under 90% of the same drafter with the target's context)
is a warning in check at that release (naming the position past which it collapses), and the copy with the target's context is not; greedy output stayed
lossless (the failure is silent)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_engine.draft_context import findings, write_drafters

RECORDS = sorted((Path(__file__).parent / "real_engine" / "records").glob("vllm-*-cpu-draft-context.json"))


@pytest.mark.parametrize("path", RECORDS, ids=[p.name for p in RECORDS])
def test_check_flags_exactly_the_drafters_whose_acceptance_collapsed(path, tmp_path):
    rec = json.loads(path.read_text())
    drafters = write_drafters(tmp_path)
    full = next(
        r for r in rec["rows"] if r["max_position_embeddings"] == rec["target_max_position_embeddings"]
    )
    assert len(rec["rows"]) == len(drafters) >= 3
    for row in rec["rows"]:
        assert row["stage"] is None and row["lossless"], row
        collapsed = row["accept_length"] < 0.9 * full["accept_length"]
        now = findings(drafters[row["max_position_embeddings"]], rec["engine"])
        assert any(f["severity"] == "warning" for f in now) == collapsed, (row, now)
        assert now == row["check"], "check's findings changed since the record: rerun the tier"
    assert any(r["accept_length"] < 0.9 * full["accept_length"] for r in rec["rows"])


def test_the_record_exists():
    assert RECORDS, "no draft-context record (make test-real-engine writes it)"
