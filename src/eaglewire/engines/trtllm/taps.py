"""TensorRT-LLM (PyTorch backend): which taps it feeds an EAGLE-3 drafter.

TensorRT-LLM captures `hidden_states + residual` at the END of each decoder layer listed (F(v) = v + 1, the
output-of-layer convention of SGLang's llama.py and modelopt's hooks), never before layer 0 (h0 unreachable: the
buffer slot is never written, silently), and the last layer's pre-norm output via v = L-1. The ids come only from
the launch config (`speculative_config.eagle3_layers_to_capture` in the llm-api), never from the drafter's
config.json; unset, the default is {1, L//2-1, L-4} = h{2, L//2, L-3}. The fc width follows the number of ids
launched, not the checkpoint.

These facts were read in NVIDIA/TensorRT-LLM repository snapshots, not in releases (PyPI's tensorrt-llm packages
are stubs that download from NVIDIA's index, not reachable here): rows carry no release version read, so verdicts
built on them are `unverified` until someone reads a release (docs/conventions.md (a)).
"""

from __future__ import annotations

from eaglewire.rules.taps import Convention, IdSource, Rule

# target family (targets.FAMILIES) -> the TensorRT-LLM model file whose rows answer it (engines/models.py gathers
# every engine's map; a family not listed reads as the generic llama-style rule, marked unknown)
MODEL_FILES: dict[str, str] = {
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

LAUNCH = IdSource("launch:speculative_config.eagle3_layers_to_capture")
SOURCE = (
    "NVIDIA/TensorRT-LLM tensorrt_llm/_torch/speculative/eagle3.py@001e670 Eagle3SpecMetadata.__post_init__, "
    "maybe_capture_hidden_states; llmapi/llm_args.py EagleDecodingConfig.eagle3_layers_to_capture; model files' "
    "spec_metadata.maybe_capture_hidden_states(self.layer_idx, hidden_states, residual)"
)
MODELS = ("llama", "llama4", "mistral", "qwen3", "qwen3_moe", "qwen3_next", "deepseek_v3", "gpt_oss")
SILENT = "no capture before layer 0: that slot of the preallocated buffer is never written (silent garbage)"

ROWS: tuple[Convention, ...] = (
    Convention(
        key="trtllm-pytorch",
        framework="trtllm",
        role="serve",
        versions="",
        checked=("commit 001e670",),  # repository snapshots only: no release read
        models=MODELS,
        id_sources=(LAUNCH,),
        rule=Rule.PLUS_ONE,
        default="1,L//2-1,L-4",
        default_rule=Rule.PLUS_ONE,
        lowest_tap=1,
        highest_tap="L",
        h0_crash=SILENT,
        fc_width_keys=(),
        source=SOURCE,
        notes=(
            "ids come from the launch config speculative_config.eagle3_layers_to_capture, never from config.json",
            "the fc is built for the number of ids launched: a drafter trained on 4 taps needs 4 ids there",
        ),
    ),
)
