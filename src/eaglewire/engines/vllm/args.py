"""vLLM's launch arguments as eaglewire reads them: the flags (kind and aliases), the legacy flags gone by 0.8.5 and
the shorthand flags merged into --speculative-config, and the source files the rules cite."""

from __future__ import annotations

from eaglewire.rules.launch import FlagSpec

VLLM = "vllm"
# The shorthand flags (--spec-method, --spec-model, --spec-tokens) exist from this release (engine/arg_utils.py)
SHORT_FLAGS_FROM = "0.22.0"
# Dotted --speculative-config.KEY arguments were checked from this release on
DOTTED_KEYS_READ_FROM = "0.10.0"

VL_CFG = (
    "vllm 0.33.0 vllm/config/speculative.py SpeculativeConfig "
    "(0.8.5-0.10.2: vllm/config.py, vllm/config/__init__.py)"
)
VL_ARGS = "vllm 0.33.0 vllm/engine/arg_utils.py"

# vLLM flags that existed up to 0.8.0 (vllm 0.8.0 engine/arg_utils.py) and are gone by 0.8.5: argparse rejects
# them. Each maps to the --speculative-config key that replaced it, with the versions that key exists in.
VL_LEGACY: dict[str, tuple[str, str]] = {
    "--speculative-model": ("model", "str"),
    "--num-speculative-tokens": ("num_speculative_tokens", "int"),
    "--speculative-draft-tensor-parallel-size": ("draft_tensor_parallel_size", "int"),
    "--speculative-model-quantization": ("quantization", "str"),
    "--speculative-max-model-len": ("max_model_len", "int"),
    "--speculative-disable-by-batch-size": ("disable_by_batch_size", "int"),
    "--ngram-prompt-lookup-max": ("prompt_lookup_max", "int"),
    "--ngram-prompt-lookup-min": ("prompt_lookup_min", "int"),
    "--speculative-disable-mqa-scorer": ("disable_mqa_scorer", "switch"),
    "--spec-decoding-acceptance-method": ("acceptance_method", "str"),
    "--typical-acceptance-sampler-posterior-threshold": ("posterior_threshold", "float"),
    "--typical-acceptance-sampler-posterior-alpha": ("posterior_alpha", "float"),
    "--disable-logprobs-during-spec-decoding": ("disable_logprobs", "switch"),
}
# vLLM >= 0.22: shorthand flags merged into --speculative-config (vllm 0.33.0 engine/arg_utils.py:2100-2121).
VL_SHORT = {"--spec-method": "method", "--spec-model": "model", "--spec-tokens": "num_speculative_tokens"}

VL_FLAGS: dict[str, FlagSpec] = {
    "--model": FlagSpec("str"),
    "--speculative-config": FlagSpec("json", ("-sc",)),
    "--spec-method": FlagSpec("str"),
    "--spec-model": FlagSpec("str"),
    "--spec-tokens": FlagSpec("int"),
    "--tensor-parallel-size": FlagSpec("int", ("-tp",)),
    "--trust-remote-code": FlagSpec("switch"),
    "--enforce-eager": FlagSpec("switch"),
    "--quantization": FlagSpec("str", ("-q",)),
    "--revision": FlagSpec("str"),
    "--max-model-len": FlagSpec("str"),  # vLLM also takes 1k, 32K, -1 (parsed by the rule that reads it)
    **{flag: FlagSpec(kind) for flag, (_key, kind) in VL_LEGACY.items()},
}
