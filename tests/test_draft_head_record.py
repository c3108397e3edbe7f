"""The draft-head records (tests/real_engine/draft_head.py, vLLM's CPU build) replayed without an engine: the
drafter copies and prompts are rebuilt here (by sha256, the ones the engine ran), the walks are recomputed, and
where the engine served a copy its recorded counters equal the walk under the lm_head the release's row says its
draft scores with (rules/draft_weights.py, what `test --engine` walks) and no other; where the row says the release
refuses the copy, the engine refused it at load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_engine.cases import chain, walk_counters
from real_engine.draft_embedding import same_counters
from real_engine.draft_head import COPIES, K, walks, write_drafters
from real_engine.engine import NEW_TOKENS, PROMPT_LEN, files_sha256, prompts, sha256_json

from eaglewire import zoo
from eaglewire.targets import load_target

RECORDS = sorted((Path(__file__).parent / "real_engine" / "records").glob("vllm-*-cpu-draft-head.json"))
pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="needs the bundled zoo")


def test_the_record_exists():
    assert RECORDS, "no draft-head record (make test-real-engine writes it)"


@pytest.mark.parametrize("path", RECORDS, ids=[p.name for p in RECORDS])
def test_the_engine_scored_with_the_head_the_row_says(path, tmp_path):
    rec = json.loads(path.read_text())
    assert [r["copy"] for r in rec["rows"]] == list(COPIES) and rec["k"] == K
    target = load_target(zoo.target_dir())
    ids = prompts(target.tokenizer)
    assert sha256_json(ids) == rec["provenance"]["prompts_sha256"]
    items = chain(target, ids, PROMPT_LEN, NEW_TOKENS, steps=K)
    drafters = write_drafters(tmp_path)
    for row in rec["rows"]:
        assert files_sha256(drafters[row["copy"]]) == row["drafter_sha256"], row["copy"]
        now = walks(drafters[row["copy"]], items, rec["engine"], target=target)
        if now["row_says"] == "fails":
            assert row["stage"] == "load", (row["copy"], row["stage"], row["error"])
            continue
        assert row["stage"] is None and row["lossless"], row
        fed = [h for h, w in now["walks"].items() if same_counters(row["engine_counters"], walk_counters(w))]
        assert fed == [now["row_says"]], (row["copy"], now["row_says"], fed, row["engine_counters"])
