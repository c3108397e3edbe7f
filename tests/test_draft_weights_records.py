"""The draft-weight records (tests/real_engine/draft_embedding.py and draft_head.py, vLLM's CPU build) replayed
without an engine: the drafter copies and prompts are rebuilt here (by sha256, the ones the engine ran), the walks
are recomputed, and where the engine served a copy its recorded counters equal the walk under the embedding or
lm_head the release's row says its draft computes with (rules/draft_weights.py, what `test --engine` walks), and
no other where the copy tells them apart; where the row says the release refuses the copy, it failed at load."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_engine import draft_embedding, draft_head
from real_engine.cases import chain, walk_counters
from real_engine.draft_embedding import same_counters
from real_engine.engine import NEW_TOKENS, PROMPT_LEN, files_sha256, prompts, sha256_json

from eaglewire import zoo
from eaglewire.targets import load_target

ROOT = Path(__file__).parent / "real_engine" / "records"
KINDS = {"draft-embedding": draft_embedding, "draft-head": draft_head}
RECORDS = [(kind, p) for kind in KINDS for p in sorted(ROOT.glob(f"vllm-*-cpu-{kind}.json"))]
pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="needs the bundled zoo")


@pytest.mark.parametrize("kind", KINDS)
def test_a_record_of_each_kind_exists(kind):
    assert any(k == kind for k, _ in RECORDS), f"no {kind} record (make test-real-engine writes it)"


@pytest.mark.parametrize(("kind", "path"), RECORDS, ids=[p.name for _, p in RECORDS])
def test_the_engine_fed_what_the_row_says(kind, path, tmp_path):
    mod = KINDS[kind]
    rec = json.loads(path.read_text())
    assert [r["copy"] for r in rec["rows"]] == list(mod.COPIES) and rec["k"] == mod.K
    target = load_target(zoo.target_dir())
    ids = prompts(target.tokenizer)
    assert sha256_json(ids) == rec["provenance"]["prompts_sha256"]
    items = chain(target, ids, PROMPT_LEN, NEW_TOKENS, steps=mod.K)
    drafters = mod.write_drafters(tmp_path)
    for row in rec["rows"]:
        assert files_sha256(drafters[row["copy"]]) == row["drafter_sha256"], row["copy"]
        now = mod.walks(drafters[row["copy"]], items, rec["engine"])
        if now["row_says"] == "fails":
            assert row["stage"] == "load", (row["copy"], row["stage"], row["error"])
            continue
        assert row["stage"] is None and row["lossless"], row
        walks = {h: w if isinstance(w, dict) else walk_counters(w) for h, w in now["walks"].items()}
        fed = [h for h, w in walks.items() if same_counters(row["engine_counters"], w)]
        assert now["row_says"] in fed, (row["copy"], now["row_says"], fed, row["engine_counters"])
        if len({json.dumps(w, sort_keys=True) for w in walks.values()}) == len(walks):
            assert fed == [now["row_says"]], f"{row['copy']}: the engine's counters fit another walk too"
