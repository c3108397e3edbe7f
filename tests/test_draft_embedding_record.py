"""The draft-embedding record (tests/real_engine/draft_embedding.py, vLLM's CPU build) replayed without an engine:
the drafter copies and prompts are rebuilt here (by sha256, the ones the engine ran), both walks are recomputed,
and the ENGINE's recorded counters equal the walk under the embedding the release's row says its draft computes
with (rules/draft_weights.py, what `test --engine` walks), and differ from the walk under the other where the copy
tells them apart."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_engine.cases import chain
from real_engine.draft_embedding import COPIES, K, same_counters, walks, write_drafters
from real_engine.engine import NEW_TOKENS, PROMPT_LEN, files_sha256, prompts, sha256_json

from eaglewire import zoo
from eaglewire.targets import load_target

RECORDS = sorted((Path(__file__).parent / "real_engine" / "records").glob("vllm-*-cpu-draft-embedding.json"))
pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="needs the bundled zoo")


def test_the_record_exists():
    assert RECORDS, "no draft-embedding record (make test-real-engine writes it)"


@pytest.mark.parametrize("path", RECORDS, ids=[p.name for p in RECORDS])
def test_the_engine_fed_the_embedding_the_row_says(path, tmp_path):
    rec = json.loads(path.read_text())
    assert [r["copy"] for r in rec["rows"]] == list(COPIES) and rec["k"] == K
    target = load_target(zoo.target_dir())
    ids = prompts(target.tokenizer)
    assert sha256_json(ids) == rec["provenance"]["prompts_sha256"]
    items = chain(target, ids, PROMPT_LEN, NEW_TOKENS, steps=K)
    drafters = write_drafters(tmp_path)
    for row in rec["rows"]:
        assert row["stage"] is None and row["lossless"], row
        assert files_sha256(drafters[row["copy"]]) == row["drafter_sha256"], row["copy"]
        now = walks(drafters[row["copy"]], items, rec["engine"])
        fed = [h for h, w in now["walks"].items() if same_counters(row["engine_counters"], w)]
        assert now["row_says"] in fed, (row["copy"], now, row["engine_counters"])
        if row["copy"] == "own-embedding":
            assert fed == [now["row_says"]], "the copy no longer tells the two embeddings apart"
