"""SGLang draft-settings records (tests/engines/draft_settings_sglang.py) against lint's rows: what each SGLang
release's own ServerArgs, worker and loader code gave the draft is what lint says that release does.

Per record and case the engine's answer is the quantization config the release's loader passes to the draft model
class, the draft's context length (or the worker's refusal), and the speculative sizes its ServerArgs settled on.
The launch is replayed through lint as the `sglang.launch_server` command a user types, beside the same config
files, so every lint rule about the draft is recomputed, not copied.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path

import pytest
from engines.draft_settings_sglang import FIRST, OUT, QUANT, write_sglang_models
from engines.model_code import releases
from packaging.version import Version

from eaglewire.jobs.lint import lint

RECORDS = sorted(OUT.glob("sglang-*.json"))
FLAGS = {"model_path": "--model-path", "speculative_algorithm": "--speculative-algorithm",
         "speculative_draft_model_path": "--speculative-draft-model-path", "quantization": "--quantization",
         "speculative_draft_model_quantization": "--speculative-draft-model-quantization", "dtype": "--dtype",
         "context_length": "--context-length", "speculative_num_steps": "--speculative-num-steps",
         "speculative_eagle_topk": "--speculative-eagle-topk",
         "speculative_num_draft_tokens": "--speculative-num-draft-tokens"}  # fmt: skip
QUANT_RULES = {"sglang.draft_quantization_inherited", "sglang.draft_quantization_inherited_unknown_drafter"}


def _release(path: Path) -> str:
    return path.name[len("sglang-") : -len(".json")]


@cache
def _record(path: Path) -> dict:
    return json.loads(path.read_text())


def _cases(name: str):
    for path in RECORDS:
        for case in _record(path)["cases"]:
            if case["name"] == name:
                yield _release(path), case


@pytest.fixture(scope="module")
def models(tmp_path_factory) -> Path:
    return write_sglang_models(tmp_path_factory.mktemp("draft-settings-sglang"))


def _argv(models: Path, case: dict) -> list[str]:
    """The case's ServerArgs as the launch command a user types (its environment in front)."""
    argv = [f"{k}={v}" for k, v in case["env"].items()] + ["python", "-m", "sglang.launch_server"]
    for key, value in case["server_args_given"].items():
        if key in FLAGS:
            path = key in ("model_path", "speculative_draft_model_path")
            argv += [FLAGS[key], str(models / value) if path else str(value)]
    return argv


def _rules(models: Path, release: str, case: dict) -> dict[str, set[str]]:
    report = lint(_argv(models, case), engine_version=release)
    out: dict[str, set[str]] = {}
    for change in report.changes:
        out.setdefault(change.rule, set()).add(change.severity)
    return out


def _quant(case: dict) -> str | None:
    assert case["error"] is None, case["error"]
    assert "quant_config_error" not in case["draft"], case["draft"]
    return (case["draft"]["quant_config"] or {}).get("name")


def test_every_release_from_the_first_has_a_record():
    wanted = [v for v in releases("sglang") if Version(v) >= Version(FIRST)]
    have = {_release(p) for p in RECORDS}
    assert have, "no SGLang draft-settings record (cd tests && python -m engines.draft_settings_sglang ...)"
    assert [v for v in wanted if v not in have] == []


@pytest.mark.parametrize("path", RECORDS, ids=[_release(p) for p in RECORDS])
def test_a_record_is_the_release_it_names_and_builds_drafts(path):
    rec = _record(path)
    assert rec["engine"] == f"sglang=={_release(path)}" == f"sglang=={rec['provenance']['sglang']}"
    # every refusal is one the release makes (a flag it lacks, a target checkpoint it refuses, the auto-choice
    # crash of 0.4.5.x, a shorter drafter context): never an import or a missing stand-in of this machine's venv
    for case in rec["cases"]:
        error = case["error"]
        if error is None:
            continue
        words = f"{error['type']}: {error['message']}"
        known = ("unexpected keyword argument" in words, "quantization method" in words,
                 "decrypted_config_file" in words and case["name"] == "eagle3/no step flags",
                 error["type"] == "ValueError" and "context_length" in words and case["name"].endswith("2048"))  # fmt: skip
        assert any(known), (case["name"], error)
    assert sum(c["error"] is None for c in rec["cases"]) >= len(rec["cases"]) - 5
    assert rec["context_passed"] in ("server_args", "keyword"), rec["context_passed"]


def test_the_quantization_flag_reaches_the_eagle3_head_where_lint_says(models):
    """`--quantization fp8` beside an unquantized EAGLE-3 drafter: the release's loader builds the head for FP8
    exactly where lint raises the inherited-quantization problem."""
    seen = 0
    for release, case in _cases("eagle3/--quantization fp8"):
        taken = _quant(case) is not None
        fired = QUANT_RULES & set(_rules(models, release, case))
        assert bool(fired) == taken, (release, case["draft"], fired)
        seen += 1
    assert seen == len(RECORDS)


