"""The model-code records (tests/engines/model_code.py: each SGLang release's own capture request and decoder
forward loop, executed) replayed against today's table: every case the forward decided must still be the table's
answer at that release, so a table edit that contradicts a release's own code fails here, without the engine."""

from __future__ import annotations

import json

import pytest
from engines.capture import configs
from engines.model_code import agrees, table_taps

from eaglewire.engines.observed import records
from eaglewire.targets import FAMILIES, GENERIC, _family_of

CODE = list(records("model-code"))
NESTED = "eagle_config.eagle_aux_hidden_state_layer_ids"


def test_model_code_records_are_committed():
    """One per SGLang release on the ledger from 0.4.5 (a release whose code could not be imported here still has
    one: no family, every architecture under `not_run` with the reason)."""
    from engines.model_code import releases

    have = {r["engine"].split("==")[1] for r in CODE if r["engine"].startswith("sglang==")}
    assert have, "no model-code record (make model-code)"
    missing = [v for v in releases() if v not in have]
    assert not missing, f"no model-code record for sglang {missing}"


def _result(rec: dict, row: dict) -> dict:
    """The probe's result as the record keeps it: the ids the release's runner read (none where its entry reads
    none, or where the list is top-level: SGLang reads only the nested key), the forward's taps or the error."""
    reads = not any(e.endswith("(no ids read)") for e in rec["entry"])
    out: dict = {"ids": row["ids"] if reads and row["config_key"] == NESTED else None}
    if row["forward_taps"] is not None:
        out["forward_taps"] = row["forward_taps"]
    elif "set_eagle3_layers_to_capture" in (row["error"] or ""):
        out["error"] = row["error"]
    else:
        out["forward_error"] = row["error"]
    return out


@pytest.mark.parametrize("rec", CODE, ids=[r["file"] for r in CODE])
def test_model_code_replays_against_the_table(rec):
    release = rec["engine"].split("==")[1]
    wrong = []
    for values in rec["cases"]:
        row = dict(zip(rec["columns"], values, strict=True))
        family = _family_of([row["arch"]], "")
        family = family if family in FAMILIES else GENERIC
        config = dict(configs("sglang", row["ids"]))[row["config_key"]] if row["ids"] is not None else (
            configs("sglang", None)[0][1])  # fmt: skip
        table = table_taps(release, family, row["arch"], config, row["num_layers"])
        if agrees(_result(rec, row), table) is not True:
            wrong.append((row["arch"], row["ids"], row["config_key"], row["forward_taps"], row["error"],
                          table["taps"], table["failure"]))  # fmt: skip
    assert not wrong, wrong[:5]


def test_a_record_says_what_ran_and_what_did_not():
    for rec in CODE:
        assert rec["platform"] == "cpu" and "cpu" in rec["covers_platforms"]
        for fam in rec["families"]:
            assert fam["claims"] == fam["agree"] > 0, (rec["file"], fam)
        assert all(isinstance(why, str) and why for why in rec["not_run"].values()), rec["file"]
        json.dumps(rec)
