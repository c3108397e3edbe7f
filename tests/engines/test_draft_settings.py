"""The draft model's settings and the dropped arguments (engines/sglang/draft.py, engines/vllm/draft.py) against the engines'
own argument code (`make test-engines`; marker `engines`): what the engine resolves for the draft is what the lint
rule says, and a command whose argument lint reports as ignored still passes the engine's argument code (the
engine accepts it silently; that is the finding)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from eaglewire.enginecode import run_engine
from eaglewire.jobs.lint import lint
from eaglewire.rules.gpus import GPUS
from engines.generate import PLACEHOLDER, fill, write_models
from engines.test_engines import pythons

pytestmark = pytest.mark.engines

M = PLACEHOLDER
SG = ["python", "-m", "sglang.launch_server", "--model-path", f"{M}/llama", "--speculative-algorithm", "EAGLE3",
      "--speculative-draft-model-path", f"{M}/eagle3_llama", "--speculative-num-steps", "3",
      "--speculative-eagle-topk", "1", "--speculative-num-draft-tokens", "4"]  # fmt: skip
SPEC = {"method": "eagle3", "model": f"{M}/eagle3_llama", "num_speculative_tokens": 3}
MTP = {"method": "mtp", "num_speculative_tokens": 1}


def vllm(target: str, spec: dict, *extra: str) -> list[str]:
    return ["vllm", "serve", f"{M}/{target}", "--speculative-config", json.dumps(spec), *extra]


# (argv, lint rule that must fire or None, engine field, the value the engine must resolve; None = not compared)
SG_CASES = [
    ([*SG, "--quantization", "fp8"], "sglang.draft_quantization_inherited", "speculative_draft_model_quantization",
     "fp8"),
    ([*SG, "--quantization", "fp8", "--speculative-draft-model-quantization", "unquant"], None,
     "speculative_draft_model_quantization", None),
    ([*SG, "--spec-trace-dir", "/tmp/trace"], "sglang.argument_not_read", None, None),
    ([*SG, "--speculative-ngram-max-trie-depth", "12"], "sglang.argument_not_read", None, None),
    # A drafter that declares a shorter context than the target's 8192: refused when the draft loads, after the
    # argument code (which accepts the command).
    ([*SG[:8], f"{M}/eagle3_short", *SG[9:]], "sglang.draft_context_length", None, None),
]  # fmt: skip
VL_CASES = [
    (vllm("deepseek_v3", MTP, "--revision", "main"), "vllm.mtp_revision", "revision", None),
    (vllm("deepseek_v3", MTP, "--quantization", "fp8"), "vllm.mtp_quantization", "quantization", "fp8"),
    (vllm("llama", {**SPEC, "draft_tensor_parallel_size": 1}, "-tp", "2"), "vllm.draft_tensor_parallel_size_ignored",
     "draft_tensor_parallel_size", 1),
    (vllm("llama", {**SPEC, "prompt_lookup_max": 5}), "vllm.key_not_read", None, None),
    (vllm("llama", {**SPEC, "disable_padded_drafter_batch": True}), "vllm.mrv2_ignores_key",
     "disable_padded_drafter_batch", True),
]  # fmt: skip


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_draft_settings_and_dropped_arguments_against_the_engine(engine, tmp_path):
    python = pythons(engine)[0]
    if not Path(python).exists():
        pytest.skip(f"{python} not found (make test-engines)")
    models = write_models(tmp_path)
    short = json.loads((models / "eagle3_llama" / "config.json").read_text())
    (models / "eagle3_short").mkdir()
    (models / "eagle3_short" / "config.json").write_text(
        json.dumps({**short, "max_position_embeddings": 2048})
    )
    cases = SG_CASES if engine == "sglang" else VL_CASES
    commands = [fill(argv, models) for argv, *_ in cases]
    run = run_engine(engine, commands, GPUS["h200"], python)
    assert not run.error, run.error
    for command, (_argv, rule, field, value), result in zip(commands, cases, run.results, strict=True):
        report = lint(command, engine_version=run.version, gpu="h200")
        fired = {c.rule for c in report.changes}
        assert rule is None or rule in fired, (command, sorted(fired))
        assert bool(result["starts"]) == report.starts_args, (command, result.get("error"), report.failing)
        if field is not None and result["starts"]:
            assert result["fields"].get(field) == value, (command, field, result["fields"].get(field))
