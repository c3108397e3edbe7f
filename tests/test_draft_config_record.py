"""The draft-config record (tests/real_engine/draft_config.py, vLLM's CPU build) replayed without an engine: the
copies and prompts are rebuilt (by sha256, the ones the engine ran), the walks recomputed; where `check` at the
record's release says a copy fails, the engine refused it at load; elsewhere its counters equal the walk under
the norm_before_residual reading the release's row says, and no other. The rows that rest on it name the record."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version
from real_engine import draft_config
from real_engine.cases import chain
from real_engine.draft_embedding import same_counters
from real_engine.engine import NEW_TOKENS, PROMPT_LEN, files_sha256, prompts, sha256_json

from eaglewire import zoo
from eaglewire.engines import structure
from eaglewire.engines.vllm import structure as vllm_structure
from eaglewire.targets import load_target

ROOT = Path(__file__).parent / "real_engine" / "records"
RECORDS = sorted(ROOT.glob("vllm-*-cpu-draft-config.json"))
pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="needs the bundled zoo")


def test_a_record_exists():
    assert RECORDS, "no draft-config record (make test-real-engine writes it)"


@pytest.mark.parametrize("path", RECORDS, ids=[p.name for p in RECORDS])
def test_the_engine_read_the_keys_the_rows_say(path, tmp_path):
    rec = json.loads(path.read_text())
    assert [r["copy"] for r in rec["rows"]] == list(draft_config.COPIES) and rec["k"] == draft_config.K
    target = load_target(zoo.target_dir())
    ids = prompts(target.tokenizer)
    assert sha256_json(ids) == rec["provenance"]["prompts_sha256"]
    items = chain(target, ids, PROMPT_LEN, NEW_TOKENS, steps=draft_config.K)
    drafters = draft_config.write_drafters(tmp_path)
    for row in rec["rows"]:
        assert files_sha256(drafters[row["copy"]]) == row["drafter_sha256"], row["copy"]
        now = draft_config.walks(drafters[row["copy"]], items, rec["engine"])
        assert now["row_says"] == row["row_says"], (row["copy"], now["row_says"], row["row_says"])
        if now["row_says"] == "fails":
            assert row["stage"] == "load" and "Eagle3LlamaModel" in row["error"], (row["stage"], row["error"])
            continue
        assert now["walks"] == row["walks"] and row["stage"] is None and row["lossless"], row["copy"]
        fed = [h for h, w in now["walks"].items() if same_counters(row["engine_counters"], w)]
        assert fed == [now["row_says"]], (row["copy"], fed)


def test_the_rows_name_the_record_at_its_release_only():
    (path,) = [p for p in RECORDS if "0.32.0" in p.name]
    for row, said in ((structure.architectures_missing, structure.ARCHITECTURES_OBSERVED),
                      (vllm_structure.norm_before_residual, vllm_structure.NORM_BEFORE_RESIDUAL_OBSERVED)):  # fmt: skip
        assert path.name in said
        assert row.evidence(structure.Said("m", said), Version("0.32.0"))["level"] == "engine"
        assert row.evidence(structure.Said("m", said), Version("0.31.0"))["level"] == "read"
