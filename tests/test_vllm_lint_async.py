"""vLLM's asynchronous scheduling beside speculative decoding, replayed by lint (engines/vllm/flags.py rows
vllm.async_scheduling_*; engines/vllm/draft.py async_scheduling): --async-scheduling refused with any speculative
config before 0.11.1 (vllm#24799), and with disable_padded_drafter_batch from it (from 0.33.0 on the V1 runner only);
from 0.14.0 (vllm#31998) the key turns the default asynchronous scheduling off with only a log line, and the drafter
skipped past its context then verifies no drafts instead of zeros (0.14.0-0.19.x). Real launch commands, the library
call and the command line; each case beside the fixed launch and the releases outside the row's range."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from eaglewire.jobs.lint import lint
from eaglewire.rules.launch import PROBLEM, WARNING, LintReport

SPEC = {"method": "eagle3", "model": "d", "num_speculative_tokens": 3}
PADDED = {**SPEC, "disable_padded_drafter_batch": True}
REFUSED_ANY = "vllm.async_scheduling_speculative"
REFUSED = "vllm.async_scheduling_padded_drafter"
REFUSED_V1 = "vllm.async_scheduling_padded_drafter_v1"
OFF = "vllm.async_scheduling_off_padded_drafter"
ASYNC_RULES = (REFUSED_ANY, REFUSED, REFUSED_V1, OFF)
SHORT_DRAFTER = {"architectures": ["LlamaForCausalLMEagle3"], "max_position_embeddings": 2048}


def vllm(spec: dict, *extra: str, env: tuple[str, ...] = ()) -> list[str]:
    return [*env, "vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--speculative-config", json.dumps(spec),
            *extra]  # fmt: skip


def fired(report: LintReport) -> dict[str, str]:
    """The async rows that fired, with their severity."""
    return {c.rule: c.severity for c in report.changes if c.rule in ASYNC_RULES}


def fixed(report: LintReport, version: str) -> LintReport:
    """The fixed launch: --async-scheduling removed, and it lints without a problem."""
    assert report.fixed_argv is not None, report.notes
    assert "--async-scheduling" not in report.fixed_argv
    again = lint(report.fixed_argv, engine_version=version)
    assert not again.has_problem, [c.message for c in again.problems]
    return again


# ---- 0.10.0-0.11.0: any speculative config --------------------------------------------------------------------


@pytest.mark.parametrize("version", ["0.10.0", "0.10.2", "0.11.0", "0.11.0.post2"])
def test_async_scheduling_with_any_speculative_config_is_refused_before_0_11_1(version):
    report = lint(vllm(SPEC, "--async-scheduling"), engine_version=version)
    assert fired(report) == {REFUSED_ANY: PROBLEM}
    (change,) = [c for c in report.changes if c.rule == REFUSED_ANY]
    assert "Currently, speculative decoding is not supported with async scheduling." in change.message
    assert not report.starts and report.exit_code == 1 and report.failing[REFUSED_ANY] == "args"
    assert fired(fixed(report, version)) == {}
    # the flag is a switch argparse resolves like any other: its prefix, and the last of the pair wins
    assert fired(lint(vllm(SPEC, "--async-sched"), engine_version=version)) == {REFUSED_ANY: PROBLEM}
    assert (
        fired(lint(vllm(SPEC, "--async-scheduling", "--no-async-scheduling"), engine_version=version)) == {}
    )
    assert fired(lint(vllm(SPEC), engine_version=version)) == {}


def test_eagle_with_async_scheduling_starts_from_0_11_1_and_the_flag_is_unknown_before_0_10_0():
    report = lint(vllm(SPEC, "--async-scheduling"), engine_version="0.11.1")
    assert fired(report) == {} and not report.has_problem
    old = lint(vllm(SPEC, "--async-scheduling"), engine_version="0.9.2")
    assert fired(old) == {} and [c.rule for c in old.problems] == ["vllm.flag_unknown"]


# ---- 0.11.1-0.32.0 (every runner), 0.33.0 (V1): disable_padded_drafter_batch -----------------------------------


@pytest.mark.parametrize(
    ("version", "said"),
    [("0.11.1", "disable_padded_drafter_batch=True is not supported for this situation now"),
     ("0.13.0", "disable_padded_drafter_batch=True is not supported for this situation now"),
     ("0.14.0", "Async scheduling is not compatible with disable_padded_drafter_batch=True."),
     ("0.20.0", "Async scheduling is not compatible with disable_padded_drafter_batch=True."),
     ("0.32.0", "Async scheduling is not compatible with disable_padded_drafter_batch=True.")],
)  # fmt: skip
def test_async_scheduling_with_disable_padded_drafter_batch_is_refused(version, said):
    report = lint(vllm(PADDED, "--async-scheduling"), engine_version=version)
    assert fired(report) == {REFUSED: PROBLEM}
    (change,) = [c for c in report.changes if c.rule == REFUSED]
    assert said in change.message and change.effective is None
    assert not report.starts and report.failing[REFUSED] == "args"
    assert any(
        f.rule == REFUSED and "disable_padded_drafter_batch" in (f.alternative or "") for f in report.fixes
    )
    again = fixed(report, version)
    assert REFUSED not in fired(again)
    # the same config without the flag, or with async scheduling turned off after it, is not refused
    assert REFUSED not in fired(lint(vllm(PADDED), engine_version=version))
    assert REFUSED not in fired(
        lint(vllm(PADDED, "--async-scheduling", "--no-async-scheduling"), engine_version=version)
    )
    assert fired(lint(vllm(SPEC, "--async-scheduling"), engine_version=version)) == {}


def test_mrv2_at_0_32_0_still_refuses_it():
    env = ("VLLM_USE_V2_MODEL_RUNNER=1",)
    report = lint(vllm(PADDED, "--async-scheduling", env=env), engine_version="0.32.0")
    assert fired(report) == {REFUSED: PROBLEM}


def test_0_33_0_refuses_it_on_the_v1_runner_only():
    v1 = lint(
        vllm(PADDED, "--async-scheduling", env=("VLLM_USE_V2_MODEL_RUNNER=0",)), engine_version="0.33.0"
    )
    assert fired(v1) == {REFUSED: PROBLEM} and not v1.starts
    (change,) = [c for c in v1.changes if c.rule == REFUSED]
    assert "not supported by the V1 model runner with disable_padded_drafter_batch=True." in change.message
    assert fixed(v1, "0.33.0").changes
    # a feature Model Runner V2 lacks puts the launch on V1 (config/vllm.py use_v2_model_runner)
    drafting = lint(
        vllm({**PADDED, "parallel_drafting": True}, "--async-scheduling"), engine_version="0.33.0"
    )
    assert fired(drafting) == {REFUSED: PROBLEM}
    mrv2 = lint(
        vllm(PADDED, "--async-scheduling", env=("VLLM_USE_V2_MODEL_RUNNER=1",)), engine_version="0.33.0"
    )
    assert fired(mrv2) == {} and "vllm.mrv2_ignores_key" in {c.rule for c in mrv2.problems}
    # the platform picks the runner: refused on V1 (a CPU), said as a warning
    either = lint(vllm(PADDED, "--async-scheduling"), engine_version="0.33.0")
    assert fired(either) == {REFUSED_V1: WARNING}
    (change,) = [c for c in either.changes if c.rule == REFUSED_V1]
    assert "on the V1 model runner (a CPU" in change.message


# ---- from 0.14.0: the default turned off, said only in a log line ---------------------------------------------


@pytest.mark.parametrize("version", ["0.14.0", "0.19.1", "0.20.0", "0.32.0"])
def test_disable_padded_drafter_batch_turns_the_default_async_scheduling_off(version):
    report = lint(vllm(PADDED), engine_version=version)
    assert fired(report) == {OFF: WARNING} and report.starts
    (change,) = [c for c in report.changes if c.rule == OFF]
    assert (change.flag, change.given, change.effective) == ("--async-scheduling", None, False)
    assert (
        "Async scheduling is not compatible with disable_padded_drafter_batch=True and will be disabled."
        in (change.message)
    )
    assert "--no-async-scheduling" in change.message
    # launched as it runs, or without the key: nothing is overridden
    assert fired(lint(vllm(PADDED, "--no-async-scheduling"), engine_version=version)) == {}
    assert fired(lint(vllm(SPEC), engine_version=version)) == {}
    # another method: not the key's doing (vLLM turns it off for its method first), and not this row
    ngram = {
        "method": "ngram",
        "num_speculative_tokens": 3,
        "prompt_lookup_max": 4,
        "disable_padded_drafter_batch": True,
    }
    assert OFF not in fired(lint(vllm(ngram), engine_version=version))


@pytest.mark.parametrize("version", ["0.11.1", "0.13.0"])
def test_before_0_14_0_async_scheduling_is_off_by_default_and_nothing_is_overridden(version):
    assert fired(lint(vllm(PADDED), engine_version=version)) == {}


def test_0_33_0_turns_it_off_on_the_v1_runner_only():
    v1 = lint(vllm(PADDED, env=("VLLM_USE_V2_MODEL_RUNNER=0",)), engine_version="0.33.0")
    assert fired(v1) == {OFF: WARNING}
    (change,) = [c for c in v1.changes if c.rule == OFF]
    assert "disabled because the V1 model runner does not support it" in change.message
    assert "(a CPU" not in change.message
    assert fired(lint(vllm(PADDED, env=("VLLM_USE_V2_MODEL_RUNNER=1",)), engine_version="0.33.0")) == {}
    either = lint(vllm(PADDED), engine_version="0.33.0")
    assert fired(either) == {OFF: WARNING}
    assert "on the V1 model runner (a CPU" in next(c.message for c in either.changes if c.rule == OFF)


# ---- the draft's context: zeros on asynchronous scheduling only (0.14.0-0.19.x) ---------------------------------


def context_row(argv: list[str], version: str) -> str:
    report = lint([*argv, "--max-model-len", "8k"], engine_version=version, drafter_config=SHORT_DRAFTER)
    (change,) = [c for c in report.changes if c.rule == "vllm.draft_context_gate"]
    return change.message


@pytest.mark.parametrize("version", ["0.14.0", "0.19.1"])
def test_past_the_drafters_context_a_synchronous_launch_verifies_no_drafts(version):
    default = context_row(vllm(SPEC), version)
    assert "vllm.draft-context-zeros-async" in default and "K zero tokens" in default
    for argv in (vllm(SPEC, "--no-async-scheduling"), vllm(PADDED)):
        message = context_row(argv, version)
        assert "vllm.draft-context-no-drafts-sync" in message and "no drafts (plain decoding)" in message
    assert "vllm.draft-context-zeros-async" in context_row(vllm(SPEC, "--no-async-scheduling", "--async-scheduling"),
                                                           version)  # fmt: skip


@pytest.mark.parametrize(
    ("version", "row"), [("0.13.0", "vllm.draft-context-no-drafts"), ("0.20.0", "vllm.draft-context-zeros")]
)
def test_outside_0_14_0_to_0_19_x_scheduling_does_not_change_the_context_row(version, row):
    for argv in (vllm(SPEC), vllm(SPEC, "--no-async-scheduling")):
        assert f"({row};" in context_row(argv, version)


# ---- the command line -----------------------------------------------------------------------------------------


def test_the_command_line_exits_1_on_the_refusal_and_0_on_the_override():
    env = dict(os.environ, COLUMNS="200")

    def run(version: str, *argv: str) -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, "-m", "eaglewire.cli", "lint", "--engine", f"vllm=={version}", "--json",
                               "--", *argv], capture_output=True, text=True, env=env, timeout=300)  # fmt: skip

    refused = run("0.20.0", *vllm(PADDED, "--async-scheduling"))
    assert refused.returncode == 1, refused.stderr
    assert REFUSED in {c["rule"] for c in json.loads(refused.stdout)["changes"] if c["severity"] == PROBLEM}
    warned = run("0.20.0", *vllm(PADDED))
    assert warned.returncode == 0, warned.stderr
    assert OFF in {c["rule"] for c in json.loads(warned.stdout)["changes"] if c["severity"] == WARNING}
