"""The model-code records (tests/engines/model_code.py: each SGLang and vLLM release's own capture request and
decoder forward loop, executed) replayed against today's table: every case the forward decided must still be the
table's answer at that release and runner, so a table edit that contradicts a release's own code fails here,
without the engine."""

from __future__ import annotations

import pytest
from engines.capture import configs
from engines.model_code import ENTRY_FAILS, agrees, table_taps

from eaglewire.engines.observed import records
from eaglewire.targets import FAMILIES, GENERIC, _family_of

CODE = list(records("model-code"))


def _result(engine: str, row: dict) -> dict:
    """The probe's result as the record keeps it: the ids the release's runner read, the forward's taps or the
    engine's own error."""
    out: dict = {"ids" if engine == "sglang" else "from_config": row["ids_read"]}
    if row["forward_taps"] is not None:
        out["forward_taps"] = row["forward_taps"]
    elif any(w in (row["error"] or "") for w in ENTRY_FAILS):
        out["error"] = row["error"]
    else:
        out["forward_error"] = row["error"]
    return out


@pytest.mark.parametrize("rec", CODE, ids=[r["file"] for r in CODE])
def test_model_code_replays_against_the_table(rec):
    engine, release = rec["engine"].split("==")
    wrong = []
    for values in rec["cases"]:
        row = dict(zip(rec["columns"], values, strict=True))
        family = _family_of([row["arch"]], "")
        family = family if family in FAMILIES else GENERIC
        config = dict(configs(engine, row["ids"]))[row["config_key"]]
        table = table_taps(engine, release, family, row["arch"], config, row["num_layers"], row["runner"])
        if agrees(_result(engine, row), table, engine) is not True:
            wrong.append((row["arch"], row["runner"], row["ids"], row["config_key"], row["forward_taps"],
                          row["error"], table["taps"], table["failure"]))  # fmt: skip
    assert not wrong, wrong[:5]


def test_a_record_says_what_it_covers_and_what_did_not_run():
    for rec in CODE:
        assert rec["platform"] == "cpu" and rec["level"] == "model-code", rec["file"]
        for fam in rec["families"]:
            assert fam["claims"] == fam["agree"] > 0, (rec["file"], fam)
        ran = {f["family"] for f in rec["families"]}
        for item in rec["covers"]:
            assert item["platform"] in ("cpu", "cuda") and set(item["families"]) <= ran, (rec["file"], item)
            if rec["engine"].startswith("vllm=="):
                assert item["platform"] == "cuda", rec["file"]  # the CPU build runs its own runner (RUNS_ON)
        assert all(isinstance(why, str) and why for why in rec["not_run"].values()), rec["file"]
