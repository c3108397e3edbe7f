"""eaglewire.flags: real launch commands in, the engines' own rules replayed, fixes that lint clean."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import eaglewire
from eaglewire.engines.parse import parse_launch
from eaglewire.engines.versions import SGLANG_CHECKED
from eaglewire.errors import InputError
from eaglewire.jobs.lint import RULES, lint, rules_for
from eaglewire.rules.launch import INFO, PROBLEM, WARNING, LintReport

SGL = ["python", "-m", "sglang.launch_server"]
EXAMPLES = Path(eaglewire.__file__).parent / "examples"
KIMI = [*SGL, "--model-path", "moonshotai/Kimi-K2.5", "--tp", "8", "--trust-remote-code",
        "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path", "/ckpt/kimi-k25-eagle3",
        "--speculative-num-steps", "1", "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "16"]  # fmt: skip
E3 = [
    *SGL,
    "--model-path",
    "org/target",
    "--speculative-algorithm",
    "EAGLE3",
    "--speculative-draft-model-path",
    "D",
]
EAGLE = [
    *SGL,
    "--model-path",
    "org/target",
    "--speculative-algorithm",
    "EAGLE",
    "--speculative-draft-model-path",
    "D",
]
EAGLE3_DRAFTER = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 29, 57]},
}
SPECULATORS_DRAFTER = {
    "architectures": ["Eagle3DraftModel"],
    "speculators_model_type": "eagle3",
    "speculators_config": {"proposal_methods": [{"proposal_type": "greedy", "speculative_tokens": 5}],
                           "verifier": {"name_or_path": "meta-llama/Llama-3.1-8B-Instruct"}},
    "transformer_layer_config": {"model_type": "llama", "hidden_size": 4096},
}  # fmt: skip
# the zoo target (Llama, L=8), local: lint reads its config.json; a drafter whose ids feed h1,h4,h6, not h2,h4,h5
ZOO_TARGET = Path(eaglewire.__file__).parent / "zoo" / "target"
ZOO_IDS_035 = {
    "architectures": ["LlamaForCausalLMEagle3"],
    "eagle_config": {"eagle_aux_hidden_state_layer_ids": [0, 3, 5]},
}
KIMI_TARGET = {"architectures": ["KimiK25ForConditionalGeneration"], "model_type": "kimi_k25",
               "text_config": {"model_type": "deepseek_v3", "num_hidden_layers": 61}}  # fmt: skip


def vllm(spec: dict | str, *extra: str) -> list[str]:
    text = spec if isinstance(spec, str) else json.dumps(spec)
    return ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", "--speculative-config", text, *extra]


def sizes(n: int, k: int, d: int) -> list[str]:
    return [
        "--speculative-num-steps",
        str(n),
        "--speculative-eagle-topk",
        str(k),
        "--speculative-num-draft-tokens",
        str(d),
    ]


def write_config(directory, config: dict) -> str:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    return str(directory)


def changes(report: LintReport, rule: str) -> list:
    return [c for c in report.changes if c.rule == rule]


def assert_fix_lints_clean(report: LintReport, **context) -> LintReport:
    assert report.has_problem and report.fixes
    assert report.fixed_argv is not None, report.notes
    again = lint(report.fixed_argv, **context)
    assert not again.has_problem, [c.message for c in again.problems]
    return again


# --------------------------------------------------------------------------------------------------------------
# The Kimi-K2.5 story


def test_kimi_k25_launch_verifies_2_tokens_not_16_and_the_fix_lints_clean():
    report = lint(KIMI, engine_version="0.5.23")
    assert report.has_problem and report.exit_code == 1 and report.starts
    (chain,) = changes(report, "sglang.chain_rule")
    assert (chain.flag, chain.given, chain.effective, chain.severity) == (
        "--speculative-num-draft-tokens",
        16,
        2,
        PROBLEM,
    )
    assert "speculative_hook.py" in chain.citation and "num_steps + 1" in chain.message
    eff = report.effective
    assert (eff.num_steps, eff.topk, eff.num_draft_tokens) == (1, 1, 2)
    assert (eff.proposed_drafts_per_verify, eff.max_accept_length) == (1, 2)
    assert report.given.num_draft_tokens == 16 and report.given.proposed_drafts_per_verify == 15

    (fix,) = [f for f in report.fixes if f.rule == "sglang.chain_rule"]
    assert (
        fix.flags == "--speculative-num-steps 15 --speculative-eagle-topk 1 --speculative-num-draft-tokens 16"
    )
    assert (
        "--speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 2"
        in fix.alternative
    )
    again = assert_fix_lints_clean(report, engine_version="0.5.23")
    assert again.effective.num_draft_tokens == 16 and again.effective.max_accept_length == 16
    # The rest of the command is untouched.
    assert report.fixed_argv[:9] == KIMI[:9]


def test_kimi_report_is_json_serialisable_and_warns_about_48_requests():
    report = lint(KIMI, engine_version="0.5.23")
    data = json.loads(json.dumps(report.to_dict()))
    assert data["has_problem"] is True and data["fixed_command"].startswith("python -m sglang.launch_server")
    assert data["fixes"][0]["flags"].startswith("--speculative-num-steps 15")
    (mrr,) = changes(report, "sglang.max_running_requests")
    assert (mrr.severity, mrr.effective) == (WARNING, 48)


def test_max_running_requests_is_a_warning_not_a_problem():
    report = lint([*E3, *sizes(3, 1, 4)], engine_version="0.5.23")
    assert not report.has_problem and report.exit_code == 0 and report.fixed_argv is None
    assert [c.severity for c in changes(report, "sglang.max_running_requests")] == [WARNING]
    explicit = lint([*E3, *sizes(3, 1, 4), "--max-running-requests", "128"], engine_version="0.5.23")
    assert (
        not changes(explicit, "sglang.max_running_requests")
        and explicit.effective.max_running_requests == 128
    )
    silent = lint([*E3, *sizes(3, 1, 4)], engine_version="0.5.3")
    assert "no log line" in changes(silent, "sglang.max_running_requests")[0].message


@pytest.mark.parametrize(
    "argv",
    [
        ["sglang", "serve", "moonshotai/Kimi-K2.5", *KIMI[5:]],
        [*SGL, "--model=moonshotai/Kimi-K2.5", "--speculative-algorithm=EAGLE3",
         "--speculative-draft-model=/ckpt/d", "--speculative-num-steps=1", "--speculative-eagle-topk", "1",
         "--speculative-num-draft-tokens=16"],
        [" ".join(KIMI)],
        ["CUDA_VISIBLE_DEVICES=0,1", "env", "SGLANG_LOG=1", *KIMI],
    ],
    ids=["sglang-serve", "inline-and-aliases", "one-string", "env-prefix"],
)  # fmt: skip
def test_kimi_case_in_every_spelling(argv):
    report = lint(argv, engine_version="0.5.23")
    assert report.engine == "sglang"
    assert report.effective.num_draft_tokens == 2 and changes(report, "sglang.chain_rule")
    assert_fix_lints_clean(report, engine_version="0.5.23")


def test_parse_launch_keeps_what_the_command_says():
    cmd = parse_launch(
        ["SGLANG_ENABLE_SPEC_V2=1", "sglang", "serve", "org/m", "--speculative-draft-model=/d", "--tp", "2"]
    )
    assert cmd.engine == "sglang" and cmd.model == "org/m" and cmd.env == {"SGLANG_ENABLE_SPEC_V2": "1"}
    assert cmd.entry == ("sglang", "serve")
    assert cmd.get("--speculative-draft-model-path") == "/d" and cmd.get("--tp-size") == "2"
    forced = parse_launch(
        ["./serve.sh", "--model-path", "m", "--speculative-algorithm", "EAGLE3"], engine="sglang"
    )
    assert forced.engine == "sglang" and forced.model == "m"
    flags_only = parse_launch(["--model-path", "m"], engine="sglang")
    assert flags_only.entry == () and flags_only.model == "m"


# --------------------------------------------------------------------------------------------------------------
# SGLang rules


def test_auto_choice_by_target_architecture_and_version():
    llama = lint(E3, engine_version="0.5.23", target_arch="LlamaForCausalLM")
    deepseek = lint(E3, engine_version="0.5.23", target_arch="DeepseekV3ForCausalLM")
    assert (llama.effective.num_steps, llama.effective.topk, llama.effective.num_draft_tokens) == (5, 4, 8)
    assert (deepseek.effective.num_steps, deepseek.effective.topk, deepseek.effective.num_draft_tokens) == (
        3,
        1,
        4,
    )
    assert {c.severity for c in changes(llama, "sglang.auto_choice")} == {WARNING}
    # sglang 0.4.5/0.4.6 returned (5, 4, 8) for DeepSeek too; 0.4.7 gave DeepSeek (3, 1, 4).
    old = lint(E3, engine_version="0.4.6", target_arch="DeepseekV3ForCausalLM")
    assert (old.effective.num_steps, old.effective.topk, old.effective.num_draft_tokens) == (5, 4, 8)
    assert changes(old, "sglang.auto_choice")[0].versions == ">=0.4.6,<0.4.7"
    # 0.4.5.x never chooses: its auto-choice reads a field its ServerArgs lacks (sglang#5673), executed in the
    # SGLang draft-settings records
    crash = lint(E3, engine_version="0.4.5.post3", target_arch="LlamaForCausalLM")
    assert not crash.starts and [c.severity for c in changes(crash, "sglang.auto_choice_crashes")] == [
        PROBLEM
    ]
    assert changes(crash, "sglang.auto_choice") == [] and crash.evidence["level"] == "model-code"
    newer = lint(E3, engine_version="0.4.7", target_arch="DeepseekV3ForCausalLM")
    assert newer.effective.num_draft_tokens == 4
    # "all other models" went from (5, 4, 8) to (3, 1, 4) in 0.5.8.
    assert lint(E3, engine_version="0.5.7", target_arch="Qwen3ForCausalLM").effective.topk == 4
    assert lint(E3, engine_version="0.5.8", target_arch="Qwen3ForCausalLM").effective.topk == 1


def test_kimi_wrapper_keys_the_auto_choice_on_the_wrapper(tmp_path):
    target = write_config(tmp_path / "kimi", KIMI_TARGET)
    argv = [
        *SGL,
        "--model-path",
        target,
        "--speculative-algorithm",
        "EAGLE3",
        "--speculative-draft-model-path",
        "D",
    ]
    report = lint(argv, engine_version="0.5.7")
    assert report.target_arch == "KimiK25ForConditionalGeneration"
    assert report.effective.topk == 4  # the "other models" default, not DeepSeek's (3, 1, 4)
    message = changes(report, "sglang.auto_choice")[0].message
    assert "DeepseekV3ForCausalLM text model, which would get (3, 1, 4)" in message
    assert lint(argv, engine_version="0.5.23").effective.num_draft_tokens == 4


def test_partial_specification_fails_at_startup_and_is_fixed():
    report = lint([*E3, "--speculative-num-draft-tokens", "6"], engine_version="0.5.23")
    (partial,) = changes(report, "sglang.partial_specification")
    assert partial.severity == PROBLEM and "AssertionError" in partial.message and not report.starts
    (fix,) = report.fixes
    assert (
        fix.flags == "--speculative-num-steps 5 --speculative-eagle-topk 1 --speculative-num-draft-tokens 6"
    )
    assert "auto-chooses" in fix.alternative
    assert_fix_lints_clean(report, engine_version="0.5.23")
    topk_only = lint([*E3, "--speculative-eagle-topk", "4"], engine_version="0.5.18")
    assert changes(topk_only, "sglang.partial_specification")[0].versions == ">=0.4.5,<0.5.19"
    assert_fix_lints_clean(topk_only, engine_version="0.5.18")


@pytest.mark.parametrize(
    "source",
    ["dict", "speculators-dict", "directory", "draft-path"],
)
def test_eagle_algorithm_with_an_eagle3_drafter(tmp_path, source):
    argv = [*EAGLE, *sizes(3, 1, 4)]
    kwargs: dict = {"engine_version": "0.5.23"}
    if source == "dict":
        kwargs["drafter_config"] = EAGLE3_DRAFTER
    elif source == "speculators-dict":
        kwargs["drafter_config"] = SPECULATORS_DRAFTER
    elif source == "directory":
        kwargs["drafter_config"] = write_config(tmp_path / "drafter", EAGLE3_DRAFTER)
    else:  # the draft model path is a local directory: its config.json is read without being asked
        argv[argv.index("D")] = write_config(tmp_path / "drafter", EAGLE3_DRAFTER)
    report = lint(argv, **kwargs)
    assert report.drafter_kind == "eagle3"
    (c,) = changes(report, "sglang.eagle_with_eagle3_drafter")
    assert c.severity == PROBLEM and "fc is silently skipped" in c.message
    assert [f.flags for f in report.fixes] == ["--speculative-algorithm EAGLE3"]
    again = assert_fix_lints_clean(report, **kwargs)
    assert again.effective.algorithm == "EAGLE3"


def test_nextn_is_eagle_and_an_eagle3_drafter_there_is_a_problem():
    report = lint([*EAGLE[:6], "NEXTN", *EAGLE[7:], *sizes(3, 1, 4)], drafter_config=EAGLE3_DRAFTER)
    assert changes(report, "sglang.nextn_alias")[0].effective == "EAGLE"
    assert changes(report, "sglang.eagle_with_eagle3_drafter")
    plain = lint([*EAGLE, *sizes(3, 1, 4)], drafter_config={"architectures": ["EagleLlamaForCausalLM"]})
    assert plain.drafter_kind == "eagle" and not plain.has_problem


def test_token_map_is_ignored_for_eagle3():
    report = lint(
        [*E3, *sizes(3, 1, 4), "--speculative-token-map", "thunlp/LLaMA3-Instruct-8B-FR-Spec/freq_32768.pt"]
    )
    (c,) = changes(report, "sglang.token_map_ignored")
    assert c.severity == WARNING and c.effective is None and not report.has_problem
    assert not changes(
        lint([*EAGLE, *sizes(3, 1, 4), "--speculative-token-map", "m.pt"]), "sglang.token_map_ignored"
    )


def test_tree_pool_smaller_than_the_draft_tokens_asked_for():
    report = lint([*E3, *sizes(2, 2, 10)], engine_version="0.5.23")
    (c,) = changes(report, "sglang.tree_pool_too_small")
    assert "6 candidates" in c.message and c.severity == PROBLEM
    (fix,) = report.fixes
    assert (
        fix.flags == "--speculative-num-steps 3 --speculative-eagle-topk 2 --speculative-num-draft-tokens 10"
    )
    assert "--speculative-num-draft-tokens 7" in fix.alternative
    assert_fix_lints_clean(report, engine_version="0.5.23")


# --------------------------------------------------------------------------------------------------------------
# vLLM


def test_vllm_speculative_config_json_in_every_spelling():
    spec = {"method": "eagle3", "model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}
    forms = [
        vllm(spec),
        ["vllm", "serve", "meta-llama/Llama-3.1-8B-Instruct", f"--speculative-config={json.dumps(spec)}"],
        ["python", "-m", "vllm.entrypoints.openai.api_server", "--model", "meta-llama/Llama-3.1-8B-Instruct",
         "--speculative_config", json.dumps(spec)],
        ["vllm", "serve", "m", "--speculative-config.method", "eagle3", "--speculative-config.model",
         "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "--speculative-config.num_speculative_tokens", "3"],
        ["vllm", "serve", "m", "--spec-method", "eagle3", "--spec-model", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
         "--spec-tokens", "3"],
        [f"vllm serve m --speculative-config '{json.dumps(spec)}'"],
    ]  # fmt: skip
    for argv in forms:
        report = lint(argv, engine_version="0.33.0")
        assert report.engine == "vllm" and not report.has_problem, argv
        eff = report.effective
        assert (eff.method, eff.num_speculative_tokens, eff.draft_model) == ("eagle3", 3, spec["model"])
        # vLLM's EAGLE-3 is a chain: the SGLang equivalent is (k, 1, k + 1).
        assert (eff.num_steps, eff.topk, eff.num_draft_tokens, eff.proposed_drafts_per_verify) == (3, 1, 4, 3)
        assert eff.max_accept_length == 4 and changes(report, "vllm.chain")


def test_vllm_missing_num_speculative_tokens_without_a_draft_config():
    report = lint(vllm({"method": "eagle3", "model": "org/my-drafter"}))
    (c,) = changes(report, "vllm.num_speculative_tokens_missing")
    assert c.severity == PROBLEM and not report.starts
    assert report.fixes[0].flags == "--speculative-config.num_speculative_tokens 3"
    again = assert_fix_lints_clean(report)
    assert again.effective.num_speculative_tokens == 3


def test_vllm_missing_num_speculative_tokens_with_a_speculators_draft_config(tmp_path):
    drafter = write_config(tmp_path / "speculator", SPECULATORS_DRAFTER)
    report = lint(vllm({"method": "eagle3", "model": drafter}))
    assert report.drafter_kind == "eagle3"
    (c,) = changes(report, "vllm.num_speculative_tokens_missing")
    # vLLM reads speculators' proposal_methods only when the checkpoint is the served model.
    assert "proposes 5" in c.message and "vllm serve <speculator dir>" in c.message
    assert report.fixes[0].flags == "--speculative-config.num_speculative_tokens 5"
    assert assert_fix_lints_clean(report).effective.num_speculative_tokens == 5
    # A draft config that carries n_predict supplies the value.
    with_n_predict = lint(
        vllm({"method": "eagle3", "model": "d"}), drafter_config={**EAGLE3_DRAFTER, "n_predict": 4}
    )
    assert changes(with_n_predict, "vllm.num_speculative_tokens_from_draft")[0].effective == 4
    assert not with_n_predict.has_problem and with_n_predict.effective.num_speculative_tokens == 4


def test_vllm_serving_a_speculators_checkpoint_directly(tmp_path):
    served = write_config(tmp_path / "speculator", SPECULATORS_DRAFTER)
    report = lint(["vllm", "serve", served], engine_version="0.33.0")
    assert not report.has_problem and report.effective.num_speculative_tokens == 5
    assert (
        report.effective.method == "eagle3" and changes(report, "vllm.speculators_served")[0].severity == INFO
    )
    old = lint(
        ["vllm", "serve", served, "--speculative-config", '{"num_speculative_tokens": 2}'],
        engine_version="0.27.0",
    )
    (c,) = changes(old, "vllm.speculators_served")
    assert c.severity == WARNING and "replaced" in c.message and old.effective.num_speculative_tokens == 5


def test_vllm_config_mistakes():
    spec = {
        "method": "eagle3",
        "model": "d",
        "num_speculative_tokens": 3,
        "tensor_parallel_size": 4,
        "num_spec_tokens": 2,
    }
    report = lint(vllm(spec, "-tp", "4"))
    assert changes(report, "vllm.tensor_parallel_size_key")[0].severity == PROBLEM
    assert changes(report, "vllm.unknown_keys")[0].given == ["num_spec_tokens"]
    again = assert_fix_lints_clean(report)
    fixed_spec = json.loads(report.fixed_argv[report.fixed_argv.index("--speculative-config") + 1])
    assert fixed_spec == {
        "method": "eagle3",
        "model": "d",
        "num_speculative_tokens": 3,
        "draft_tensor_parallel_size": 4,
    }
    assert again.effective.num_speculative_tokens == 3
    bad_tp = lint(vllm({"method": "eagle3", "model": "d", "num_speculative_tokens": 3, "draft_tensor_parallel_size": 2},
                       "--tensor-parallel-size", "8"))  # fmt: skip
    assert changes(bad_tp, "vllm.draft_tensor_parallel_size")[0].severity == PROBLEM
    assert_fix_lints_clean(bad_tp)


def test_vllm_method_eagle_with_an_eagle3_drafter_and_name_detection_history():
    given_eagle = lint(
        vllm({"method": "eagle", "model": "d", "num_speculative_tokens": 3}), drafter_config=EAGLE3_DRAFTER
    )
    assert changes(given_eagle, "vllm.eagle_with_eagle3_drafter")[0].severity == PROBLEM
    assert given_eagle.fixes[0].flags == "--speculative-config.method eagle3"
    assert_fix_lints_clean(given_eagle, drafter_config=EAGLE3_DRAFTER)
    # Until 0.10.1.1 a model named EAGLE3-... was detected as method "eagle"; 0.10.2 detects "eagle3".
    spec = {"model": "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B", "num_speculative_tokens": 3}
    old = lint(vllm(spec), engine_version="0.10.1.1")
    assert old.effective.method == "eagle" and changes(old, "vllm.eagle_with_eagle3_drafter")
    assert_fix_lints_clean(old, engine_version="0.10.1.1")
    new = lint(vllm(spec), engine_version="0.10.2")
    assert new.effective.method == "eagle3" and not new.has_problem


def test_vllm_legacy_flags_are_unknown_and_move_into_the_config():
    report = lint(["vllm", "serve", "m", "--speculative-model", "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B",
                   "--num-speculative-tokens", "4"], engine_version="0.33.0")  # fmt: skip
    assert len(changes(report, "vllm.legacy_flags")) == 2 and not report.starts
    again = assert_fix_lints_clean(report, engine_version="0.33.0")
    assert again.effective.num_speculative_tokens == 4 and again.effective.method == "eagle3"
    assert "--num-speculative-tokens" not in report.fixed_argv


# --------------------------------------------------------------------------------------------------------------
# Bad input: InputError, one line, naming the flag


@pytest.mark.parametrize(
    ("argv", "kwargs", "needle"),
    [
        (vllm("{method: eagle3}"), {}, "--speculative-config"),
        (vllm('["eagle3"]'), {}, "--speculative-config"),
        (vllm({"method": "eagle3", "model": "d", "num_speculative_tokens": "three"}), {},
         "--speculative-config.num_speculative_tokens"),
        ([*E3, "--speculative-num-steps"], {}, "--speculative-num-steps"),
        ([*E3, "--speculative-num-steps", "--speculative-eagle-topk", "1"], {}, "--speculative-num-steps"),
        ([*E3, "--speculative-eagle-topk", "four"], {}, "--speculative-eagle-topk"),
        ([*E3, "--speculative-num-draft-tokens", "2.5"], {}, "--speculative-num-draft-tokens"),
        (["vllm", "serve", "m", "--spec-tokens", "x"], {}, "--spec-tokens"),
        (["torchrun", "train.py", "--lr", "1e-4"], {}, "torchrun"),
        (["python", "-m", "http.server"], {}, "http.server"),
        (KIMI, {"engine": "vllm"}, "sglang"),
        (KIMI, {"engine": "tgi"}, "tgi"),
        (KIMI, {"engine_version": "0.4.3"}, "0.4.3"),
        (KIMI, {"engine_version": "latest"}, "latest"),
        ([], {}, "empty"),
    ],
)  # fmt: skip
def test_bad_input_raises_one_line_naming_the_flag(argv, kwargs, needle):
    with pytest.raises(InputError) as err:
        lint(argv, **kwargs)
    message = str(err.value)
    assert needle in message and "\n" not in message


def test_bad_drafter_config_path_names_the_path(tmp_path):
    with pytest.raises(InputError, match="drafter config not found"):
        lint([*E3, *sizes(3, 1, 4)], drafter_config=str(tmp_path / "missing"))
    (tmp_path / "config.json").write_text("{not json")
    with pytest.raises(InputError, match=r"config\.json"):
        lint([*E3, *sizes(3, 1, 4)], drafter_config=str(tmp_path))


# --------------------------------------------------------------------------------------------------------------
# Every row of the rule table, exercised


def _mtp(version: str) -> tuple:
    argv = [*EAGLE[:7], *sizes(3, 1, 4)]  # EAGLE, no draft path: the target's own MTP layer
    return (
        argv,
        {"engine_version": version, "target_arch": "DeepseekV3ForCausalLM"},
        "sglang.mtp_draft_path",
        INFO,
    )


def _auto(version: str, arch: str) -> tuple:
    return (E3, {"engine_version": version, "target_arch": arch}, "sglang.auto_choice", WARNING)


SPEC = {"method": "eagle3", "model": "d", "num_speculative_tokens": 3}
SHORT_DRAFTER = {
    **EAGLE3_DRAFTER,
    "max_position_embeddings": 2048,
}  # e.g. yuhuili/EAGLE3-LLaMA3.1-Instruct-8B
SA = [
    *SGL,
    "--model-path",
    "m",
    "--speculative-algorithm",
    "STANDALONE",
    "--speculative-draft-model-path",
    "D",
]
NGRAM = [*SGL, "--model-path", "m", "--speculative-algorithm", "NGRAM"]
SCENARIOS: dict[str, tuple] = {
    # SGLang
    "sg-no-algorithm": ([*SGL, "--model-path", "m", "--speculative-draft-model-path", "D", *sizes(3, 1, 4)], {},
                        "sglang.no_algorithm", PROBLEM),
    "sg-lower-case-old": ([*E3[:6], "eagle3", *E3[7:], *sizes(3, 1, 4)], {"engine_version": "0.5.10"},
                          "sglang.algorithm_choices", PROBLEM),
    "sg-lower-case-new": ([*E3[:6], "eagle3", *E3[7:], *sizes(3, 1, 4)], {}, "sglang.algorithm_upper", INFO),
    "sg-nextn": ([*EAGLE[:6], "NEXTN", *EAGLE[7:], *sizes(3, 1, 4)], {}, "sglang.nextn_alias", INFO),
    "sg-eagle-eagle3": ([*EAGLE, *sizes(3, 1, 4)], {"drafter_config": EAGLE3_DRAFTER},
                        "sglang.eagle_with_eagle3_drafter", PROBLEM),
    "sg-mrr-silent": ([*E3, *sizes(3, 1, 4)], {"engine_version": "0.5.3"}, "sglang.max_running_requests", WARNING),
    "sg-mrr": ([*E3, *sizes(3, 1, 4)], {}, "sglang.max_running_requests", WARNING),
    "sg-overlap-v1": ([*E3, *sizes(3, 1, 4)], {"engine_version": "0.5.3"}, "sglang.overlap_schedule", INFO),
    "sg-overlap-beta": ([*E3, *sizes(3, 1, 4)], {"engine_version": "0.5.4"}, "sglang.overlap_schedule", INFO),
    "sg-overlap-env-eagle": ([*E3, *sizes(3, 1, 4)], {"engine_version": "0.5.6"}, "sglang.overlap_schedule", INFO),
    "sg-overlap-env-eagle3": ([*E3, *sizes(3, 1, 4)], {"engine_version": "0.5.10"}, "sglang.overlap_schedule", INFO),
    "sg-spec-v2-topk": (["SGLANG_ENABLE_SPEC_V2=1", *E3, *sizes(3, 4, 8)], {"engine_version": "0.5.9"},
                        "sglang.spec_v2_topk", PROBLEM),
    "sg-overlap-v1-fallback": ([*E3, *sizes(3, 4, 8)], {"engine_version": "0.5.12"}, "sglang.overlap_schedule", INFO),
    "sg-overlap-env-off": (["SGLANG_ENABLE_SPEC_V2=false", *E3, *sizes(3, 1, 4)], {"engine_version": "0.5.13"},
                           "sglang.overlap_schedule", INFO),
    "sg-mixed-chunk": ([*E3, *sizes(3, 1, 4), "--enable-mixed-chunk"], {"engine_version": "0.5.18"},
                       "sglang.mixed_chunk_disabled", INFO),
    **{f"sg-mtp-{v}": _mtp(v) for v in ("0.4.6.post3", "0.4.8", "0.4.10", "0.5.5", "0.5.7", "0.5.8", "0.5.10", "0.5.11", "0.5.15",
                                         "0.5.23")},
    "sg-draft-missing": ([*E3[:6], "EAGLE3", *sizes(3, 1, 4)], {}, "sglang.draft_model_missing", PROBLEM),
    "sg-draft-missing-unknown": ([*EAGLE[:6], "EAGLE", *sizes(3, 1, 4)], {},
                                 "sglang.draft_model_missing_unknown_target", WARNING),
    "sg-partial-old": ([*E3, "--speculative-eagle-topk", "1"], {"engine_version": "0.5.18"},
                       "sglang.partial_specification", PROBLEM),
    "sg-partial": ([*E3, "--speculative-num-draft-tokens", "6"], {}, "sglang.partial_specification", PROBLEM),
    "sg-auto-local-config": (E3, {"engine_version": "0.4.6"}, "sglang.auto_choice_needs_local_config", PROBLEM),
    "sg-auto-choice-crashes": (E3, {"engine_version": "0.4.5"}, "sglang.auto_choice_crashes", PROBLEM),
    "sg-auto-0.4.6": _auto("0.4.6", "DeepseekV3ForCausalLM"),
    "sg-auto-0.4.8": _auto("0.4.8", "DeepseekV3ForCausalLM"),
    "sg-auto-0.5.2": _auto("0.5.2", "GptOssForCausalLM"),
    "sg-auto-0.5.5": _auto("0.5.5", "BailingMoeForCausalLM"),
    "sg-auto-0.5.7": _auto("0.5.7", "Glm4MoeForCausalLM"),
    "sg-auto-0.5.8": _auto("0.5.8", "Qwen3ForCausalLM"),
    "sg-auto-0.5.10": _auto("0.5.10", "GlmMoeDsaForCausalLM"),
    "sg-auto-0.5.23": _auto("0.5.23", "LlamaForCausalLM"),
    "sg-page-topk": ([*E3, *sizes(3, 4, 8), "--page-size", "16"], {"engine_version": "0.4.6"},
                     "sglang.page_size_topk_to_1", PROBLEM),
    "sg-page-auto-topk": ([*E3, "--page-size", "16"], {"engine_version": "0.4.8", "target_arch": "LlamaForCausalLM"},
                          "sglang.page_size_auto_topk_to_1", WARNING),
    "sg-page-flashinfer-mtp": ([*E3, *sizes(3, 1, 4), "--page-size", "16", "--attention-backend", "flashinfer"],
                               {"engine_version": "0.5.1", "target_arch": "DeepseekV3ForCausalLM"},
                               "sglang.page_size_flashinfer_mtp", PROBLEM),
    "sg-topk-unset": ([*E3, "--speculative-num-steps", "3"], {}, "sglang.topk_unset", PROBLEM),
    "sg-trtllm": ([*E3, *sizes(3, 4, 8), "--decode-attention-backend", "trtllm_mha"], {}, "sglang.trtllm_mha_topk",
                  PROBLEM),
    "sg-rejection": ([*E3, *sizes(3, 4, 8), "--speculative-use-rejection-sampling"], {},
                     "sglang.rejection_sampling_topk", PROBLEM),
    "sg-chain": (KIMI, {}, "sglang.chain_rule", PROBLEM),
    "sg-chain-fill": ([*E3, "--speculative-num-steps", "3", "--speculative-eagle-topk", "1"], {},
                      "sglang.chain_rule_fill", INFO),
    "sg-page-tree-0.5.3": ([*E3, *sizes(3, 4, 8), "--page-size", "16", "--attention-backend", "fa3"],
                           {"engine_version": "0.5.3"}, "sglang.page_size_tree_backend", PROBLEM),
    "sg-page-tree-0.5.10": ([*E3, *sizes(3, 4, 8), "--page-size", "16", "--attention-backend", "triton"],
                            {"engine_version": "0.5.10"}, "sglang.page_size_tree_backend", PROBLEM),
    "sg-page-tree-0.5.23": ([*E3, *sizes(3, 4, 8), "--page-size", "16", "--attention-backend", "flashmla"], {},
                            "sglang.page_size_tree_backend", PROBLEM),
    "sg-page-tree-auto": ([*E3, *sizes(3, 4, 8), "--page-size", "16"], {}, "sglang.page_size_tree_backend_auto",
                          WARNING),
    "sg-ndt-unset": ([*E3, "--speculative-num-steps", "3", "--speculative-eagle-topk", "4"], {},
                     "sglang.num_draft_tokens_unset", PROBLEM),
    "sg-nothing-proposed": ([*E3, *sizes(3, 2, 1)], {}, "sglang.nothing_proposed", PROBLEM),
    "sg-tree-pool": ([*E3, *sizes(2, 2, 10)], {}, "sglang.tree_pool_too_small", PROBLEM),
    "sg-token-map": ([*E3, *sizes(3, 1, 4), "--speculative-token-map", "m.pt"], {}, "sglang.token_map_ignored",
                     WARNING),
    "sg-adaptive": ([*E3, *sizes(3, 1, 4), "--speculative-adaptive"], {"engine_version": "0.5.22"}, "sglang.adaptive",
                    WARNING),
    "sg-unknown-algorithm": ([*SGL, "--model-path", "m", "--speculative-algorithm", "MEDUSA"], {},
                             "sglang.algorithm_family", PROBLEM),
    "sg-backend-default": ([*E3, *sizes(3, 1, 4)], {"gpu": "h200", "target_arch": "LlamaForCausalLM"},
                           "sglang.attention_backend_default", INFO),
    "sg-backend-page": ([*E3, *sizes(3, 2, 6)], {"gpu": "b200", "target_arch": "KimiK25ForConditionalGeneration"},
                        "sglang.backend_page_size", WARNING),
    "sg-backend-gpu": ([*E3, *sizes(3, 1, 4), "--attention-backend", "trtllm_mla"],
                       {"gpu": "h200", "target_arch": "KimiK25ForConditionalGeneration"}, "sglang.backend_gpu", PROBLEM),
    "sg-draft-backend-mla": ([*SGL, "--model-path", str(EXAMPLES / "kimi-k25" / "target"), "--trust-remote-code",
                              "--speculative-algorithm", "EAGLE3", "--speculative-draft-model-path",
                              str(EXAMPLES / "kimi-k25" / "drafter"), *sizes(3, 1, 4)], {"gpu": "b200"},
                             "sglang.draft_backend_mla_only", PROBLEM),
    "sg-backend-default-old": ([*E3, *sizes(3, 1, 4)], {"gpu": "b200", "engine_version": "0.5.13",
                                                       "target_arch": "KimiK25ForConditionalGeneration"},
                               "sglang.attention_backend_default_mla", INFO),
    "sg-backend-page-old": ([*E3, *sizes(3, 1, 4)], {"gpu": "b200", "engine_version": "0.5.9",
                                                    "target_arch": "DeepseekV3ForCausalLM"},
                            "sglang.backend_page_size_mla", WARNING),
    "sg-adaptive-disabled": ([*E3, *sizes(3, 4, 8), "--speculative-adaptive"], {}, "sglang.adaptive_disabled",
                             WARNING),
    "sg-adaptive-params": ([*E3, "--speculative-adaptive"], {}, "sglang.adaptive_params", WARNING),
    "sg-adaptive-steps": ([*E3, *sizes(4, 1, 5), "--speculative-adaptive"], {}, "sglang.adaptive_steps", PROBLEM),
    "sg-standalone-dp": ([*SA, *sizes(3, 1, 4), "--dp-size", "2", "--enable-dp-attention"], {},
                         "sglang.standalone_dp_attention", PROBLEM),
    "sg-standalone-auto": (SA, {}, "sglang.auto_choice_standalone", WARNING),
    "sg-ngram-topk": ([*NGRAM, "--speculative-eagle-topk", "4"], {}, "sglang.ngram_topk", PROBLEM),
    "sg-ngram-defaults": (NGRAM, {}, "sglang.ngram_defaults", WARNING),
    "sg-ngram-page": ([*NGRAM, "--page-size", "16", "--attention-backend", "fa3"], {}, "sglang.ngram_page_size",
                      PROBLEM),
    "sg-ngram-dp": ([*NGRAM, "--dp-size", "2", "--enable-dp-attention"], {}, "sglang.ngram_dp_attention", PROBLEM),
    "sg-dp-workers": ([*E3, *sizes(3, 1, 4), "--dp-size", "8", "--enable-dp-attention"], {},
                      "sglang.max_running_per_dp_worker", WARNING),
    "sg-dp-workers-old": ([*E3, *sizes(3, 1, 4), "--dp-size", "8", "--enable-dp-attention"],
                          {"engine_version": "0.5.14"}, "sglang.max_running_per_dp_worker", WARNING),
    # vLLM
    "vl-legacy": (["vllm", "serve", "m", "--speculative-model", "d", "--num-speculative-tokens", "3"], {},
                  "vllm.legacy_flags", PROBLEM),
    "vl-short-unknown": (["vllm", "serve", "m", "--speculative-config", json.dumps({"method": "eagle3", "model": "d"}),
                          "--spec-tokens", "3"], {"engine_version": "0.21.0"}, "vllm.short_flags_unknown", PROBLEM),
    "vl-short": (["vllm", "serve", "m", "--spec-method", "eagle3", "--spec-model", "d", "--spec-tokens", "3"], {},
                 "vllm.short_flags", INFO),
    "vl-short-conflict": (vllm(SPEC, "--spec-tokens", "4"), {}, "vllm.short_flags_conflict", PROBLEM),
    "vl-dotted": (vllm(SPEC, "--speculative-config.num_speculative_tokens", "2"), {},
                  "vllm.dotted_config_replaces_json", WARNING),
    "vl-dashes-old": (vllm({"method": "eagle3", "model": "d", "num-speculative-tokens": 3}),
                      {"engine_version": "0.24.0"}, "vllm.config_key_dashes", PROBLEM),
    "vl-dashes": (vllm({"method": "eagle3", "model": "d", "num-speculative-tokens": 3}), {}, "vllm.config_key_dashes",
                  INFO),
    "vl-tp-key": (vllm({**SPEC, "tensor_parallel_size": 1}), {}, "vllm.tensor_parallel_size_key", PROBLEM),
    "vl-unknown-key": (vllm({**SPEC, "speculative_token_tree": "[(0,)]"}), {}, "vllm.unknown_keys", PROBLEM),
    "vl-model-missing": (vllm({"method": "eagle3", "num_speculative_tokens": 3}), {}, "vllm.model_missing", PROBLEM),
    "vl-detect-old": (vllm({"model": "x/eagle3-llama", "num_speculative_tokens": 3}), {"engine_version": "0.9.0"},
                      "vllm.method_detect", INFO),
    "vl-detect-0.30": (vllm({"model": "x/eagle3-llama", "num_speculative_tokens": 3}), {"engine_version": "0.30.0"},
                       "vllm.method_detect", INFO),
    "vl-detect": (vllm({"model": "x/eagle3-llama", "num_speculative_tokens": 3}), {}, "vllm.method_detect", INFO),
    "vl-detect-0.33": (vllm({"method": "draft_model", "model": "x/eagle3-llama", "num_speculative_tokens": 3}), {"engine_version": "0.33.0"}, "vllm.method_detect", INFO),
    "vl-method-case": (vllm({**SPEC, "method": "EAGLE3"}), {}, "vllm.method_choices", PROBLEM),
    "vl-method-case-0.33": (vllm({**SPEC, "method": "EAGLE3"}), {"engine_version": "0.33.0"}, "vllm.method_choices", PROBLEM),
    "vl-model-free": (vllm({"model": "ngram", "num_speculative_tokens": 3}), {}, "vllm.model_free_methods", INFO),
    "vl-mtp-model": (vllm({"method": "mtp", "num_speculative_tokens": 1}), {}, "vllm.mtp_model", INFO),
    "vl-suffix": (vllm({"method": "suffix"}), {"engine_version": "0.33.0"}, "vllm.suffix_decoding", WARNING),
    "vl-suffix-0.34": (vllm({"method": "suffix"}), {"engine_version": "0.34.0"}, "vllm.suffix_decoding", INFO),
    "vl-mtp-tokens": (vllm({"method": "mtp", "model": "d"}), {}, "vllm.mtp_tokens_required", PROBLEM),
    "vl-mtp-unsupported": (vllm({"method": "mtp", "model": "d", "num_speculative_tokens": 1}),
                           {"drafter_config": {"architectures": ["LlamaForCausalLM"], "model_type": "llama"},
                            "engine_version": "0.33.0"}, "vllm.mtp_unsupported_target", PROBLEM),
    "vl-mtp-no-layers": (vllm({"method": "mtp", "model": "d", "num_speculative_tokens": 1}),
                         {"drafter_config": {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3",
                                             "num_nextn_predict_layers": 0}, "engine_version": "0.34.0"},
                         "vllm.mtp_unsupported_target", PROBLEM),
    "vl-mtp-as-draft": (vllm({"method": "mtp", "model": "d", "num_speculative_tokens": 1}),
                        {"drafter_config": {"architectures": ["LlamaForCausalLM"], "model_type": "llama"},
                         "engine_version": "0.34.0"}, "vllm.mtp_target_as_draft", PROBLEM),
    "vl-eagle3-as-draft-model": (vllm({"model": "x/drafter", "num_speculative_tokens": 3}),
                                 {"drafter_config": EAGLE3_DRAFTER}, "vllm.eagle3_drafter_as_draft_model", PROBLEM),
    "vl-undetected": (vllm({"model": "x/drafter", "num_speculative_tokens": 3}), {}, "vllm.method_undetected", WARNING),
    "vl-eagle-eagle3": (vllm({**SPEC, "method": "eagle"}), {"drafter_config": EAGLE3_DRAFTER},
                        "vllm.eagle_with_eagle3_drafter", PROBLEM),
    "vl-n-predict": (vllm({"method": "eagle3", "model": "d"}), {"drafter_config": {**EAGLE3_DRAFTER, "n_predict": 2}},
                     "vllm.num_speculative_tokens_from_draft", INFO),
    "vl-k-missing": (vllm({"method": "eagle3", "model": "d"}), {}, "vllm.num_speculative_tokens_missing", PROBLEM),
    "vl-draft-context": (vllm(SPEC, "--max-model-len", "8k"), {"drafter_config": SHORT_DRAFTER,
                         "engine_version": "0.26.0"}, "vllm.draft_context_gate", PROBLEM),
    "vl-draft-context-v1": (vllm(SPEC, "--max-model-len", "8k"), {"drafter_config": SHORT_DRAFTER,
                            "engine_version": "0.32.0"}, "vllm.draft_context_gate_v1", WARNING),
    "vl-k-zero": (vllm({**SPEC, "num_speculative_tokens": 0}), {}, "vllm.num_speculative_tokens_positive", PROBLEM),
    "vl-draft-tp": (vllm({**SPEC, "draft_tensor_parallel_size": 2}, "-tp", "4"), {}, "vllm.draft_tensor_parallel_size",
                    PROBLEM),
    "vl-draft-tp-default": (vllm(SPEC, "-tp", "4"), {}, "vllm.draft_tensor_parallel_size_default", INFO),
    "vl-token-tree": (vllm({**SPEC, "speculative_token_tree": "[(0,), (1,), (0, 0)]"}), {"engine_version": "0.14.0"},
                      "vllm.speculative_token_tree", INFO),
    "vl-chain": (vllm(SPEC), {}, "vllm.chain", INFO),
    "vl-speculators-unread": (vllm({**SPEC, "model": "x/speculator"}), {"drafter_config": SPECULATORS_DRAFTER,
                              "engine_version": "0.10.0"}, "vllm.speculators_unread", PROBLEM),
    "vl-float32-v0": (vllm(SPEC, "--dtype", "float32"), {"engine_version": "0.9.1"}, "vllm.eagle3_on_v0",
                      PROBLEM),
    # The draft model's own settings and arguments the engines silently drop (engines/sglang/draft.py, engines/vllm/draft.py)
    "sg-cuda-graph-taps": ([*SGL, "--model-path", str(ZOO_TARGET), *E3[5:], *sizes(3, 1, 4)],
                           {"engine_version": "0.5.10", "drafter_config": ZOO_IDS_035},
                           "sglang.cuda_graph_default_taps", PROBLEM),
    "sg-draft-quant": ([*E3, *sizes(3, 1, 4), "--quantization", "fp8"], {"drafter_config": EAGLE3_DRAFTER},
                       "sglang.draft_quantization_inherited", PROBLEM),
    "sg-draft-quant-old": ([*E3, *sizes(3, 1, 4), "--quantization", "fp8"],
                           {"engine_version": "0.5.4", "drafter_config": EAGLE3_DRAFTER},
                           "sglang.draft_quantization_inherited", PROBLEM),
    "sg-draft-quant-unknown": ([*E3, *sizes(3, 1, 4), "--quantization", "fp8"], {},
                               "sglang.draft_quantization_inherited_unknown_drafter", WARNING),
    "sg-draft-ctx": ([*E3, *sizes(3, 1, 4), "--context-length", "131072"], {"drafter_config": SHORT_DRAFTER},
                     "sglang.draft_context_length", PROBLEM),
    "sg-draft-ctx-old": ([*E3, *sizes(3, 1, 4), "--context-length", "131072"],
                         {"engine_version": "0.4.10", "drafter_config": SHORT_DRAFTER},
                         "sglang.draft_context_length_raised", WARNING),
    "sg-draft-ctx-env": (["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1", *E3, *sizes(3, 1, 4), "--context-length",
                          "131072"], {"drafter_config": SHORT_DRAFTER}, "sglang.draft_context_length_raised",
                         WARNING),
    "sg-draft-ctx-old-env-off": (["SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=0", *E3, *sizes(3, 1, 4),
                                  "--context-length", "131072"],
                                 {"engine_version": "0.4.10", "drafter_config": SHORT_DRAFTER},
                                 "sglang.draft_context_length", PROBLEM),
    "sg-not-read": ([*E3, *sizes(3, 1, 4), "--speculative-ngram-max-trie-depth", "12"], {},
                    "sglang.argument_not_read", PROBLEM),
    "sg-flag-missing": ([*E3, *sizes(3, 1, 4), "--speculative-draft-model-quantization", "unquant"],
                        {"engine_version": "0.5.4"}, "sglang.flag_not_in_release", PROBLEM),
    "vl-draft-tp-ignored": (vllm({**SPEC, "draft_tensor_parallel_size": 1}, "-tp", "4"), {},
                            "vllm.draft_tensor_parallel_size_ignored", PROBLEM),
    "vl-draft-model-tp": (vllm({"method": "draft_model", "model": "x/small", "num_speculative_tokens": 3,
                                "draft_tensor_parallel_size": 1}, "-tp", "2"), {},
                          "vllm.draft_model_tensor_parallel_size", PROBLEM),
    "vl-mtp-revision": (["vllm", "serve", "deepseek-ai/DeepSeek-V3", "--revision", "abc123", "--speculative-config",
                         json.dumps({"method": "mtp", "num_speculative_tokens": 1})], {}, "vllm.mtp_revision",
                        PROBLEM),
    "vl-mtp-quant-old": (["vllm", "serve", "deepseek-ai/DeepSeek-V3", "--quantization", "fp8",
                          "--speculative-config", json.dumps({"method": "deepseek_mtp", "num_speculative_tokens": 1})],
                         {"engine_version": "0.8.5"}, "vllm.mtp_quantization", PROBLEM),
    # 0.9.0's V1 proposer builds the MTP layers with the target's engine config (draft-settings records); V0 not
    "vl-mtp-quant-v1": (["vllm", "serve", "deepseek-ai/DeepSeek-V3", "--quantization", "fp8", "--speculative-config",
                         json.dumps({"method": "deepseek_mtp", "num_speculative_tokens": 1})],
                        {"engine_version": "0.9.0"}, "vllm.mtp_quantization", INFO),
    "vl-mtp-quant-v0": (["VLLM_USE_V1=0", "vllm", "serve", "deepseek-ai/DeepSeek-V3", "--quantization", "fp8",
                         "--speculative-config", json.dumps({"method": "deepseek_mtp", "num_speculative_tokens": 1})],
                        {"engine_version": "0.9.0"}, "vllm.mtp_quantization", PROBLEM),
    "vl-mtp-quant": (["vllm", "serve", "deepseek-ai/DeepSeek-V3", "--quantization", "fp8", "--speculative-config",
                      json.dumps({"method": "mtp", "num_speculative_tokens": 1})], {}, "vllm.mtp_quantization", INFO),
    "vl-eagle3-target-quant": ([*vllm(SPEC), "--quantization", "fp8"], {"engine_version": "0.11.0"},
                               "vllm.eagle3_head_takes_target_quantization", PROBLEM),
    "vl-engine-filled": (vllm({**SPEC, "enable_chunked_prefill": True}), {"engine_version": "0.9.0"},
                         "vllm.engine_filled_keys", PROBLEM),
    "vl-not-read": (vllm({**SPEC, "prompt_lookup_max": 5}), {}, "vllm.key_not_read", PROBLEM),
    "vl-not-read-v0": (vllm({**SPEC, "disable_by_batch_size": 4}), {"engine_version": "0.9.0"}, "vllm.key_not_read",
                       PROBLEM),
    "vl-not-read-tree": (vllm({**SPEC, "speculative_token_tree": "[(0,), (1,)]"}), {"engine_version": "0.9.0"},
                         "vllm.key_not_read", PROBLEM),
    "vl-mrv2": (vllm({**SPEC, "disable_padded_drafter_batch": True}), {"engine_version": "0.33.0"}, "vllm.mrv2_ignores_key", PROBLEM),
    # 0.34.0 removes the V1 runner (the env that picked it is refused) and refuses parallel drafting with EAGLE
    "vl-v1-removed": (["VLLM_USE_V2_MODEL_RUNNER=0", *vllm(SPEC)], {"engine_version": "0.34.0"}, "vllm.v1_runner_removed", PROBLEM),
    "vl-kv-fast-prefill": (vllm(SPEC, "--kv-sharing-fast-prefill"), {"engine_version": "0.20.0"}, "vllm.kv_sharing_fast_prefill_eagle", PROBLEM),
    "vl-draft-len-refused": (vllm({**SPEC, "max_model_len": 4096}, "--max-model-len", "8192"), {"drafter_config": SHORT_DRAFTER, "engine_version": "0.20.0"}, "vllm.draft_max_model_len_refused", PROBLEM),
    "vl-served-lowered": (vllm(SPEC, "--max-model-len", "8k"), {"drafter_config": {**SHORT_DRAFTER, "rope_scaling": {"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512}}, "engine_version": "0.34.0"}, "vllm.served_length_lowered", WARNING),
    "vl-adaptive-old": (vllm({**SPEC, "enable_adaptive_verification": True}), {"engine_version": "0.28.0"}, "vllm.adaptive_verification", PROBLEM),
    "vl-adaptive-needs": (vllm({**SPEC, "enable_adaptive_verification": True}, "--enforce-eager"), {"engine_version": "0.30.0"}, "vllm.adaptive_verification_needs", PROBLEM),
    "vl-v1-lacks": (["VLLM_USE_V2_MODEL_RUNNER=0", *vllm({**SPEC, "draft_lm_head_quantization": "fp8"})], {"engine_version": "0.33.0"}, "vllm.v1_runner_lacks", PROBLEM),
    "vl-v1-lacks-either": (vllm({**SPEC, "enable_adaptive_verification": True}), {"engine_version": "0.32.0"}, "vllm.v1_runner_lacks_either", WARNING),
    "vl-adaptive-argmax": (vllm({**SPEC, "enable_adaptive_verification": True, "use_local_argmax_reduction": True}), {"engine_version": "0.34.0"}, "vllm.adaptive_verification", PROBLEM),
    "vl-draft-dcp": (vllm({**SPEC, "draft_decode_context_parallel_size": 2}, "--decode-context-parallel-size", "4"), {"engine_version": "0.34.0"}, "vllm.draft_dcp", PROBLEM),
    "vl-method-option": (vllm({**SPEC, "xpress_topc": 0}), {"engine_version": "0.34.0"}, "vllm.method_option_unsupported", PROBLEM),
    "vl-parallel-drafting": (vllm({**SPEC, "parallel_drafting": True}), {"engine_version": "0.34.0"}, "vllm.parallel_drafting_refused", PROBLEM),
    "vl-eagle3-v0": (vllm(SPEC), {"engine_version": "0.8.5"}, "vllm.eagle3_on_v0", PROBLEM),
    # how a verify accepts drafts (engines/vllm/sampling.py): the release's names, the synthetic and FLy keys
    "vl-sample-value": (vllm({**SPEC, "rejection_sample_method": "strict"}), {"engine_version": "0.33.0"}, "vllm.sample_method_value", PROBLEM),
    "vl-synthetic-alone": (vllm({**SPEC, "synthetic_acceptance_length": 2.0}), {"engine_version": "0.34.0"}, "vllm.synthetic_keys_alone", PROBLEM),
    "vl-synthetic-rates": (vllm({**SPEC, "rejection_sample_method": "synthetic"}), {"engine_version": "0.34.0"}, "vllm.synthetic_rates", PROBLEM),
    "vl-fly-window": (vllm({**SPEC, "rejection_sample_method": "fly", "fly_window_size": 3}), {"engine_version": "0.33.0"}, "vllm.fly_settings", PROBLEM),
    "vl-lossy-verify": (vllm({**SPEC, "rejection_sample_method": "synthetic", "synthetic_acceptance_length": 2.5}), {"engine_version": "0.34.0"}, "vllm.lossy_verify", WARNING),
    "vl-eagle3-v0-env": (["VLLM_USE_V1=0", *vllm(SPEC)], {"engine_version": "0.9.2"}, "vllm.eagle3_on_v0", PROBLEM),
    # the release's own launch parser (tests/test_launch_parsers.py): a prefix of one flag, of several, no flag
    "sg-flag-prefix": ([*SGL, "--model-path", "org/target", "--speculative-algo", "EAGLE3",
                        "--speculative-draft-model-path", "D", *sizes(3, 1, 4)], {"engine_version": "0.5.23"},
                       "sglang.flag_prefix", INFO),
    "sg-flag-ambiguous": ([*SGL, "--model-path", "org/target", "--speculative-algorithm", "EAGLE3",
                           "--speculative-draft", "D", *sizes(3, 1, 4)], {"engine_version": "0.5.23"},
                          "sglang.flag_ambiguous", PROBLEM),
    "sg-flag-unknown": ([*E3, *sizes(3, 1, 4), "--bogus-flag", "1"], {"engine_version": "0.5.23"},
                        "sglang.flag_unknown", PROBLEM),
    "vl-flag-prefix": (vllm(SPEC, "--tensor-parallel", "2"), {"engine_version": "0.33.0"}, "vllm.flag_prefix", INFO),
    "vl-flag-ambiguous": (vllm(SPEC, "--spec-m", "eagle3"), {"engine_version": "0.33.0"}, "vllm.flag_ambiguous",
                          PROBLEM),
    "vl-flag-unknown": (vllm(SPEC, "--bogus-flag", "1"), {"engine_version": "0.33.0"}, "vllm.flag_unknown", PROBLEM),
    # async scheduling and speculative decoding (vllm PRs #24799, #31998)
    "vl-async-spec": (vllm(SPEC, "--async-scheduling"), {"engine_version": "0.11.0"}, "vllm.async_scheduling_speculative", PROBLEM),
    "vl-async-padded": (vllm({**SPEC, "disable_padded_drafter_batch": True}, "--async-scheduling"), {"engine_version": "0.32.0"}, "vllm.async_scheduling_padded_drafter", PROBLEM),
    "vl-async-padded-v1": (["VLLM_USE_V2_MODEL_RUNNER=0", *vllm({**SPEC, "disable_padded_drafter_batch": True}, "--async-scheduling")], {"engine_version": "0.33.0"}, "vllm.async_scheduling_padded_drafter", PROBLEM),
    "vl-async-padded-either": (vllm({**SPEC, "disable_padded_drafter_batch": True}, "--async-scheduling"), {"engine_version": "0.33.0"}, "vllm.async_scheduling_padded_drafter_v1", WARNING),
    "vl-async-off": (vllm({**SPEC, "disable_padded_drafter_batch": True}), {"engine_version": "0.20.0"}, "vllm.async_scheduling_off_padded_drafter", WARNING),
    # spec v2 and the auto tree (sglang#13352), per-model backend defaults (sglang#9471), rejection sampling
    "sg-spec-v2-auto-topk-env": (["SGLANG_ENABLE_SPEC_V2=1", *E3], {"engine_version": "0.5.10", "target_arch": "LlamaForCausalLM"}, "sglang.spec_v2_auto_topk", PROBLEM),
    "sg-spec-v2-auto-topk": (E3, {"engine_version": "0.5.11", "target_arch": "LlamaForCausalLM"}, "sglang.spec_v2_auto_topk", PROBLEM),
    "sg-backend-arch": ([*E3, *sizes(3, 4, 8)], {"engine_version": "0.5.10", "target_arch": "GptOssForCausalLM", "gpu": "b200"}, "sglang.attention_backend_default_arch", INFO),
    "sg-block-verification": ([*E3, "--speculative-use-block-verification", *sizes(3, 1, 4)], {}, "sglang.block_verification_rejection_sampling", INFO),
    "sg-rejection-thresholds": ([*E3, *sizes(3, 1, 4), "--speculative-use-rejection-sampling", "--speculative-accept-threshold-acc", "0.5"], {}, "sglang.rejection_sampling_thresholds", PROBLEM),
    "sg-overlap-forced-on-eagle": (["SGLANG_ENABLE_SPEC_V2=1", *SGL, "--model-path", "org/target", "--speculative-algorithm", "EAGLE", "--speculative-draft-model-path", "d", *sizes(3, 1, 4), "--disable-overlap-schedule"], {"engine_version": "0.5.6"}, "sglang.overlap_schedule_forced_on", WARNING),
    "sg-overlap-forced-on": (["SGLANG_ENABLE_SPEC_V2=1", *E3, *sizes(3, 1, 4), "--disable-overlap-schedule"], {"engine_version": "0.5.10"}, "sglang.overlap_schedule_forced_on", WARNING),
    # the draft's heads over the target's TP (vLLM's config check; SGLang's attention assert at load)
    "vl-draft-heads-tp": (vllm(SPEC, "--tensor-parallel-size", "16"), {"engine_version": "0.20.0", "drafter_config": {"architectures": ["LlamaForCausalLMEagle3"], "eagle_config": {}, "num_attention_heads": 40, "num_key_value_heads": 8}}, "vllm.draft_heads_tp", PROBLEM),
    "sg-draft-heads-tp": ([*E3, *sizes(3, 1, 4), "--tp-size", "8"], {"engine_version": "0.5.23", "drafter_config": {"architectures": ["LlamaForCausalLMEagle3"], "num_attention_heads": 32, "num_key_value_heads": 3}}, "sglang.draft_heads_tp", PROBLEM),
    # Llama-4's attention-backend assert (before 0.5.6 ahead of any default), spec v2 running a tree (0.5.4.post1-0.5.6)
    "sg-llama4-backend-assert": ([*E3, *sizes(3, 1, 4)], {"engine_version": "0.5.5", "target_arch": "Llama4ForConditionalGeneration", "gpu": "b200"}, "sglang.llama4_attention_backend", PROBLEM),
    "sg-llama4-backend-given": ([*E3, *sizes(3, 1, 4), "--attention-backend", "flashinfer"], {"engine_version": "0.5.10", "target_arch": "Llama4ForConditionalGeneration", "gpu": "h200"}, "sglang.llama4_attention_backend", PROBLEM),
    "sg-spec-v2-tree-size": (["SGLANG_ENABLE_SPEC_V2=1", *E3, *sizes(5, 4, 8)], {"engine_version": "0.5.5"}, "sglang.spec_v2_tree", PROBLEM),
    "sg-spec-v2-tree": (["SGLANG_ENABLE_SPEC_V2=1", *E3, *sizes(5, 4, 8)], {"engine_version": "0.5.6"}, "sglang.spec_v2_tree", PROBLEM),
}  # fmt: skip
NOT_MECHANICAL = {"vl-v1-removed", "vl-draft-heads-tp", "sg-draft-heads-tp", "vl-eagle3-v0", "vl-eagle3-v0-env", "vl-flag-ambiguous", "sg-draft-missing", "vl-model-missing", "sg-unknown-algorithm", "vl-mtp-unsupported", "vl-mtp-no-layers", "vl-mtp-as-draft",
                  "sg-draft-quant-old", "vl-eagle3-target-quant", "vl-speculators-unread", "vl-synthetic-rates"}  # fmt: skip


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_rule_row(name):
    argv, kwargs, rule, severity = SCENARIOS[name]
    report = lint(argv, **kwargs)
    json.dumps(report.to_dict())
    found = changes(report, rule)
    assert found, [c.rule for c in report.changes]
    assert {c.severity for c in found} == {severity}
    if severity == PROBLEM:
        assert all(any(f.rule == c.rule for f in report.fixes) for c in report.problems)
        if name in NOT_MECHANICAL:
            assert report.fixed_argv is None and not all(f.mechanical for f in report.fixes)
        else:
            assert_fix_lints_clean(report, **{k: v for k, v in kwargs.items() if k != "engine"})


def test_every_rule_row_is_exercised_and_cites_a_source(tmp_path):
    served = write_config(tmp_path / "speculator", SPECULATORS_DRAFTER)  # rows that need a local checkpoint
    target = write_config(tmp_path / "llama", {"architectures": ["LlamaForCausalLM"], "vocab_size": 128256})
    small = write_config(tmp_path / "qwen", {"architectures": ["Qwen3ForCausalLM"], "vocab_size": 151936})
    vocab = [
        "vllm",
        "serve",
        target,
        "--speculative-config",
        json.dumps({"method": "draft_model", "model": small, "num_speculative_tokens": 3}),
    ]
    runs = [*SCENARIOS.values(), (["vllm", "serve", served], {"engine_version": "0.27.0"}, "", ""),
            (["vllm", "serve", served], {"engine_version": "0.33.0"}, "", ""), (vocab, {}, "", "")]  # fmt: skip
    seen = set()
    for argv, kwargs, _rule, _severity in runs:
        seen |= {(c.rule, c.versions) for c in lint(argv, **kwargs).changes}
    rows = {(r.name, r.versions) for r in RULES}
    assert rows - seen == set()
    for r in RULES:
        assert r.citation and r.severity in (PROBLEM, WARNING, INFO) and r.checked, r.name
        assert r.severity != PROBLEM or r.fix is not None, r.name


def test_rules_for_a_version_are_in_engine_order():
    names = [r.name for r in rules_for("sglang", "0.5.23")]
    assert (
        names.index("sglang.partial_specification")
        < names.index("sglang.auto_choice")
        < names.index("sglang.chain_rule")
    )
    assert "sglang.chain_rule" not in [r.name for r in rules_for("sglang", "0.4.5")]
    # the launch stops at argparse before any of them: said last, so a row that knows a flag speaks for it first
    names = [r.name for r in rules_for("vllm")]
    assert names[-2:] == ["vllm.flag_ambiguous", "vllm.flag_unknown"] and names[-3] == "vllm.chain"
    assert names[0] == "vllm.flag_prefix"


# --------------------------------------------------------------------------------------------------------------
# Property: the topk-1 rule always holds, and a fixed command never has a problem


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    steps=st.integers(0, 12),
    topk=st.integers(0, 6),
    ndt=st.integers(0, 40),
    version=st.sampled_from(SGLANG_CHECKED),
    arch=st.sampled_from([None, "LlamaForCausalLM", "DeepseekV3ForCausalLM"]),
)
def test_effective_settings_and_fixed_argv_property(steps, topk, ndt, version, arch):
    report = lint([*E3, *sizes(steps, topk, ndt)], engine_version=version, target_arch=arch)
    eff = report.effective
    if eff.topk == 1 and version != "0.4.5":  # 0.4.5 predates the rule
        assert eff.num_draft_tokens == eff.num_steps + 1
    if report.has_problem:
        assert report.fixed_argv is not None
        again = lint(report.fixed_argv, engine_version=version, target_arch=arch)
        assert not again.has_problem
        g = again.effective
        assert (
            g.num_steps >= 1
            and g.topk >= 1
            and 2 <= g.num_draft_tokens <= g.topk + (g.num_steps - 1) * g.topk**2 + 1
        )


# --------------------------------------------------------------------------------------------------------------
# Property: no command the engines accept exits 2 (the generator of `make test-engines`, without the engines)


@pytest.fixture(scope="module")
def generated_models(tmp_path_factory):
    from engines.generate import write_models

    return write_models(tmp_path_factory.mktemp("models"))


@settings(max_examples=150, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data(), gpu=st.sampled_from(["h200", "b200", "unknown"]))
def test_no_generated_launch_is_bad_input(generated_models, data, gpu):
    from engines.generate import fill, sglang_commands, vllm_commands

    argv = fill(data.draw(st.one_of(sglang_commands(), vllm_commands())), generated_models)
    report = lint(argv, gpu=gpu)  # never InputError: every generated command is one the engine parses
    json.dumps(report.to_dict())
    assert report.starts_args or report.failing


# --------------------------------------------------------------------------------------------------------------
# The GPU as an input, and --engine-code, through the CLI (real subprocesses)

KIMI_EXAMPLE = Path(eaglewire.__file__).parent / "examples" / "kimi-k25"


def kimi_example(topk: int = 1) -> list[str]:
    text = (KIMI_EXAMPLE / "launch.txt").read_text().strip()
    argv = text.format(target=KIMI_EXAMPLE / "target", drafter=KIMI_EXAMPLE / "drafter").split()
    return [*argv[:-6], *sizes(3, 2, 6)] if topk == 2 else argv


def run_lint(*args: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, COLUMNS="200")
    return subprocess.run([sys.executable, "-m", "eaglewire.cli", "lint", *args], capture_output=True, text=True,
                          env=env, timeout=300)  # fmt: skip


def test_a_kimi_tree_starts_on_an_h200_and_is_refused_on_a_b200():
    h200 = lint(kimi_example(topk=2), gpu="h200")
    b200 = lint(kimi_example(topk=2), gpu="b200")
    assert h200.starts_args and not h200.has_problem
    assert [c.effective for c in changes(h200, "sglang.attention_backend_default")] == ["fa3"]
    assert [c.effective for c in changes(b200, "sglang.attention_backend_default")] == ["trtllm_mla"]
    assert [c.effective for c in changes(b200, "sglang.backend_page_size")] == [64]
    # and the Llama-style head would meet trtllm_mla when its worker starts (sglang#23490)
    assert not b200.starts_args and b200.failing == {"sglang.page_size_tree_backend": "args",
                                                     "sglang.draft_backend_mla_only": "load"}  # fmt: skip
    assert lint(b200.fixed_argv, gpu="b200").starts_args
    unknown = lint(kimi_example(topk=2))
    assert unknown.gpu == "unknown" and unknown.starts_args
    assert "b200: refused at startup (sglang.page_size_tree_backend)" in unknown.gpu_dependent
    assert "h200: starts" in unknown.gpu_dependent


def test_a_llama_style_head_never_runs_on_the_mla_only_backend_it_inherits():
    """sglang#23490: Kimi-K2.6 with a Llama-style EAGLE-3 head on a GB300 fails as the draft worker starts: the draft
    runner takes the target's trtllm_mla (SGLang's default for Kimi/DeepSeek on sm100), which refuses a model without
    MLA. lint said OK; the fix names a backend for the draft. On an H200 the target runs fa3 and nothing is said."""
    b200 = lint(kimi_example(), gpu="b200")
    (change,) = changes(b200, "sglang.draft_backend_mla_only")
    assert change.effective == "trtllm_mla" and "can only be used with MLA models" in change.message
    assert b200.failing.get("sglang.draft_backend_mla_only") == "load"
    fixed = lint(b200.fixed_argv, gpu="b200")
    assert "--speculative-draft-attention-backend" in b200.fixed_argv and not changes(
        fixed, "sglang.draft_backend_mla_only"
    )
    assert not changes(lint(kimi_example(), gpu="h200"), "sglang.draft_backend_mla_only")
    # a drafter not on this machine: the same, said as depending on it
    remote = lint(KIMI, gpu="b200", target_arch="KimiK25ForConditionalGeneration")
    assert changes(remote, "sglang.draft_backend_mla_only_unknown_drafter") and not remote.failing.get(
        "sglang.draft_backend_mla_only"
    )


def test_the_trtllm_mla_default_of_the_releases_before_0_5_23():
    """sglang PR #29706 (0.5.13) refuses a Kimi/DeepSeek tree on a B200: SGLang picks trtllm_mla there from
    0.5.3.post2 (server_args.py:815-822 @0.5.3.post2 ... model_overrides/deepseek_v2.py @0.5.19), which forces page
    size 64, and topk > 1 with page size > 1 needs a paged tree backend. lint modelled that default at 0.5.23 only and
    said OK before it. Kimi-K2.5's class is in the list from 0.5.9; DeepSeek-V3's from 0.5.3.post2; before, on sm100,
    page size 1 (flashinfer) and the tree starts."""
    for version in ("0.5.9", "0.5.13", "0.5.18"):
        b200 = lint(kimi_example(topk=2), gpu="b200", engine_version=version)
        assert [c.effective for c in changes(b200, "sglang.attention_backend_default_mla")] == ["trtllm_mla"]
        assert [c.effective for c in changes(b200, "sglang.backend_page_size_mla")] == [64]
        assert not b200.starts_args and "sglang.page_size_tree_backend" in b200.failing, version
        assert "sglang.draft_backend_mla_only" in b200.failing, version
        assert not lint(kimi_example(topk=2), gpu="h200", engine_version=version).failing, version
        unknown = lint(kimi_example(topk=2), engine_version=version)
        assert "sglang.attention_backend_default_mla" in unknown.gpu_dependent or any(
            "pass --gpu" in n for n in unknown.notes
        ), version
    old = lint(
        [*E3, *sizes(3, 2, 6)], gpu="b200", engine_version="0.5.3.post1", target_arch="DeepseekV3ForCausalLM"
    )
    assert not changes(old, "sglang.attention_backend_default_mla") and not old.failing
    new = lint(
        [*E3, *sizes(3, 2, 6)], gpu="b200", engine_version="0.5.3.post2", target_arch="DeepseekV3ForCausalLM"
    )
    assert "sglang.page_size_tree_backend" in new.failing
    # before --speculative-draft-attention-backend (0.5.7) the fix is a backend both models run
    early = lint(kimi_example(), gpu="b200", engine_version="0.5.9")
    assert "--speculative-draft-attention-backend" in early.fixed_argv
    five = lint([*KIMI[:-6], "--speculative-num-steps", "3", "--speculative-eagle-topk", "1",
                 "--speculative-num-draft-tokens", "4", "--attention-backend", "trtllm_mla"], gpu="b200",
                engine_version="0.5.5", target_arch="DeepseekV3ForCausalLM")  # fmt: skip
    assert changes(five, "sglang.draft_backend_mla_only_unknown_drafter")


def test_lint_gpu_and_engine_code_on_the_command_line():
    refused = run_lint("--gpu", "b200", "--json", "--", *kimi_example(topk=2))
    data = json.loads(refused.stdout)
    assert refused.returncode == 1 and data["gpu"] == "b200" and data["starts_args"] is False
    started = run_lint("--gpu", "h200", "--", *kimi_example(topk=2))
    assert started.returncode == 0 and "GPU h200" in started.stdout
    bad = run_lint("--gpu", "tpu-v5", "--", *kimi_example())
    assert bad.returncode == 2 and "--gpu tpu-v5" in bad.stderr and len(bad.stderr.strip().splitlines()) == 1
    # No engine in this environment: one line says so, the lint verdict stands.
    no_engine = run_lint("--gpu", "h200", "--engine-code", "--json", "--", *kimi_example(topk=2))
    check = json.loads(no_engine.stdout)["engine_code"]
    assert no_engine.returncode == 0 and "sglang is not importable" in check["unavailable"]


def test_engine_argv_is_what_the_engine_parser_sees():
    from eaglewire.enginecode import engine_argv

    cmd = parse_launch(["SGLANG_X=1", "sglang", "serve", "org/m", "--tp", "2"])
    assert engine_argv(cmd) == ["--model-path", "org/m", "--tp", "2"]
    assert engine_argv(parse_launch(KIMI)) == KIMI[3:]
    assert engine_argv(parse_launch(vllm(SPEC))) == vllm(SPEC)[2:]


def test_the_overlap_opt_in_is_the_one_of_the_postN_that_added_it():
    """SGLang's overlap scheduler opt-in changed at .postN releases, not minor ones (their server_args.py read):
    `--enable-beta-spec` from 0.5.3.post2 to 0.5.4, `SGLANG_ENABLE_SPEC_V2` from 0.5.4.post1; an EAGLE launch that
    opts in keeps the scheduler, one that does not has it turned off."""
    beta = [*EAGLE, "--enable-beta-spec", *sizes(3, 1, 4)]
    env = ["SGLANG_ENABLE_SPEC_V2=1", *EAGLE, *sizes(3, 1, 4)]
    plain = [*EAGLE, *sizes(3, 1, 4)]
    for version in ("0.5.3.post2", "0.5.3.post3", "0.5.4"):
        assert not changes(lint(beta, engine_version=version), "sglang.overlap_schedule"), version
        assert changes(lint(plain, engine_version=version), "sglang.overlap_schedule"), version
    for version in ("0.5.4.post1", "0.5.4.post3", "0.5.5"):
        assert not changes(lint(env, engine_version=version), "sglang.overlap_schedule"), version
        assert changes(lint(plain, engine_version=version), "sglang.overlap_schedule"), version
    assert changes(lint(beta, engine_version="0.5.3.post1"), "sglang.overlap_schedule")  # no opt-in there


def test_a_release_newer_than_any_read_is_unverified_not_ok(capsys):
    """vLLM 0.34.0 came out after the newest release eaglewire read (0.33.0), and changed its launch rules (it
    removed disable_padded_drafter_batch, refuses parallel_drafting with eagle3): lint said OK there, "its rules are
    assumed" in a note. A release newer than any read is unverified unless a rule finds a problem; the installed
    engine's own argument code (--engine-code) settles it."""
    from eaglewire.engines.versions import NEWEST
    from eaglewire.jobs.lint import lint

    major, minor = NEWEST["vllm"].split(".")[:2]
    newer = f"{major}.{int(minor) + 1}.0"
    argv = vllm(SPEC)
    rep = lint(argv, engine_version=newer)
    assert rep.verdict == "unverified" and rep.exit_code == 3 and NEWEST["vllm"] in rep.unread
    assert lint(argv, engine_version=NEWEST["vllm"]).verdict == "ok"
    bad = lint(vllm({**SPEC, "num_speculative_tokens": 0}), engine_version=newer)
    assert bad.verdict == "problem" if bad.has_problem else bad.verdict == "unverified"
    from eaglewire.cli import main

    assert main(["lint", "--engine", f"vllm=={newer}", "--", *argv]) == 3
    out = capsys.readouterr().out
    assert "UNVERIFIED" in out and "newer than the newest release eaglewire read" in out
