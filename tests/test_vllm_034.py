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
        assert "Unsupported speculative method" in changes["vllm.method_choices"].message
    assert "vllm.method_choices" not in _rules(_serve({**SPEC, "method": "custom_class"}), "0.33.0")
    assert "vllm.method_choices" not in _rules(_serve(SPEC), "0.34.0")
