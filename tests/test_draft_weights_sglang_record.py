"""The SGLang draft-weights record (tests/sglang_engine/test_sglang_draft_weights.py, SGLang 0.5.23 on the CPU)
replayed without an engine: the drafter copies are rebuilt here (by sha256, the ones the engine ran); today's rows
say, for each, the embedding or lm_head SGLang 0.5.23 feeds its draft (what `test --engine` walks) or that it
refuses the copy; and the engine's recorded reading is within the tier's tolerance of the recorded walk under that
weight and of no other (where it served the copy), or it failed at load (where the row says it refuses)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_engine import draft_embedding, draft_head
from real_engine.engine import files_sha256

from eaglewire import zoo
from eaglewire.formats import read_drafter
from eaglewire.jobs.pair import served_embedding, served_head
from eaglewire.targets import load_target

RECORD = Path(__file__).parent / "sglang_engine" / "records" / "sglang-0.5.23-cpu-draft-weights.json"
pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="needs the bundled zoo")


def test_sglang_fed_what_todays_rows_say(tmp_path):
    rec = json.loads(RECORD.read_text())
    copies = {"own-embedding": draft_embedding.write_drafters(tmp_path / "e")["own-embedding"]}
    copies |= draft_head.write_drafters(tmp_path / "h")
    assert [r["copy"] for r in rec["rows"]] == list(copies)
    target = load_target(zoo.target_dir())
    for row in rec["rows"]:
        d = copies[row["copy"]]
        assert files_sha256(d) == row["drafter_sha256"], row["copy"]
        ckpt = read_drafter(d)
        said = (served_embedding if row["weight"] == "embedding" else served_head)(
            ckpt, target, rec["engine"]
        )[0]
        assert said == row["row_says"], (row["copy"], said, row["row_says"])
        if said == "fails":
            assert row["stage"] == "load" and row["measured"] is None, row
            continue
        m = row["measured"]["accept_length"]
        near = [h for h, w in row["walks"].items() if abs(w["accept_length"] - m) <= rec["tolerance"] * m]
        assert near == [said], (row["copy"], m, row["walks"])
