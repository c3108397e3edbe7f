"""A drafter whose own embedding differs from the target's, in vLLM's CPU build (draft_embedding.py): the record is
written where the tier writes its results, and the engine's counters are the walk under the embedding the
release's row says its draft computes with (`test --engine`), not under the other."""

from __future__ import annotations

import pytest

from .draft_embedding import run
from .engine import write_result

pytestmark = pytest.mark.real_engine


def test_the_engine_computes_with_the_embedding_its_row_says(vllm_python, vllm_version, tmp_path):
    rec = run(vllm_python, tmp_path, f"vllm=={vllm_version}")
    write_result(f"vllm-{vllm_version}-cpu-draft-embedding.json", rec)
    for row in rec["rows"]:
        assert row["stage"] is None and row["lossless"], row
        assert row["row_says"] in row["engine_equals_walk_under"], row
    own = next(r for r in rec["rows"] if r["copy"] == "own-embedding")
    assert own["walks"]["own"] != own["walks"]["target"] and len(own["engine_equals_walk_under"]) == 1, own
