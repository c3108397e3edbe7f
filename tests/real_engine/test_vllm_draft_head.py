"""Drafters whose lm_head the release may replace or refuse, in vLLM's CPU build (draft_head.py): the record is
written where the tier writes its results; where the engine served a copy, its counters are the walk under the head
the release's row says its draft scores with (`test --engine`), not under the other; where the row says the release
refuses the copy, the engine refused it at load."""

from __future__ import annotations

import pytest

from .draft_head import run
from .engine import write_result

pytestmark = pytest.mark.real_engine


def test_the_engine_scores_with_the_head_its_row_says(vllm_python, vllm_version, tmp_path):
    rec = run(vllm_python, tmp_path, f"vllm=={vllm_version}")
    write_result(f"vllm-{vllm_version}-cpu-draft-head.json", rec)
    for row in rec["rows"]:
        if row["row_says"] == "fails":
            assert row["stage"] == "load", row
            continue
        assert row["stage"] is None and row["lossless"], row
        assert row["engine_equals_walk_under"] == [row["row_says"]], row
