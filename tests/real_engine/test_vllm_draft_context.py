"""A drafter whose context is shorter than the served positions, in vLLM's CPU build (draft_context.py): the
record is written where the tier writes its results, and check warns of exactly the copies whose acceptance
collapses."""

from __future__ import annotations

import pytest

from .draft_context import run
from .engine import write_result

pytestmark = pytest.mark.real_engine


def test_a_short_drafter_context_collapses_acceptance_where_check_says(vllm_python, vllm_version, tmp_path):
    rec = run(vllm_python, tmp_path, f"vllm=={vllm_version}")
    write_result(f"vllm-{vllm_version}-cpu-draft-context.json", rec)
    full = next(
        r for r in rec["rows"] if r["max_position_embeddings"] == rec["target_max_position_embeddings"]
    )
    for row in rec["rows"]:
        assert row["stage"] is None and row["lossless"], row
        flagged = any(f["severity"] == "warning" for f in row["check"])
        collapsed = row["accept_length"] < 0.9 * full["accept_length"]
        assert flagged == collapsed, row
