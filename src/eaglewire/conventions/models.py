"""Which engine model file runs a target family: the convention rows are per model file, because each engine's
model file decides where the aux hidden states are captured (docs/conventions.md (a)).

A family an engine table does not list is mapped to the engine's generic rule (the llama-style capture most model
files copy) and marked unknown, so a verdict built on it is `unverified`.
"""

from __future__ import annotations

# target family (targets.FAMILIES) -> engine model file
MODEL_FILES: dict[str, dict[str, str]] = {
    "sglang": {
        "llama": "llama",
        "mistral": "llama",
        "llama4": "llama4",
        "qwen2": "qwen2",
        "qwen2_5_vl": "qwen2_5_vl",
        "qwen2_vl": "qwen2_vl",
        "qwen3": "qwen3",
        "qwen3_moe": "qwen3_moe",
        "qwen3_next": "qwen3_next",
        "qwen3_vl": "qwen3_vl",
        "qwen3_vl_moe": "qwen3_vl_moe",  # qwen3_vl.py's setter on qwen3_vl_moe.py's decoder (Qwen2MoeModel's flags)
        "gpt_oss": "gpt_oss",
        "deepseek_v2": "deepseek_v2",
        "deepseek_v3": "deepseek_v2",
        "deepseek_v32": "deepseek_v2",
        "kimi_k2": "deepseek_v2",
        "kimi_k25": "kimi_k25",
        "deepseek_v4": "deepseek_v4",
        "glm4_moe": "glm4_moe",
        "minimax_m2": "minimax_m2",
        "mistral3": "mistral3",
    },
    "vllm": {
        "llama": "llama",
        "mistral": "mistral",
        "llama4": "llama4",
        "qwen2": "qwen2",
        "qwen2_5_vl": "qwen2_5_vl",
        "qwen2_vl": "qwen2_vl",
        "qwen3": "qwen3",
        "qwen3_moe": "qwen3_moe",
        "qwen3_next": "qwen3_next",
        "qwen3_vl": "qwen3_vl",
        "qwen3_vl_moe": "qwen3_vl",
        "gpt_oss": "gpt_oss",
        "deepseek_v2": "deepseek_v2",
        "deepseek_v3": "deepseek_v3",
        "deepseek_v32": "deepseek_v32",  # on CUDA vllm/models/deepseek_v32/nvidia/model.py, its own decoder
        "deepseek_v4": "deepseek_v4",  # on CUDA vllm/models/deepseek_v4/nvidia/model.py
        "kimi_k2": "deepseek_v3",
        "kimi_k25": "kimi_k25",
        "glm4_moe": "glm4_moe",
        "minimax_m2": "minimax_m2",
        "mistral3": "mistral3",
    },
}
MODEL_FILES["trtllm"] = {
    "llama": "llama",
    "mistral": "mistral",
    "llama4": "llama4",
    "qwen3": "qwen3",
    "qwen3_moe": "qwen3_moe",
    "qwen3_next": "qwen3_next",
    "deepseek_v3": "deepseek_v3",
    "kimi_k2": "deepseek_v3",
    "gpt_oss": "gpt_oss",
}
MODEL_FILES["specforge"] = MODEL_FILES["sglang"]  # SpecForge captures through SGLang's model files
GENERIC = {"sglang": "llama", "vllm": "llama", "specforge": "llama", "trtllm": "llama"}
# An architecture the table does not list but the engine's registry serves through capture code whose taps are
# known (registries.py): (framework, capture) -> the model file whose rows are exactly that code (vllm.py: the
# "mixin" group, the EagleModelMixin from 0.17.0).
REGISTRY_CAPTURE = {("vllm", "mixin"): "eagle_model_mixin"}
# Short names older callers use for a model class.
ALIASES = {"deepseek": "deepseek_v3"}


def model_file(framework: str, family: str) -> tuple[str, bool]:
    """(the engine model file for `family`, whether the engine's table lists the family). Frameworks that
    capture through transformers hooks (speculators' data, modelopt, EAGLE, eaglewire) need no model file."""
    table = MODEL_FILES.get(framework)
    if table is None:
        return "*", True
    family = ALIASES.get(family, family)
    if family in table:
        return table[family], True
    if family in table.values():
        return family, True
    return GENERIC[framework], False
