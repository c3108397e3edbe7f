"""A drafter whose context is shorter than the served positions, in vLLM's CPU build (draft_context.py): the
record is written where the tier writes its results; the engine's counters equal the batch walk under the release's
context gate, and check calls a problem exactly the copies whose acceptance collapses."""

from __future__ import annotations

import pytest

from eaglewire import zoo
from eaglewire.targets import load_target

from .cases import chain
from .draft_context import PROMPT_COUNT, K, run, walks, write_drafters
from .engine import NEW_TOKENS, PROMPT_LEN, prompts, write_result

pytestmark = pytest.mark.real_engine


def test_a_short_drafter_context_collapses_acceptance_where_check_says(vllm_python, vllm_version, tmp_path):
    engine = f"vllm=={vllm_version}"
    rec = run(vllm_python, tmp_path, engine)
    write_result(f"vllm-{vllm_version}-cpu-draft-context.json", rec)
    full = next(
        r for r in rec["rows"] if r["max_position_embeddings"] == rec["target_max_position_embeddings"]
    )
    target = load_target(zoo.target_dir())
    items = chain(target, prompts(target.tokenizer, PROMPT_COUNT), PROMPT_LEN, NEW_TOKENS, steps=K)
    drafters = write_drafters(tmp_path / "replay")
    for row in rec["rows"]:
        assert row["stage"] is None and row["lossless"], row
        now = walks(drafters[row["max_position_embeddings"]], items, engine)
        counted = {
            "num_drafts": row["num_drafts"],
            "num_accepted_tokens_per_pos": row["num_accepted_tokens_per_pos"],
        }
        assert counted == now["counters"], (row["max_position_embeddings"], now)
        flagged = any(f["severity"] == "problem" for f in row["check"])
        collapsed = row["accept_length"] < 0.9 * full["accept_length"]
        assert flagged == collapsed, row
