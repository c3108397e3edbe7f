"""SGLang launches that lint called OK and the engine refuses or mis-serves, read in the release wheels:

1. Llama-4's attention-backend assert. From 0.4.9.post4 ServerArgs asserts a Llama-4 target's attention backend is
   one its attention runs on; until 0.5.5.post3 the assert runs before any default is picked, so a launch without
   --attention-backend fails at startup on every GPU (the sm100 trtllm_mha default of 0.5.4.post1-0.5.5.post3 comes
   after it). From 0.5.6 the default is picked first; a given backend outside the set still fails (to 0.5.23).
2. SGLANG_ENABLE_SPEC_V2=1 with topk > 1 at 0.5.4.post1-0.5.6.post2: no refusal (that came in 0.5.7), the chain-only
   v2 worker runs the tree: a tensor-size RuntimeError on the first decode until 0.5.5.post3 (sglang#13352, #14077),
   wrong tokens without an error at 0.5.6-0.5.6.post2. EAGLE3 runs that worker too unless the overlap scheduler is
   disabled (lint said it was always off for EAGLE3 there).

Real argument code, the library call and the CLI in a subprocess; no mocks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from packaging.version import Version
from test_flags import E3, EAGLE, SGL, sizes

from eaglewire.jobs.lint import RULES, lint
from eaglewire.rules.launch import INFO, PROBLEM, LintReport

LLAMA4 = "Llama4ForConditionalGeneration"
LLAMA4_TEXT = "Llama4ForCausalLM"
ASSERT = "sglang.llama4_attention_backend"
TREE = "sglang.spec_v2_tree"
SPEC_V2 = "SGLANG_ENABLE_SPEC_V2=1"
NEW_ROWS = {ASSERT, TREE}


def fired(report: LintReport, rule: str) -> list:
    return [c for c in report.changes if c.rule == rule]


def assert_refused_then_fixed(report: LintReport, rule: str, stage: str | None, **context) -> LintReport:
    """The rule fires as a problem (failing at `stage`, or not failing at all), and the fixed command lints clean."""
    found = fired(report, rule)
    assert found and {c.severity for c in found} == {PROBLEM}, [c.rule for c in report.changes]
    assert report.failing.get(rule) == stage, report.failing
    assert any(f.rule == rule for f in report.fixes)
    assert report.fixed_argv is not None, report.notes
    again = lint(report.fixed_argv, **context)
    assert not again.has_problem and not fired(again, rule), [c.message for c in again.problems]
    return again


def run_lint(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "eaglewire.cli", "lint", *args], capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip


# ---- 1. Llama-4's attention-backend assert ----

# (release, the engine's message) for a launch without --attention-backend: the assert sees None
NO_BACKEND = [
    ("0.4.9.post4", "fa3 is required for Llama4 model"),
    ("0.4.9.post5", "fa3 is required for Llama4 model"),
    ("0.4.10.post2", "fa3 is required for Llama4 model"),
    ("0.5.1", "fa3 or aiter is required for Llama4 model"),
    ("0.5.2", "fa3, aiter, or triton is required for Llama4 model"),
    ("0.5.4", "fa3, aiter, or triton is required for Llama4 model"),
    ("0.5.4.post1", "fa3, aiter, triton, or trtllm_mha is required for Llama4 model"),
    ("0.5.5", "fa3, aiter, triton, or trtllm_mha is required for Llama4 model"),
    ("0.5.5.post1", "fa3, aiter, triton, trtllm_mha or intel_xpu is required for Llama4 model"),
    ("0.5.5.post3", "fa3, aiter, triton, trtllm_mha or intel_xpu is required for Llama4 model but got None"),
]


@pytest.mark.parametrize(("version", "message"), NO_BACKEND)
@pytest.mark.parametrize("gpu", ["h200", "b200", "a100", "unknown"])
def test_llama4_without_a_backend_fails_on_every_gpu_before_0_5_6(version, message, gpu):
    ctx = {"engine_version": version, "target_arch": LLAMA4, "gpu": gpu}
    report = lint([*E3, *sizes(3, 1, 4)], **ctx)
    (change,) = fired(report, ASSERT)
    assert f"AssertionError '{message}' at startup" in change.message and "sees None" in change.message
    assert not report.starts and not report.starts_args and not report.gpu_dependent  # on every GPU
    fixed = assert_refused_then_fixed(report, ASSERT, "args", **ctx)
    backend = fixed.argv[fixed.argv.index("--attention-backend") + 1]
    if gpu in ("h200", "unknown") or Version(version) < Version("0.5.2"):
        assert backend == "fa3"  # SGLang's own choice on Hopper; before 0.5.2 the only CUDA one it accepts
    elif gpu == "b200" and Version(version) >= Version("0.5.4.post1"):
        assert backend == "trtllm_mha"  # topk 1: SGLang's own choice on sm100 from 0.5.6
    else:
        assert backend == "triton"


def test_llama4_assert_is_for_every_launch_and_both_classes():
    plain = [*SGL, "--model-path", "meta-llama/Llama-4-Scout-17B-16E-Instruct", "--tp", "8"]
    for arch in (LLAMA4, LLAMA4_TEXT):
        report = lint(plain, engine_version="0.5.5", target_arch=arch, gpu="h200")
        assert fired(report, ASSERT) and not report.starts, arch
        assert lint(report.fixed_argv, engine_version="0.5.5", target_arch=arch, gpu="h200").starts
    # a tree of the auto choice: the assert comes first, and the fix keeps the tree where the backend runs it
    tree = lint([*E3, *sizes(3, 4, 8)], engine_version="0.5.5", target_arch=LLAMA4, gpu="b200")
    (fix,) = [f for f in tree.fixes if f.rule == ASSERT]
    assert fix.flags == "--attention-backend triton"  # trtllm_mha would refuse topk 4
    assert_refused_then_fixed(tree, ASSERT, "args", engine_version="0.5.5", target_arch=LLAMA4, gpu="b200")
    # the split backends do not count: the assert reads --attention-backend alone
    split = lint([*E3, *sizes(3, 1, 4), "--prefill-attention-backend", "fa3", "--decode-attention-backend", "fa3"],
                 engine_version="0.5.5", target_arch=LLAMA4, gpu="h200")  # fmt: skip
    assert "do not count" in fired(split, ASSERT)[0].message


@pytest.mark.parametrize(
    ("version", "accepted", "refused"),
    [
        ("0.4.10", ["fa3"], ["triton", "flashinfer"]),
        ("0.5.1", ["fa3", "aiter"], ["triton"]),
        ("0.5.2", ["fa3", "triton"], ["flashinfer"]),
        ("0.5.4", ["triton"], ["trtllm_mha"]),
        ("0.5.4.post1", ["trtllm_mha"], ["flashinfer"]),
        ("0.5.5", ["fa3", "trtllm_mha"], ["flashinfer"]),
    ],
)
def test_llama4_backends_each_release_accepts(version, accepted, refused):
    ctx = {"engine_version": version, "target_arch": LLAMA4, "gpu": "h200"}
    for backend in accepted:
        assert not fired(lint([*E3, *sizes(3, 1, 4), "--attention-backend", backend], **ctx), ASSERT), backend
    for backend in refused:
        report = lint([*E3, *sizes(3, 1, 4), "--attention-backend", backend], **ctx)
        (change,) = fired(report, ASSERT)
        assert f"--attention-backend {backend} is not one" in change.message and not report.starts
        assert_refused_then_fixed(report, ASSERT, "args", **ctx)


@pytest.mark.parametrize("version", ["0.5.6", "0.5.6.post2", "0.5.10", "0.5.15", "0.5.23"])
def test_llama4_from_0_5_6_only_a_given_backend_outside_the_set_fails(version):
    ctx = {"engine_version": version, "target_arch": LLAMA4, "gpu": "h200"}
    plain = lint([*E3, *sizes(3, 1, 4)], **ctx)  # the default (fa3 on sm90) is picked before the assert
    assert not fired(plain, ASSERT) and plain.starts
    for gpu in ("b200", "a100", "unknown"):
        assert not fired(lint([*E3, *sizes(3, 1, 4)], **{**ctx, "gpu": gpu}), ASSERT), gpu
    given = lint([*E3, *sizes(3, 1, 4), "--attention-backend", "flashinfer"], **ctx)
    (change,) = fired(given, ASSERT)
    assert change.message.endswith("but got flashinfer' at startup, on every GPU")
    assert ("ascend" in change.message) == (Version(version) >= Version("0.5.10"))
    fixed = assert_refused_then_fixed(given, ASSERT, "args", **ctx)
    assert fixed.argv[fixed.argv.index("--attention-backend") + 1] == "fa3"


def test_llama4_assert_range_edges():
    argv = [*E3, *sizes(3, 1, 4)]
    # 0.4.9.post3 has no assert (its speculative block sets fa3 itself); 0.4.9 and before pick the backend later
    for version in ("0.4.9", "0.4.9.post3"):
        report = lint(argv, engine_version=version, target_arch=LLAMA4, gpu="h200")
        assert ASSERT not in report.rules_applied and report.starts, version
    assert fired(lint(argv, engine_version="0.4.9.post4", target_arch=LLAMA4, gpu="h200"), ASSERT)
    assert not fired(lint(argv, engine_version="0.5.6", target_arch=LLAMA4, gpu="h200"), ASSERT)
    # other targets, and a target lint does not know, are not asserted on
    assert not fired(lint(argv, engine_version="0.5.5", target_arch="LlamaForCausalLM", gpu="h200"), ASSERT)
    assert not fired(lint(argv, engine_version="0.5.5", gpu="h200"), ASSERT)
    # a CPU launch is exempt from 0.5.3 (`self.device != "cpu"`), asserted before
    cpu = [*argv, "--device", "cpu"]
    assert not fired(lint(cpu, engine_version="0.5.3", target_arch=LLAMA4), ASSERT)
    assert fired(lint(cpu, engine_version="0.5.2", target_arch=LLAMA4), ASSERT)


def test_llama4_assert_through_the_cli(tmp_path):
    target = tmp_path / "scout"
    target.mkdir()
    (target / "config.json").write_text(json.dumps({"architectures": [LLAMA4], "model_type": "llama4"}))
    argv = [*SGL, "--model-path", str(target), "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
            "D", *sizes(3, 1, 4)]  # fmt: skip
    done = run_lint("--engine", "sglang==0.5.5", "--gpu", "h100", "--json", "--", *argv)
    assert done.returncode == 1, done.stderr
    out = json.loads(done.stdout)
    (change,) = [c for c in out["changes"] if c["rule"] == ASSERT]
    assert "fa3, aiter, triton, or trtllm_mha is required for Llama4 model" in change["message"]
    assert out["fixed_command"].endswith("--attention-backend fa3")
    fixed = run_lint(
        "--engine", "sglang==0.5.5", "--gpu", "h100", "--json", "--", *argv, "--attention-backend", "fa3"
    )
    assert fixed.returncode == 0, fixed.stdout
    assert not any(c["rule"] == ASSERT for c in json.loads(fixed.stdout)["changes"])
    newer = run_lint("--engine", "sglang==0.5.6", "--gpu", "h100", "--json", "--", *argv)
    assert newer.returncode == 0, newer.stdout


# ---- 2. spec v2 with topk > 1 before SGLang refused it ----


@pytest.mark.parametrize("version", ["0.5.4.post1", "0.5.5", "0.5.5.post3"])
def test_spec_v2_tree_fails_on_the_first_decode_until_0_5_5_post3(version):
    ctx = {"engine_version": version}
    report = lint([SPEC_V2, *E3, *sizes(5, 4, 8)], **ctx)
    (change,) = fired(report, TREE)
    assert "num_steps + 1 = 6" in change.message and "num_draft_tokens = 8" in change.message
    assert "RuntimeError 'Sizes of tensors must match'" in change.message and report.starts_args
    fix = next(f for f in report.fixes if f.rule == TREE)
    assert "--speculative-eagle-topk 1" in fix.flags and "SGLANG_ENABLE_SPEC_V2" in fix.alternative
    fixed = assert_refused_then_fixed(report, TREE, "runtime", **ctx)
    assert fixed.effective.topk == 1
    # a tree whose draft-token count is num_steps + 1: sizes agree, the tokens are wrong
    even = lint([SPEC_V2, *E3, *sizes(3, 2, 4)], **ctx)
    assert "wrong tokens" in fired(even, TREE)[0].message and not even.failing
    assert_refused_then_fixed(even, TREE, None, **ctx)


@pytest.mark.parametrize("version", ["0.5.6", "0.5.6.post1", "0.5.6.post2"])
def test_spec_v2_tree_returns_wrong_tokens_at_0_5_6(version):
    ctx = {"engine_version": version}
    report = lint([SPEC_V2, *E3, *sizes(5, 4, 8)], **ctx)
    (change,) = fired(report, TREE)
    assert "wrong tokens, with no error" in change.message and "0.5.13" in change.message
    assert report.starts and TREE not in report.failing
    assert_refused_then_fixed(report, TREE, None, **ctx)


@pytest.mark.parametrize("version", ["0.5.5", "0.5.6"])
def test_spec_v2_tree_of_the_auto_choice_and_which_worker_runs(version):
    ctx = {"engine_version": version, "target_arch": "LlamaForCausalLM"}
    auto = lint([SPEC_V2, *E3], **ctx)  # the auto-chosen (5, 4, 8)
    (change,) = fired(auto, TREE)
    assert "the auto-chosen topk 4" in change.message
    assert_refused_then_fixed(auto, TREE, "runtime" if version == "0.5.5" else None, **ctx)
    assert not fired(
        lint([SPEC_V2, *E3], **{**ctx, "target_arch": "DeepseekV3ForCausalLM"}), TREE
    )  # (3, 1, 4)
    tree = [*E3, *sizes(5, 4, 8)]
    assert not fired(lint(tree, **ctx), TREE)  # no opt-in: spec v1 runs the tree
    # EAGLE3 keeps the overlap scheduler with the opt-in (only without it is the scheduler turned off) ...
    assert not fired(lint([SPEC_V2, *tree], **ctx), "sglang.overlap_schedule")
    # ... so --disable-overlap-schedule takes EAGLE3 to spec v1; EAGLE has the scheduler turned back on
    assert not fired(lint([SPEC_V2, *tree, "--disable-overlap-schedule"], **ctx), TREE)
    eagle = lint([SPEC_V2, *EAGLE, *sizes(5, 4, 8), "--disable-overlap-schedule"], **ctx)
    assert fired(eagle, TREE) and fired(eagle, "sglang.overlap_schedule_forced_on")


def test_spec_v2_tree_range_edges():
    argv = [SPEC_V2, *E3, *sizes(5, 4, 8)]
    before = lint(argv, engine_version="0.5.4")  # the env is not read yet: --enable-beta-spec
    assert TREE not in before.rules_applied and not before.has_problem
    refused = lint(argv, engine_version="0.5.7")  # 0.5.7 refuses a given topk > 1 at startup
    assert TREE not in refused.rules_applied and fired(refused, "sglang.spec_v2_topk")
    chain = lint([SPEC_V2, *E3, *sizes(5, 1, 6)], engine_version="0.5.5")
    assert not fired(chain, TREE) and chain.starts


def test_spec_v2_overlap_for_eagle3_with_the_opt_in():
    """0.5.3.post2-0.5.6.post2 turn the overlap scheduler off only without the opt-in: EAGLE3 with it keeps the
    scheduler and runs EAGLEWorkerV2 (lint said it was off)."""
    plain = [*E3, *sizes(3, 1, 4)]
    for version, opt_in in (("0.5.3.post2", [*plain, "--enable-beta-spec"]), ("0.5.4", [*plain, "--enable-beta-spec"]),
                            ("0.5.4.post1", [SPEC_V2, *plain]), ("0.5.6.post2", [SPEC_V2, *plain])):  # fmt: skip
        assert not fired(lint(opt_in, engine_version=version), "sglang.overlap_schedule"), version
        off = fired(lint(plain, engine_version=version), "sglang.overlap_schedule")
        assert [c.severity for c in off] == [INFO], version


def test_spec_v2_tree_through_the_cli():
    argv = [SPEC_V2, *E3, *sizes(5, 4, 8)]
    done = run_lint("--engine", "sglang==0.5.5", "--gpu", "h100", "--json", "--", *argv)
    assert done.returncode == 1, done.stderr
    out = json.loads(done.stdout)
    assert out["failing"].get(TREE) == "runtime"
    assert run_lint("--engine", "sglang==0.5.5", "--gpu", "h100", "--json", "--", *argv[1:]).returncode == 0


def test_every_new_row_is_exercised_here_and_cites_a_release_read():
    runs = [
        ([*E3, *sizes(3, 1, 4)], {"engine_version": "0.5.5", "target_arch": LLAMA4}),
        ([*E3, *sizes(3, 1, 4), "--attention-backend", "flashinfer"], {"engine_version": "0.5.23", "target_arch": LLAMA4}),
        ([SPEC_V2, *E3, *sizes(5, 4, 8)], {"engine_version": "0.5.5"}),
        ([SPEC_V2, *E3, *sizes(5, 4, 8)], {"engine_version": "0.5.6"}),
    ]  # fmt: skip
    seen = {(c.rule, c.versions) for argv, kwargs in runs for c in lint(argv, **kwargs).changes}
    rows = {(r.name, r.versions) for r in RULES if r.name in NEW_ROWS}
    assert len(rows) == 4 and rows <= seen
    for r in RULES:
        if r.name in NEW_ROWS:
            assert r.citation and r.checked and r.severity == PROBLEM and r.fix is not None, r.name
            assert "@0." in r.citation, r.name  # file:line per release
