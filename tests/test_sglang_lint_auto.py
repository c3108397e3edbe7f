"""SGLang lint where the engine's own choice (auto sizes, a model's default backend, block verification) meets a
check that reads only what the command gives: three launches lint called OK that fail.

1. spec v2 with the auto-chosen topk 4 (0.5.7-0.5.10 with SGLANG_ENABLE_SPEC_V2=1, 0.5.11-0.5.12 by default): the
   v2 worker assumes a chain and fails on the first decode (sglang#13352, #14077).
2. gpt-oss (from 0.5.1) and Llama-4 (from 0.5.6) run trtllm_mha on sm100 when no backend is given, which refuses
   topk > 1 at startup (sglang#9471); Qwen3.5/Qwen3-Next run triton there with a tree (0.5.23).
3. --speculative-use-block-verification turns rejection sampling on (from 0.5.22), which needs topk 1; rejection
   sampling refuses accept thresholds (from 0.5.14).

Real argument code, the library call and the CLI in a subprocess; no mocks.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from test_flags import E3, SGL

from eaglewire.jobs.lint import RULES, lint
from eaglewire.rules.launch import INFO, PROBLEM, LintReport

LLAMA = "LlamaForCausalLM"
GPT_OSS = "GptOssForCausalLM"
LLAMA4 = "Llama4ForConditionalGeneration"
NEW_ROWS = {"sglang.spec_v2_auto_topk", "sglang.attention_backend_default_arch",
            "sglang.block_verification_rejection_sampling", "sglang.rejection_sampling_thresholds"}  # fmt: skip


def sizes(n: int, k: int, d: int) -> list[str]:
    return ["--speculative-num-steps", str(n), "--speculative-eagle-topk", str(k), "--speculative-num-draft-tokens",
            str(d)]  # fmt: skip


def fired(report: LintReport, rule: str) -> list:
    return [c for c in report.changes if c.rule == rule]


def assert_refused_then_fixed(report: LintReport, rule: str, **context) -> LintReport:
    """The rule fires as a problem, the launch does not start, and the fixed command lints clean."""
    found = fired(report, rule)
    assert found and {c.severity for c in found} == {PROBLEM}, [c.rule for c in report.changes]
    assert not report.starts and rule in report.failing
    assert any(f.rule == rule for f in report.fixes)
    assert report.fixed_argv is not None, report.notes
    again = lint(report.fixed_argv, **context)
    assert not again.has_problem and not fired(again, rule), [c.message for c in again.problems]
    return again


# ---- 1. spec v2 with the auto-chosen topk ----


@pytest.mark.parametrize("version", ["0.5.11", "0.5.12", "0.5.12.post1"])
def test_spec_v2_by_default_runs_the_auto_tree_and_fails(version):
    ctx = {"engine_version": version, "target_arch": LLAMA}
    report = lint(E3, **ctx)
    assert (report.effective.num_steps, report.effective.topk, report.effective.num_draft_tokens) == (5, 4, 8)
    (change,) = fired(report, "sglang.spec_v2_auto_topk")
    assert report.failing["sglang.spec_v2_auto_topk"] == "runtime"
    assert "Sizes of tensors must match" in change.message
    fix = next(f for f in report.fixes if f.rule == "sglang.spec_v2_auto_topk")
    assert "--speculative-eagle-topk 1" in fix.flags and "spec v1" in fix.alternative
    fixed = assert_refused_then_fixed(report, "sglang.spec_v2_auto_topk", **ctx)
    assert fixed.effective.topk == 1
    # the same tree given on purpose falls back to spec v1 (no overlap scheduler): it starts
    given = lint([*E3, *sizes(5, 4, 8)], **ctx)
    assert not fired(given, "sglang.spec_v2_auto_topk") and given.starts
    assert fired(given, "sglang.overlap_schedule")
    for off in (["--disable-overlap-schedule"], ["SGLANG_ENABLE_SPEC_V2=false"]):
        argv = [*off, *E3] if off[0].startswith("SGLANG") else [*E3, *off]
        assert not fired(lint(argv, **ctx), "sglang.spec_v2_auto_topk"), off


def test_spec_v2_auto_topk_only_where_the_auto_choice_is_a_tree_and_before_0_5_13():
    assert not fired(
        lint(E3, engine_version="0.5.12", target_arch="Qwen3ForCausalLM"), "sglang.spec_v2_auto_topk"
    )
    fixed = lint(E3, engine_version="0.5.13", target_arch=LLAMA)  # the v2 worker extends by num_draft_tokens
    assert fixed.effective.topk == 4 and not fired(fixed, "sglang.spec_v2_auto_topk") and fixed.starts
    assert "sglang.spec_v2_auto_topk" not in fixed.rules_applied


@pytest.mark.parametrize("version", ["0.5.7", "0.5.9", "0.5.10", "0.5.10.post1"])
def test_spec_v2_opt_in_with_the_auto_tree_fails(version):
    ctx = {"engine_version": version, "target_arch": LLAMA}
    env = ["SGLANG_ENABLE_SPEC_V2=1", *E3]
    report = lint(env, **ctx)
    assert fired(report, "sglang.spec_v2_auto_topk") and not fired(report, "sglang.spec_v2_topk")
    fix = next(f for f in report.fixes if f.rule == "sglang.spec_v2_auto_topk")
    assert "SGLANG_ENABLE_SPEC_V2" in fix.alternative
    assert_refused_then_fixed(report, "sglang.spec_v2_auto_topk", **ctx)
    # SGLang turns the overlap scheduler back on under spec v2: --disable-overlap-schedule does not avoid it
    assert fired(lint([*env, "--disable-overlap-schedule"], **ctx), "sglang.spec_v2_auto_topk")
    assert not fired(lint(E3, **ctx), "sglang.spec_v2_auto_topk")  # spec v1 (the default then) runs trees


def test_spec_v2_opt_in_range_edges():
    env = ["SGLANG_ENABLE_SPEC_V2=1", *E3]
    # 0.5.7 auto-chooses (5, 4, 8) for every target outside its small list; 0.5.8 (3, 1, 4)
    assert fired(
        lint(env, engine_version="0.5.7", target_arch="Qwen3ForCausalLM"), "sglang.spec_v2_auto_topk"
    )
    assert not fired(
        lint(env, engine_version="0.5.8", target_arch="Qwen3ForCausalLM"), "sglang.spec_v2_auto_topk"
    )
    early = lint(
        ["SGLANG_ENABLE_SPEC_V2=1", *E3[:6], "EAGLE", *E3[7:]], engine_version="0.5.6", target_arch=LLAMA
    )
    assert "sglang.spec_v2_auto_topk" not in early.rules_applied


def run_lint(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "eaglewire.cli", "lint", *args], capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip


def test_the_cli_reads_the_env_prefix_and_a_local_target(tmp_path):
    target = tmp_path / "llama"
    target.mkdir()
    (target / "config.json").write_text(json.dumps({"architectures": [LLAMA], "vocab_size": 128256}))
    argv = ["SGLANG_ENABLE_SPEC_V2=1", *SGL, "--model-path", str(target), "--speculative-algorithm", "EAGLE3",
            "--speculative-draft-model-path", "D"]  # fmt: skip
    done = run_lint("--engine", "sglang==0.5.10", "--gpu", "h100", "--json", "--", *argv)
    assert done.returncode == 1, done.stderr
    out = json.loads(done.stdout)
    assert any(c["rule"] == "sglang.spec_v2_auto_topk" for c in out["changes"])
    done = run_lint("--engine", "sglang==0.5.10", "--gpu", "h100", "--json", "--", *argv[1:])
    assert done.returncode == 0, done.stdout
    assert not any(c["rule"] == "sglang.spec_v2_auto_topk" for c in json.loads(done.stdout)["changes"])


# ---- 2. gpt-oss and Llama-4 default to trtllm_mha on sm100 ----


def backend_said(report: LintReport) -> list:
    rules = ("sglang.attention_backend_default", "sglang.attention_backend_default_arch")
    return [c.effective for c in report.changes if c.rule in rules]


def test_gpt_oss_tree_on_a_b200_is_refused_at_0_5_23_and_starts_on_an_h200():
    argv = [*E3, *sizes(3, 4, 8)]
    b200 = lint(argv, target_arch=GPT_OSS, gpu="b200")
    assert backend_said(b200) == ["trtllm_mha"]
    fix = next(f for f in b200.fixes if f.rule == "sglang.trtllm_mha_topk")
    assert "--attention-backend triton" in fix.alternative
    assert_refused_then_fixed(b200, "sglang.trtllm_mha_topk", target_arch=GPT_OSS, gpu="b200")
    h200 = lint(argv, target_arch=GPT_OSS, gpu="h200")
    assert backend_said(h200) == ["fa3"] and not fired(h200, "sglang.trtllm_mha_topk") and h200.starts
    assert backend_said(lint(argv, target_arch=GPT_OSS, gpu="a100")) == ["triton"]
    assert not fired(lint([*argv, "--attention-backend", "triton"], target_arch=GPT_OSS, gpu="b200"),
                     "sglang.trtllm_mha_topk")  # fmt: skip
    # gpt-oss's override needs all three flags unset: with a decode backend given, the generic default (no
    # trtllm_mha for a tree)
    split = lint([*argv, "--decode-attention-backend", "fa4"], target_arch=GPT_OSS, gpu="b200")
    assert not fired(split, "sglang.trtllm_mha_topk")
    # a Llama target's generic default on sm100 with a tree is flashinfer, as before
    assert backend_said(lint(argv, target_arch=LLAMA, gpu="b200")) == ["flashinfer"]
    unknown = lint(argv, target_arch=GPT_OSS, gpu="unknown")
    assert any(d.startswith("b200: refused") and "trtllm_mha_topk" in d for d in unknown.gpu_dependent)


@pytest.mark.parametrize("version", ["0.5.1", "0.5.3", "0.5.3.post1", "0.5.10", "0.5.22"])
def test_gpt_oss_trtllm_mha_default_before_0_5_23(version):
    ctx = {"engine_version": version, "target_arch": GPT_OSS, "gpu": "b200"}
    report = lint([*E3, *sizes(3, 4, 8)], **ctx)
    assert [c.effective for c in fired(report, "sglang.attention_backend_default_arch")] == ["trtllm_mha"]
    assert_refused_then_fixed(report, "sglang.trtllm_mha_topk", **ctx)
    hopper = lint([*E3, *sizes(3, 4, 8)], **{**ctx, "gpu": "h200"})
    assert [c.effective for c in fired(hopper, "sglang.attention_backend_default_arch")] == ["fa3"]
    assert not fired(hopper, "sglang.trtllm_mha_topk")


def test_gpt_oss_override_condition_and_first_release():
    argv = [*E3, *sizes(3, 4, 8), "--decode-attention-backend", "fa3"]
    # 0.5.1-0.5.3 test --attention-backend alone; from 0.5.3.post1 all three
    assert fired(
        lint(argv, engine_version="0.5.3", target_arch=GPT_OSS, gpu="b200"), "sglang.trtllm_mha_topk"
    )
    assert not fired(lint(argv, engine_version="0.5.3.post1", target_arch=GPT_OSS, gpu="b200"),
                     "sglang.trtllm_mha_topk")  # fmt: skip
    old = lint([*E3, *sizes(3, 4, 8)], engine_version="0.4.10.post2", target_arch=GPT_OSS, gpu="b200")
    assert "sglang.attention_backend_default_arch" not in old.rules_applied
    assert not fired(old, "sglang.trtllm_mha_topk")


@pytest.mark.parametrize("version", ["0.5.6", "0.5.7"])
def test_llama4_without_size_flags_on_a_b200_is_refused(version):
    """0.5.6-0.5.7 auto-choose (5, 4, 8) for Llama-4, and its override picks trtllm_mha on sm100."""
    ctx = {"engine_version": version, "target_arch": LLAMA4, "gpu": "b200"}
    report = lint(E3, **ctx)
    assert report.effective.topk == 4
    assert [c.effective for c in fired(report, "sglang.attention_backend_default_arch")] == ["trtllm_mha"]
    assert_refused_then_fixed(report, "sglang.trtllm_mha_topk", **ctx)
    assert not fired(lint(E3, **{**ctx, "gpu": "h200"}), "sglang.trtllm_mha_topk")


def test_llama4_range_and_condition():
    # 0.5.8 auto-chooses (3, 1, 4) for Llama-4: a tree only when given
    assert lint(E3, engine_version="0.5.8", target_arch=LLAMA4, gpu="b200").starts
    tree = [*E3, *sizes(3, 4, 8)]
    assert fired(lint(tree, engine_version="0.5.8", target_arch=LLAMA4, gpu="b200"), "sglang.trtllm_mha_topk")
    at_23 = lint(tree, target_arch=LLAMA4, gpu="b200")
    assert backend_said(at_23) == ["trtllm_mha"] and fired(at_23, "sglang.trtllm_mha_topk")
    # Llama-4's override tests --attention-backend alone: a decode backend leaves prefill on trtllm_mha
    assert fired(lint([*tree, "--decode-attention-backend", "triton"], target_arch=LLAMA4, gpu="b200"),
                 "sglang.trtllm_mha_topk")  # fmt: skip
    # before 0.5.6 no trtllm_mha default (0.5.4.post1-0.5.5 assert on the backend before setting it)
    early = lint(tree, engine_version="0.5.5", target_arch=LLAMA4, gpu="b200")
    assert not fired(early, "sglang.attention_backend_default_arch") and not fired(
        early, "sglang.trtllm_mha_topk"
    )


def test_qwen3_5_hybrid_runs_triton_with_a_tree_on_sm100():
    tree = lint([*E3, *sizes(3, 4, 8)], target_arch="Qwen3NextForCausalLM", gpu="b200")
    assert backend_said(tree) == ["triton"] and tree.starts
    chain = lint([*E3, *sizes(3, 1, 4)], target_arch="Qwen3NextForCausalLM", gpu="b200")
    assert backend_said(chain) == ["trtllm_mha"]


# ---- 3. block verification and the accept thresholds ----

BLOCK = "--speculative-use-block-verification"


@pytest.mark.parametrize("version", ["0.5.22", "0.5.23"])
def test_block_verification_turns_rejection_sampling_on_and_needs_topk_1(version):
    ctx = {"engine_version": version, "target_arch": LLAMA}
    auto = lint([*E3, BLOCK], **ctx)  # the auto-chosen (5, 4, 8)
    assert [c.severity for c in fired(auto, "sglang.block_verification_rejection_sampling")] == [INFO]
    assert_refused_then_fixed(auto, "sglang.rejection_sampling_topk", **ctx)
    assert_refused_then_fixed(
        lint([*E3, BLOCK, *sizes(3, 4, 8)], **ctx), "sglang.rejection_sampling_topk", **ctx
    )
    chain = lint([*E3, BLOCK, *sizes(3, 1, 4)], **ctx)
    assert chain.starts and fired(chain, "sglang.block_verification_rejection_sampling")
    assert not fired(lint(E3, **ctx), "sglang.rejection_sampling_topk")


def test_block_verification_before_0_5_22_is_an_unknown_flag():
    report = lint([*E3, BLOCK, *sizes(3, 4, 8)], engine_version="0.5.21", target_arch=LLAMA)
    assert "sglang.block_verification_rejection_sampling" not in report.rules_applied
    assert not fired(report, "sglang.rejection_sampling_topk") and fired(report, "sglang.flag_not_in_release")


@pytest.mark.parametrize("version", ["0.5.14", "0.5.18", "0.5.23"])
@pytest.mark.parametrize(
    "flag", ["--speculative-accept-threshold-single", "--speculative-accept-threshold-acc"]
)
def test_rejection_sampling_refuses_accept_thresholds(version, flag):
    ctx = {"engine_version": version}
    rs = [*E3, *sizes(3, 1, 4), "--speculative-use-rejection-sampling"]
    report = lint([*rs, flag, "0.5"], **ctx)
    (change,) = fired(report, "sglang.rejection_sampling_thresholds")
    assert "incompatible with" in change.message and change.flag == flag
    fixed = assert_refused_then_fixed(report, "sglang.rejection_sampling_thresholds", **ctx)
    assert flag not in fixed.argv
    assert not fired(lint([*rs, flag, "1.0"], **ctx), "sglang.rejection_sampling_thresholds")
    thresholds_alone = lint([*E3, *sizes(3, 1, 4), flag, "0.5"], **ctx)  # no rejection sampling: honoured
    assert not fired(thresholds_alone, "sglang.rejection_sampling_thresholds") and thresholds_alone.starts


def test_thresholds_before_0_5_14_and_with_block_verification():
    old = lint([*E3, *sizes(3, 1, 4), "--speculative-accept-threshold-acc", "0.5"], engine_version="0.5.13")
    assert "sglang.rejection_sampling_thresholds" not in old.rules_applied and old.starts
    block = lint([*E3, BLOCK, *sizes(3, 1, 4), "--speculative-accept-threshold-single", "0.7"])
    (change,) = fired(block, "sglang.rejection_sampling_thresholds")
    assert "block-verification" in change.message
    assert_refused_then_fixed(block, "sglang.rejection_sampling_thresholds")


def test_every_new_row_is_exercised_here_and_cites_a_release_read():
    """The rows this file is about, each (name, range) fired by a launch above and read in a release it covers."""
    runs = [
        (["SGLANG_ENABLE_SPEC_V2=1", *E3], {"engine_version": "0.5.10", "target_arch": LLAMA}),
        (E3, {"engine_version": "0.5.11", "target_arch": LLAMA}),
        ([*E3, *sizes(3, 4, 8)], {"engine_version": "0.5.10", "target_arch": GPT_OSS, "gpu": "b200"}),
        ([*E3, BLOCK], {"target_arch": LLAMA}),
        ([*E3, *sizes(3, 1, 4), "--speculative-use-rejection-sampling", "--speculative-accept-threshold-acc", "0"],
         {}),
    ]  # fmt: skip
    seen = {(c.rule, c.versions) for argv, kwargs in runs for c in lint(argv, **kwargs).changes}
    rows = {(r.name, r.versions) for r in RULES if r.name in NEW_ROWS}
    assert len(rows) == 5 and rows <= seen
    for r in RULES:
        if r.name in NEW_ROWS:
            assert r.citation and r.checked and (r.severity != PROBLEM or r.fix is not None), r.name
