"""SGLang's launch arguments as eaglewire reads them: the flags (kind and aliases), the setting each rule reads and
the flag it comes from, the algorithms by handler family, and the source files the rules cite, by era."""

from __future__ import annotations

from eaglewire.rules.launch import FlagSpec

SGLANG = "sglang"

# The rows of the algorithms beyond EAGLE (STANDALONE, NGRAM, adaptive: families.py) were read in this release only
FAMILY_ROWS_READ = "0.5.23"
SG_HOOK = "sglang 0.5.23 srt/arg_groups/speculative_hook.py"
SG_SA = (
    "sglang 0.4.5-0.5.12 srt/server_args.py (speculative block of __post_init__; "
    "_handle_speculative_decoding from 0.5.4)"
)

SG_FLAGS: dict[str, FlagSpec] = {
    "--model-path": FlagSpec("str", ("--model",)),
    "--speculative-algorithm": FlagSpec("str"),
    "--speculative-draft-model-path": FlagSpec("str", ("--speculative-draft-model",)),
    "--speculative-draft-model-revision": FlagSpec("str"),
    "--speculative-num-steps": FlagSpec("int"),
    "--speculative-eagle-topk": FlagSpec("int"),
    "--speculative-num-draft-tokens": FlagSpec("int"),
    "--speculative-token-map": FlagSpec("str"),
    "--speculative-accept-threshold-single": FlagSpec("float"),
    "--speculative-accept-threshold-acc": FlagSpec("float"),
    "--speculative-use-rejection-sampling": FlagSpec("switch"),
    "--speculative-use-block-verification": FlagSpec("switch"),
    "--speculative-adaptive": FlagSpec("switch"),
    "--enable-beta-spec": FlagSpec("switch"),
    "--max-running-requests": FlagSpec("int"),
    "--attention-backend": FlagSpec("str"),
    "--decode-attention-backend": FlagSpec("str"),
    "--prefill-attention-backend": FlagSpec("str"),
    "--page-size": FlagSpec("int"),
    "--tp-size": FlagSpec("int", ("--tp", "--tensor-parallel-size")),
    "--enable-mixed-chunk": FlagSpec("switch"),
    "--disable-overlap-schedule": FlagSpec("switch"),
    "--trust-remote-code": FlagSpec("switch"),
    "--enable-dp-attention": FlagSpec("switch"),
    "--dp-size": FlagSpec("int", ("--dp", "--data-parallel-size")),
    "--attn-dp-size": FlagSpec("int"),
    "--speculative-ngram-max-bfs-breadth": FlagSpec("int"),
    "--speculative-adaptive-config": FlagSpec("str"),
    "--quantization": FlagSpec("str"),
    "--speculative-draft-model-quantization": FlagSpec("str"),
    "--speculative-draft-attention-backend": FlagSpec("str"),
    "--context-length": FlagSpec("int"),
    "--speculative-draft-window-size": FlagSpec("int"),
    "--speculative-draft-sink-size": FlagSpec("int"),
    "--disable-cuda-graph": FlagSpec("switch"),
    "--device": FlagSpec("str"),
}


# SGLang settings: the key each rule reads, the flag it comes from.
SG_KEYS = {
    "algorithm": "--speculative-algorithm",
    "draft_model": "--speculative-draft-model-path",
    "num_steps": "--speculative-num-steps",
    "topk": "--speculative-eagle-topk",
    "num_draft_tokens": "--speculative-num-draft-tokens",
    "token_map": "--speculative-token-map",
    "max_running_requests": "--max-running-requests",
    "page_size": "--page-size",
    "attention_backend": "--attention-backend",
    "decode_attention_backend": "--decode-attention-backend",
    "prefill_attention_backend": "--prefill-attention-backend",
    "enable_mixed_chunk": "--enable-mixed-chunk",
    "disable_overlap_schedule": "--disable-overlap-schedule",
    "rejection_sampling": "--speculative-use-rejection-sampling",
    "block_verification": "--speculative-use-block-verification",
    "accept_threshold_single": "--speculative-accept-threshold-single",
    "accept_threshold_acc": "--speculative-accept-threshold-acc",
    "adaptive": "--speculative-adaptive",
    "beta_spec": "--enable-beta-spec",
    "tp_size": "--tp-size",
    "dp_size": "--dp-size",
    "attn_dp_size": "--attn-dp-size",
    "enable_dp_attention": "--enable-dp-attention",
    "ngram_bfs": "--speculative-ngram-max-bfs-breadth",
    "adaptive_config": "--speculative-adaptive-config",
    "quantization": "--quantization",
    "draft_quantization": "--speculative-draft-model-quantization",
    "draft_attention_backend": "--speculative-draft-attention-backend",
    "context_length": "--context-length",
    "draft_window": "--speculative-draft-window-size",
    "draft_sink": "--speculative-draft-sink-size",
}
TRIPLE = ("num_steps", "topk", "num_draft_tokens")
# SGLang's builtin algorithms (sglang 0.5.23 srt/speculative/spec_info.py:32-47, spec_registry.py:183 NEXTN) by
# the handler family that resolves their settings (spec_info.py:235-266 handle_server_args).
SGLANG_FAMILIES = {
    "EAGLE": "eagle", "EAGLE3": "eagle", "NEXTN": "eagle", "STANDALONE": "eagle", "NGRAM": "ngram",
    "DFLASH": "other", "DSPARK": "other", "UNO": "other", "FROZEN_KV_MTP": "other",
}  # fmt: skip
SGLANG_ALGORITHMS = tuple(SGLANG_FAMILIES)
