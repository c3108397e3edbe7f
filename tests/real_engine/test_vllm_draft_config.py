"""Draft config keys in vLLM's CPU build (draft_config.py): the record is written where the tier writes its results;
a copy `check` says fails is refused at load, and a copy that starts is lossless with counters equal to the walk
under the norm_before_residual reading the release's row says, not the other."""

from __future__ import annotations

import pytest

from .draft_config import run
from .engine import write_result

pytestmark = pytest.mark.real_engine


def test_the_engine_reads_the_draft_config_keys_its_rows_say(vllm_python, vllm_version, tmp_path):
    rec = run(vllm_python, tmp_path, f"vllm=={vllm_version}")
    write_result(f"vllm-{vllm_version}-cpu-draft-config.json", rec)
    for row in rec["rows"]:
        if row["row_says"] == "fails":
            assert row["stage"] == "load", row
            continue
        assert row["stage"] is None and row["lossless"], row
        assert row["engine_equals_walk_under"] == [row["row_says"]], row
