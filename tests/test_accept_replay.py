"""make test's replay of the real-engine tier's accept-length records (tests/real_engine/records/*-accept.json): for
every record whose inputs are in the checkout (the zoo target and drafters, the drafter copies the tier makes, the
prompts the record keeps), eaglewire's side is recomputed as the tier computes it (tests/real_engine/cases.py: one
chain, the served-taps walk of each copy) and compared with the ENGINE's recorded counters: greedy fp32, so the
drafts and the accepted tokens at every draft position must be the same integers. A change that breaks the walk,
the served taps or the copies fails here without an engine. docs/real-engine.md is the records and this
recomputation rendered."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from real_engine.cases import agreement, recorded_engine_counters, replay
from real_engine.summary import render

from eaglewire import zoo
from eaglewire.engines.observed import records

ROOT = Path(__file__).resolve().parents[1]
RECORDS = sorted((ROOT / "tests" / "real_engine" / "records").glob("*-accept.json"))
PAGE = "vllm-0.32.0-cpu-accept.json"  # the record docs/real-engine.md renders
pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="needs the bundled zoo")


@pytest.fixture(scope="module", params=RECORDS, ids=[p.name for p in RECORDS])
def replayed(request, tmp_path_factory) -> tuple[dict, dict]:
    record = json.loads(request.param.read_text())
    return record | {"file": request.param.name}, replay(record, tmp_path_factory.mktemp("replay"))


def test_an_accept_record_is_committed():
    assert RECORDS


def test_the_record_carries_its_provenance(replayed):
    """Engine and torch versions, platform and runner as the engine reported them, raw counters, the engine's
    log lines, sha256 of every input, the prompts themselves."""
    record, _ = replayed
    prov = record["provenance"]
    assert prov["engine"]["vllm"] == record["engine"].split("==")[1] and prov["engine"]["torch"]
    assert prov["engine"]["platform"]["device_type"] == record["platform"]
    assert prov["engine"]["runner"] == [record["runner"]] and prov["engine"]["runner_class"]
    assert prov["target_sha256"] and prov["prompts_sha256"] and prov["plain_tokens_sha256"]
    assert len(record["prompt_token_ids"]) == record["prompts"]
    for row in record["rows"]:
        assert row["engine_counters"] and row["drafter_sha256"] and row["spec_decode_log"], row["case"]


def test_the_inputs_are_the_ones_the_engine_ran(replayed):
    """The target, prompts and every drafter copy made here have the sha256 the engine's run recorded, and the
    greedy continuation walked here is vLLM's plain output: the replay runs on the engine's inputs."""
    _, got = replayed
    assert got["inputs"]["target"] and got["inputs"]["prompts"], got["inputs"]
    assert all(got["inputs"]["drafters"].values()), got["inputs"]["drafters"]
    assert got["plain_tokens"], "the target's greedy continuation here is not vLLM's plain output"


def test_the_walk_counts_what_the_engine_counted(replayed):
    """Greedy fp32: the same arithmetic on both sides (tests/real_engine/test_vllm_accept.py
    test_walk_predicts_the_engine), so drafts and accepted tokens per position are equal integers, and the
    served taps are the taps the engine captured. No tolerance."""
    record, got = replayed
    agree = agreement(record, got)
    wrong = [(a["case"], a["k"], a["engine"], a["eaglewire"]) for a in agree if not a["equal"]]
    assert not wrong, wrong
    assert len(agree) == len(record["rows"]) > 0
    print(
        f"{record['engine']}: {len(agree)} of {len(agree)} cases integer-equal, recomputed in {got['seconds']} s"
    )


_LOGGED = re.compile(r"Accepted: (\d+) tokens, Drafted: (\d+) tokens")


def test_the_engine_log_says_what_its_counters_say(replayed):
    """The engine's own SpecDecoding log lines, summed, are the raw counters the record keeps."""
    record, _ = replayed
    for row in record["rows"]:
        c, _ = recorded_engine_counters(row)
        logged = [
            tuple(map(int, m.groups())) for ln in row["spec_decode_log"] for m in [_LOGGED.search(ln)] if m
        ]
        assert sum(a for a, _ in logged) == c["num_accepted_tokens"] == sum(c["num_accepted_tokens_per_pos"])
        assert sum(d for _, d in logged) == c["num_draft_tokens"] == c["num_drafts"] * row["k"]


def test_real_engine_page_is_rendered_from_the_records(replayed):
    """docs/real-engine.md is the committed records and this recomputation rendered (never typed)."""
    record, got = replayed
    if record["file"] != PAGE:
        pytest.skip(f"docs/real-engine.md renders {PAGE}")
    ids = next(
        r for r in records() if r["engine"] == record["engine"] and r["platform"] == record["platform"]
    )
    ids = {k: v for k, v in ids.items() if k != "file"}
    assert (ROOT / "docs" / "real-engine.md").read_text() == render(record, ids, got)
