"""The committed record of what vLLM's CPU build did with each id variant (tests/real_engine) replayed against the
convention table: every variant must still resolve to the taps the engine captured, or fail at the stage it failed
at. A table change that contradicts a running engine fails here, without the engine."""

import pytest
from real_engine.variants import UNSET, Variant, write_variant

from eaglewire import zoo
from eaglewire.engines.observed import records
from eaglewire.jobs.check import check

RECORDS = records()


def test_a_record_is_committed():
    assert RECORDS and all(rec["variants"] for rec in RECORDS)


@pytest.mark.parametrize("rec", RECORDS, ids=[r["file"] for r in RECORDS])
def test_record_replays_against_the_table(rec, tmp_path):
    wrong = []
    for row in rec["variants"]:
        v = Variant(row["variant"], row["format"], row["top_level_ids"], row["eagle_config_ids"])
        verdicts = check(
            write_variant(v, tmp_path), zoo.target_dir(), [rec["engine"]], runner=rec["runner"]
        ).verdicts
        served = verdicts[0].served
        seen = row["engine"]
        if seen["stage"] is None:
            ok = served.failure is None and list(served.taps.indices) == seen["captured_taps"]
        else:
            ok = served.failure is not None and served.stage == seen["stage"]
        if not ok:
            wrong.append((v.name, seen, str(served.taps), served.stage, served.failure))
    assert not wrong, wrong


def test_unset_marker_round_trips():
    v = Variant("x", "eagle", UNSET, [1, 2, 3])
    cfg = v.edit(
        {"eagle_aux_hidden_state_layer_ids": [9], "eagle_config": {"eagle_aux_hidden_state_layer_ids": [8]}}
    )
    assert "eagle_aux_hidden_state_layer_ids" not in cfg and cfg["eagle_config"][
        "eagle_aux_hidden_state_layer_ids"
    ] == [1, 2, 3]


def test_real_engine_page_is_rendered_from_the_records():
    """docs/real-engine.md is the committed records rendered (numbers computed by the tier, never typed)."""
    import json
    from pathlib import Path

    from real_engine.summary import render

    root = Path(__file__).parent
    accept = json.loads((root / "real_engine" / "records" / "vllm-0.32.0-cpu-accept.json").read_text())
    (ids,) = [r for r in RECORDS if r["file"] == "vllm-0.32.0-cpu.json"]
    ids = {k: v for k, v in ids.items() if k != "file"}
    assert (root.parent / "docs" / "real-engine.md").read_text() == render(accept, ids)