def test_draft_unquant_is_refused_or_keeps_the_head_unquantized_as_lint_says(models):
    seen = 0
    for release, case in _cases("eagle3/--quantization fp8, draft unquant"):
        rules = _rules(models, release, case)
        if case["error"] is not None:  # argparse / ServerArgs has no such field in this release
            assert "unexpected keyword" in case["error"]["message"], case["error"]
            assert "sglang.flag_not_in_release" in rules, (release, rules)
        else:
            assert _quant(case) is None, (release, case["draft"])
            assert not (QUANT_RULES | {"sglang.flag_not_in_release"}) & set(rules), (release, rules)
        seen += 1
    assert seen == len(RECORDS)


@pytest.mark.parametrize("scheme", list(QUANT))
def test_a_quantized_target_checkpoint_leaves_the_eagle3_head_unquantized(models, scheme):
    """A pre-quantized target (no `--quantization`): SGLang's draft reads its own config's method, so the head is
    built unquantized at every release, and lint raises no quantization rule."""
    for release, case in _cases(f"eagle3/target-{scheme}"):
        if case["error"] is not None:  # the release refuses the target's own checkpoint: no draft to speak of
            assert case["error"]["stage"] in ("server_args", "target"), case["error"]
            assert "quantization method" in case["error"]["message"], case["error"]
            continue
        assert _quant(case) is None, (release, scheme, case["draft"])
        assert not QUANT_RULES & set(_rules(models, release, case)), (release, scheme)


@pytest.mark.parametrize(
    "name",
    ["eagle3/drafter context 2048", "eagle3/drafter context 2048, override allowed",
     "eagle3/drafter context 2048, --context-length 2048"],
)  # fmt: skip
def test_a_shorter_drafter_context_is_refused_or_raised_where_lint_says(models, name):
    """A drafter of context 2048 beside a target of 8192: the draft worker refuses it (ValueError), runs it at the
    target's 8192 (its RoPE past its trained length), or at the 2048 given; lint's two context rows say which."""
    seen = 0
    for release, case in _cases(name):
        rules = _rules(models, release, case)
        refused = case["error"] is not None
        if refused:
            assert case["error"]["stage"] == "draft" and case["error"]["type"] == "ValueError", case["error"]
        raised = not refused and case["draft"]["context_len"] > 2048
        assert ("sglang.draft_context_length" in rules) == refused, (release, name, rules)
        assert ("sglang.draft_context_length_raised" in rules) == raised, (release, name, rules)
        seen += 1
    assert seen == len(RECORDS)


def test_the_auto_chosen_speculative_sizes_are_what_lint_says(models):
    """No step flags with a Llama target: the sizes the release's ServerArgs chose are the ones lint's auto-choice
    rows give, and where it fails instead lint says the launch fails."""
    seen = 0
    for release, case in _cases("eagle3/no step flags"):
        report = lint(_argv(models, case), engine_version=release)
        if case["error"] is not None:
            assert not report.starts, (release, case["error"], [c.rule for c in report.changes])
            continue
        sa = case["server_args"]
        chosen = (
            sa["speculative_num_steps"],
            sa["speculative_eagle_topk"],
            sa["speculative_num_draft_tokens"],
        )
        said = (report.effective.num_steps, report.effective.topk, report.effective.num_draft_tokens)
        assert said == chosen, (release, said, chosen)
        seen += 1
    assert seen >= len(RECORDS) - 5


def test_the_page_is_the_records_rendered():
    """docs/draft-settings-sglang.md is the records rendered (`make docs`), never typed."""
    from engines.draft_settings_sglang import render

    page = Path(__file__).resolve().parents[1] / "docs" / "draft-settings-sglang.md"
    assert page.read_text() == render(), "docs/draft-settings-sglang.md is stale: run `make docs`"


def test_the_draft_rotary_table_is_raised_from_the_release_lint_says():
    """A shorter drafter run at the target's length: its config's max_position_embeddings (the rotary table's
    rows) stays the drafter's before ROTARY_RAISED and is raised with the context from there (lint's message
    splits there)."""
    from eaglewire.engines.sglang.draft import ROTARY_RAISED

    seen = 0
    for name in ("eagle3/drafter context 2048", "eagle3/drafter context 2048, override allowed"):
        for release, case in _cases(name):
            if case["error"] is not None:
                continue
            assert case["draft"]["context_len"] == 8192, (release, case["draft"])
            kept = case["draft"]["max_position_embeddings"] == 2048
            assert kept == (Version(release) < ROTARY_RAISED), (release, case["draft"])
            seen += 1
    assert seen >= len(RECORDS)
