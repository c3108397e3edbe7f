"""The draft-layers record (tests/real_engine/draft_layers.py, vLLM's CPU build) replayed without an engine: the
copies and prompts are rebuilt (by sha256, the ones the engine ran), the walk of the layer the weights hold is
recomputed, and `check` at the record's release still says the configured layers beyond it go unloaded; the
engine started, was lossless and drafted otherwise than that walk; the row's message gives the accept lengths the
record holds, and its evidence names the record at that release only."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from packaging.version import Version
from real_engine import draft_layers
from real_engine.cases import chain
from real_engine.draft_embedding import same_counters
from real_engine.engine import NEW_TOKENS, PROMPT_LEN, files_sha256, prompts, sha256_json

from eaglewire import zoo
from eaglewire.engines import structure
from eaglewire.targets import load_target

ROOT = Path(__file__).parent / "real_engine" / "records"
RECORDS = sorted(ROOT.glob("vllm-*-cpu-draft-layers.json"))
pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="needs the bundled zoo")


def accept_length(counters: dict) -> float:
    """Tokens per verify, the bonus token included."""
    return 1 + sum(counters["num_accepted_tokens_per_pos"]) / counters["num_drafts"]


def test_a_record_exists():
    assert RECORDS, "no draft-layers record (make test-real-engine writes it)"


@pytest.mark.parametrize("path", RECORDS, ids=[p.name for p in RECORDS])
def test_the_engine_drafts_otherwise_than_the_layers_held(path, tmp_path):
    rec = json.loads(path.read_text())
    assert [r["copy"] for r in rec["rows"]] == list(draft_layers.COPIES) and rec["k"] == draft_layers.K
    target = load_target(zoo.target_dir())
    ids = prompts(target.tokenizer)
    assert sha256_json(ids) == rec["provenance"]["prompts_sha256"]
    items = chain(target, ids, PROMPT_LEN, NEW_TOKENS, steps=draft_layers.K)
    drafters = draft_layers.write_drafters(tmp_path)
    for row in rec["rows"]:
        assert files_sha256(drafters[row["copy"]]) == row["drafter_sha256"], row["copy"]
        now = draft_layers.walks(drafters[row["copy"]], items, rec["engine"])
        assert now["walks"] == row["walks"], row["copy"]
        assert now["row_says"] == "unloaded" and row["stage"] is None and row["lossless"], row
        assert not same_counters(row["engine_counters"], now["walks"]["layers-held"]), row["copy"]


def test_the_row_says_what_the_record_holds():
    (path,) = [p for p in RECORDS if "0.32.0" in p.name]
    rows = {r["copy"]: r for r in json.loads(path.read_text())["rows"]}
    two, all_ = rows["config-2-layers"], rows["config-target-layers"]
    said = (f"with 2 layers configured {accept_length(two['engine_counters']):.2f} tokens per verify against the "
            f"trained {accept_length(two['walks']['layers-held']):.2f}, with 8 layers "
            f"{accept_length(all_['engine_counters']):.2f}")  # fmt: skip
    assert said in structure.UNLOADED_SEEN
    assert path.name in structure.UNLOADED_OBSERVED
    row = structure.draft_layers_unloaded
    assert (
        row.evidence(structure.Said("m", structure.UNLOADED_OBSERVED), Version("0.32.0"))["level"] == "engine"
    )
    assert (
        row.evidence(structure.Said("m", structure.UNLOADED_OBSERVED), Version("0.33.0"))["level"] == "read"
    )
