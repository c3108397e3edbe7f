"""make test's replay of the SGLang accept tier's committed record (tests/sglang_engine/records/*-accept.json):
eaglewire's side recomputed here without SGLang (the bf16 pairs fed the taps `check` names for the record's release, the
greedy continuation, the walk: tests/sglang_engine/cases.py, what the tier runs) and compared with SGLang's own
recorded readings (completion_tokens / spec_verify_ct, 1 + correct drafts / spec_verify_ct, verify count). A change
that breaks the walk, the served taps or the SGLang reading fails here without an engine."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from real_engine.engine import decode_prompts, files_sha256, prompts, sha256_json
from sglang_engine.cases import DRAFTERS, disagreements, own_chain, pairs, sglang_reading, walks
from sglang_engine.engine import PROMPT_LEN, PROMPTS

from eaglewire import zoo

ROOT = Path(__file__).resolve().parents[1]
RECORDS = sorted((ROOT / "tests" / "sglang_engine" / "records").glob("sglang-*-accept.json"))
pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="needs the bundled zoo")


@pytest.fixture(scope="module", params=RECORDS, ids=[p.name for p in RECORDS])
def replayed(request) -> tuple[dict, dict, dict]:
    record = json.loads(request.param.read_text())
    ps = pairs(record["dtype"], record["engine"])
    tok = ps["default"].target.tokenizer
    ids = (
        decode_prompts(record["prompt_token_ids"])
        if "prompt_token_ids" in record
        else prompts(tok, PROMPTS, PROMPT_LEN)
    )
    items = own_chain(ps["default"].target, ids)
    # a drafter the release cannot serve (`not_served`: 0.5.21 refuses h0) has no pair and no rows
    return record, ps, {"ids": ids, "walks": {n: walks(ps[n], items) for n in DRAFTERS if n in ps}}


def test_a_record_is_committed():
    assert RECORDS


def test_the_inputs_are_the_ones_sglang_ran(replayed):
    """Target, drafters and prompts have the sha256 the run recorded: the replay walks SGLang's inputs."""
    record, _, got = replayed
    prov = record["provenance"]
    assert sha256_json(got["ids"]) == prov["prompts_sha256"]
    assert files_sha256(zoo.target_dir()) == prov["target_sha256"]
    assert set(prov["drafter_sha256"]) | set(record.get("not_served") or {}) == set(DRAFTERS)
    for n in prov["drafter_sha256"]:
        assert files_sha256(zoo.drafter_dir(n)) == prov["drafter_sha256"][n], n


def test_sglang_captured_the_taps_eaglewire_serves(replayed):
    record, ps, _ = replayed
    for row in record["rows"]:
        wiring = ps[row["case"]].wiring
        assert (str(wiring), list(wiring.indices)) == (row["eaglewire_served_taps"], row["engine_taps"]), row


def test_the_recomputed_walk_agrees_with_sglang(replayed):
    """SGLang's recorded readings against the walk recomputed here, within the tier's bound (its reason is in the
    record: bf16 on both sides, different kernels)."""
    record, _, got = replayed
    wrong = []
    for row in record["rows"]:
        measured = {"accept_length": row["measured_accept_length"],
                    "accept_length_drafts": row["measured_accept_length_drafts"],
                    "verify_ct": row["verify_ct"]["measured"]}  # fmt: skip
        wrong += disagreements(row["case"], row["k"], measured, got["walks"][row["case"]][row["k"] - 1])
    assert not wrong, wrong


def test_the_recomputed_walk_is_the_recorded_prediction(replayed):
    """The walk here gives the prediction the tier recorded, within BF16_BOUND: bf16 sums round differently
    across CPU kernels (the machine that recorded it reproduced it exactly; another x86 host with the same ISA
    flags moved default K=1 by 2 of 296 verifies, and one whose torch runs bf16 matmuls on AMX tiles moved default
    K=3 by 2 of 193), so a near-tie can flip a token. The bound is the tier's own for kernels that differ (its
    record's `tolerance`). The exact integer replay is the vLLM tier's (fp32: tests/test_accept_replay.py)."""
    record, _, got = replayed
    wrong = []
    for row in record["rows"]:
        w = got["walks"][row["case"]][row["k"] - 1]
        pairs_ = ((w.drafts, row["verify_ct"]["predicted"]), (sglang_reading(w), row["predicted_accept_length"]),
                  (w.tau, row["walk_accept_length"]))  # fmt: skip
        if any(abs(a - b) > BF16_BOUND * b for a, b in pairs_):
            wrong.append((row["case"], row["k"], pairs_))
    assert not wrong, wrong


BF16_BOUND = 0.02  # the SGLang tier's tolerance for bf16 on different kernels (its record's `tolerance`)


def test_the_sglang_page_is_the_records_rendered(replayed):
    """docs/sglang-engine.md is the committed records and this recomputation rendered (never typed)."""
    from sglang_engine.summary import load, render

    record, _, _ = replayed
    accept, trees, probe, ids = load()
    if record != accept:
        pytest.skip("docs/sglang-engine.md renders the 0.5.23 record")
    page = render(
        accept, trees, probe, ids, None
    )  # the recorded predictions: the page is the same on any CPU
    assert (ROOT / "docs" / "sglang-engine.md").read_text() == page


def test_the_readme_section_is_the_records_rendered():
    """README.md's section on the case in SGLang is the records rendered (tests/sglang_engine/summary.py --readme)."""
    from sglang_engine.summary import load, readme_section

    accept, _, probe, ids = load()
    assert readme_section(accept, probe, ids) in (ROOT / "README.md").read_text()
