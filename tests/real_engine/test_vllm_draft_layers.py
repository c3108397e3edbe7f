"""A config declaring more decoder layers than the weights hold, in vLLM's CPU build (draft_layers.py): the record
is written where the tier writes its results; where `check` says the release leaves the extra layers unloaded, the
engine starts with no error, is lossless, and its counters are not the walk of the layer the weights hold."""

from __future__ import annotations

import pytest

from .draft_layers import run
from .engine import write_result

pytestmark = pytest.mark.real_engine


def test_unloaded_draft_layers_start_silently_and_draft_otherwise(vllm_python, vllm_version, tmp_path):
    rec = run(vllm_python, tmp_path, f"vllm=={vllm_version}")
    write_result(f"vllm-{vllm_version}-cpu-draft-layers.json", rec)
    for row in rec["rows"]:
        assert row["stage"] is None and row["lossless"], row
        held = row["engine_equals_walk_under"] == ["layers-held"]
        assert held == (row["row_says"] == "held"), row
