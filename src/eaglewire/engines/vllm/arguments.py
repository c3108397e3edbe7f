"""vLLM's speculative arguments, classified: for every argument the scan of a release found
(data/arguments.json), whether the engine honours, adjusts, ignores or refuses it, the lint rows that report it,
and where the behaviour is written (`rules/arguments.py` says what the verdicts mean)."""

from __future__ import annotations

import functools

from eaglewire.engines.vllm.args import VLLM
from eaglewire.rules.arguments import ADJUSTED, HONOURED, IGNORED, INTERNAL, REFUSED, ArgumentRow

VL = functools.partial(ArgumentRow, VLLM)
V33 = "vllm 0.33.0"
CFG = f"{V33} config/speculative.py"
VL_METHOD_RULES = ("vllm.method_detect", "vllm.method_choices", "vllm.model_free_methods",
                   "vllm.eagle3_drafter_as_draft_model", "vllm.method_undetected", "vllm.eagle_with_eagle3_drafter",
                   "vllm.mtp_unsupported_target", "vllm.speculators_served")  # fmt: skip
KEY_NOT_READ = ("vllm.key_not_read",)

VLLM_ROWS: tuple[ArgumentRow, ...] = (
    VL("EngineArgs.speculative_config", ">=0.8.3", (HONOURED, ADJUSTED, REFUSED),
       ("vllm.dotted_config_replaces_json", "vllm.config_key_dashes", "vllm.unknown_keys", "vllm.speculators_served"),
       f"{V33} engine/arg_utils.py:1864-1866, 2100-2139; utils/argparse_utils.py:405-499 (dotted keys)",
       "dotted keys replace the JSON; dashed keys normalized from 0.27"),
    *(VL(f"EngineArgs.{name}", ">=0.22.0", (HONOURED, REFUSED),
         ("vllm.short_flags", "vllm.short_flags_conflict"),
         f"{V33} engine/arg_utils.py:1868-1873, 2106-2121", "merged into --speculative-config")
      for name in ("spec_method", "spec_model", "spec_tokens")),
    VL("EngineArgs.per_request_spec_decode_metrics", ">=0.29.0", (HONOURED,), (),
       f"{V33} engine/arg_utils.py:746 (ObservabilityConfig)", "metrics only"),
    VL("method", ">=0.8.3", (HONOURED, ADJUSTED, REFUSED), VL_METHOD_RULES,
       f"{CFG}:1226-1248, 1429-1500", "detected from the model name and draft type when unset"),
    VL("model", ">=0.8.3", (HONOURED, ADJUSTED, REFUSED),
       ("vllm.model_missing", "vllm.mtp_model", "vllm.model_free_methods", "vllm.draft_model_vocab"),
       f"{CFG}:1252-1295", "mtp: the target; ngram/suffix: none"),
    VL("num_speculative_tokens", ">=0.8.3", (HONOURED, ADJUSTED, REFUSED),
       ("vllm.num_speculative_tokens_from_draft", "vllm.num_speculative_tokens_missing",
        "vllm.num_speculative_tokens_positive", "vllm.mtp_tokens_required", "vllm.suffix_decoding", "vllm.chain"),
       f"{CFG}:413, 1584-1618, 1946-1971", "unset: the draft's n_predict"),
    VL("draft_tensor_parallel_size", ">=0.8.3", (HONOURED, IGNORED, REFUSED),
       ("vllm.draft_tensor_parallel_size", "vllm.draft_tensor_parallel_size_default",
        "vllm.draft_tensor_parallel_size_ignored", "vllm.draft_model_tensor_parallel_size"),
       f"{CFG}:1849-1870 (1 or the target's); v1/spec_decode/draft_model.py:63-78; EAGLE heads shard with the target",
       "only draft_model reads it; eagle/eagle3/mtp run at the target's TP"),
    VL("tensor_parallel_size", ">=0.15.0", (REFUSED,), ("vllm.tensor_parallel_size_key",),
       f"{CFG}:430-433, 1939-1944", "exists to refuse: the draft's is draft_tensor_parallel_size"),
    VL("quantization", ">=0.8.3", (HONOURED, ADJUSTED), ("vllm.mtp_quantization",),
       f"{CFG}:1264-1275 (mtp/dspark: the target's when unset, from 0.10.2), 1425",
       "eagle/eagle3: the head's own quantization_config when unset (the target's --quantization is not applied)"),
    VL("max_model_len", ">=0.8.3", (HONOURED, REFUSED), ("vllm.draft_context_gate", "vllm.draft_context_gate_v1"),
       f"{CFG}:1686-1692, 1763-1804 _maybe_override_draft_max_model_len",
       "refused when above the draft's or the target's; unset: min of the two; below the served length the V1 "
       "runner stops drafting past it (0.11.0+)"),
    VL("revision", ">=0.8.3", (HONOURED,), ("vllm.mtp_revision",),
       f"{CFG}:1406-1428 (revision=self.revision)", "mtp: the target's --revision is not applied to the MTP layers"),
    VL("code_revision", ">=0.8.3", (HONOURED,), (), f"{CFG}:1406-1428 (code_revision=self.code_revision)"),
    VL("prompt_lookup_max", ">=0.8.3", (HONOURED, IGNORED, REFUSED), KEY_NOT_READ,
       f"{V33} v1/spec_decode/ngram_proposer.py; {CFG} ngram branch", "ngram only"),
    VL("prompt_lookup_min", ">=0.8.3", (HONOURED, IGNORED, REFUSED), KEY_NOT_READ,
       f"{V33} v1/spec_decode/ngram_proposer.py", "ngram only"),
    *(VL(name, ">=0.11.1", (HONOURED, IGNORED), KEY_NOT_READ, f"{V33} v1/spec_decode/suffix_decoding.py", "suffix only")
      for name in ("suffix_decoding_max_tree_depth", "suffix_decoding_max_cached_requests",
                   "suffix_decoding_max_spec_factor", "suffix_decoding_min_token_prob")),
    *(VL(name, ">=0.8.3,<0.10.0", (HONOURED, IGNORED), KEY_NOT_READ,
         "vllm 0.8.5-0.9.2 spec_decode/spec_decode_worker.py:79-106 (V0 only)",
         "V0 engine only; EAGLE/ngram run on V1 by default")
      for name in ("acceptance_method", "posterior_threshold", "posterior_alpha", "disable_mqa_scorer")),
    VL("disable_by_batch_size", ">=0.8.3,<0.10.0", (HONOURED, IGNORED), KEY_NOT_READ,
       "vllm 0.8.5-0.9.2 spec_decode/spec_decode_worker.py:103 (V0 only)", "V0 engine only"),
    VL("disable_by_batch_size", ">=0.10.0", (IGNORED,), KEY_NOT_READ,
       "vllm 0.10.0-0.16.0: read nowhere (scan)", "never read"),
    VL("disable_logprobs", ">=0.8.3,<0.10.0", (HONOURED, IGNORED), KEY_NOT_READ,
       "vllm 0.8.5-0.9.2 spec_decode/spec_decode_worker.py:79 (V0 only)", "V0 engine only"),
    VL("disable_logprobs", ">=0.10.0", (IGNORED,), KEY_NOT_READ, "vllm 0.10.0-0.11.0: read nowhere (scan)",
       "never read"),
    VL("enable_chunked_prefill", ">=0.8.3", (IGNORED,), ("vllm.engine_filled_keys",),
       "vllm 0.8.5 engine/arg_utils.py:1061-1074 (overwritten by the engine)", "set by vLLM itself"),
    VL("disable_log_stats", ">=0.8.3", (IGNORED,), ("vllm.engine_filled_keys",),
       "vllm 0.8.5 engine/arg_utils.py:1061-1074 (overwritten by the engine)", "set by vLLM itself"),
    VL("speculative_token_tree", ">=0.9.0,<0.10.2", (IGNORED,), KEY_NOT_READ,
       "vllm 0.9.0-0.10.1.1: read only by the Neuron runner", "no GPU code reads it"),
    VL("speculative_token_tree", ">=0.10.2", (HONOURED,), ("vllm.speculative_token_tree",),
       "vllm 0.14.0 config/speculative.py:441-451, v1/spec_decode/eagle.py (tree attention)", "tree drafting"),
    VL("disable_padded_drafter_batch", ">=0.11.0", (HONOURED, IGNORED, REFUSED),
       ("vllm.mrv2_ignores_key", "vllm.async_scheduling_padded_drafter", "vllm.async_scheduling_off_padded_drafter"),
       f"{V33} v1/spec_decode/llm_base_proposer.py:329 (V1 runner only)", "the V2 runner (default from 0.29) ignores it"),
    VL("enforce_eager", ">=0.11.0", (HONOURED, IGNORED), ("vllm.mrv2_ignores_key",),
       f"{V33} v1/spec_decode/llm_base_proposer.py:427 (V1 runner only)", "the V2 runner (default from 0.29) ignores it"),
    VL("moe_backend", ">=0.19.0", (HONOURED, IGNORED), ("vllm.mrv2_ignores_key",),
       f"{V33} config/speculative.py:396-403 _DRAFT_VLLM_CONFIG_OVERRIDES, v1/spec_decode/llm_base_proposer.py:1272",
       "the V2 runner ignores it at 0.29 only"),
    VL("attention_backend", ">=0.21.0", (HONOURED, IGNORED), ("vllm.mrv2_ignores_key",),
       f"{V33} config/speculative.py:396-403, v1/spec_decode/llm_base_proposer.py:1281-1290",
       "the V2 runner ignores it at 0.29 only"),
    VL("kv_cache_dtype", ">=0.26.0", (HONOURED,), (),
       f"{V33} config/speculative.py:396-403; 0.29.0 v1/worker/gpu/spec_decode/eagle/utils.py:42"),
    VL("parallel_drafting", ">=0.16.0", (HONOURED,), (),
       f"{V33} v1/spec_decode/llm_base_proposer.py:112; config/vllm.py:3070-3078 (selects the V1 runner)"),
    VL("num_speculative_tokens_per_batch_size", ">=0.24.0", (HONOURED,), (),
       f"{V33} v1/core/sched/scheduler.py:324, v1/worker/gpu/cudagraph_utils.py:289"),
    VL("draft_sample_method", ">=0.21.0", (HONOURED, REFUSED), (),
       f"{V33} v1/worker/gpu/spec_decode/speculator.py:180, v1/spec_decode/llm_base_proposer.py:259"),
    VL("rejection_sample_method", ">=0.18.0", (HONOURED,), (),
       f"{V33} v1/sample/rejection_sampler.py:105, v1/worker/gpu/spec_decode/rejection_sampler.py:162"),
    VL("use_local_argmax_reduction", ">=0.17.0", (HONOURED, REFUSED), (),
       f"{V33} v1/worker/gpu/spec_decode/speculator.py:139; {CFG}:1711-1720, 2020-2025"),
    VL("synthetic_acceptance_rate", ">=0.19.0,<0.20.0", (HONOURED,), (), "vllm 0.19.0 and 0.19.1 config/speculative.py "
       "(synthetic rejection sampling; 0.19.1 :187, read at v1/worker/gpu/spec_decode/rejection_sampler.py:459)",
       "renamed synthetic_acceptance_rates in 0.20.0"),
    *(VL(name, ">=0.20.0", (HONOURED, REFUSED), (), f"{CFG}:1967-1982 (only with rejection_sample_method 'synthetic')")
      for name in ("synthetic_acceptance_rates", "synthetic_acceptance_length")),
    VL("use_heterogeneous_vocab", ">=0.25.0", (HONOURED, REFUSED), (), f"{CFG}:2000-2022 (draft_model only)"),
    VL("dspark_draft_topk", ">=0.28.0", (HONOURED, REFUSED), (), f"{CFG}:1640-1671 (dspark only)"),
    VL("enable_adaptive_verification", ">=0.28.0", (HONOURED, REFUSED), (),
       f"{V33} v1/worker/gpu/spec_decode/rejection_sampler.py:161; config/vllm.py:3112 (V2 runner only)"),
    VL("index_share_for_mtp_iteration", ">=0.29.0", (HONOURED, REFUSED), (), f"{CFG}:1703-1710 (mtp only)"),
    VL("disable_eagle_block_drop", ">=0.30.0", (HONOURED,), (), f"{V33} v1/core/sched/scheduler.py:334"),
    VL("disable_lookahead_block_hashes", ">=0.33.0", (HONOURED,), (), f"{V33} config/vllm.py:684"),
    VL("draft_lm_head_quantization", ">=0.33.0", (HONOURED, REFUSED), (),
       f"{V33} v1/worker/gpu/spec_decode/eagle/utils.py:113; {CFG}:1950-1962 (eagle/eagle3/mtp on the V2 runner)"),
    VL("xpress_topc", ">=0.33.0", (HONOURED, REFUSED), (), f"{CFG}:1620-1638 (XPress drafts only)"),
    VL("fly_window_size", ">=0.33.0", (HONOURED, IGNORED, REFUSED), KEY_NOT_READ,
       f"{V33} v1/sample/rejection_sampler.py:80-91; {CFG}:2010-2030", "rejection_sample_method 'fly' only"),
    *(VL(name, ">=0.33.0", (HONOURED, IGNORED), KEY_NOT_READ, f"{V33} v1/sample/rejection_sampler.py:80-91",
         "rejection_sample_method 'fly' only") for name in ("fly_entropy_threshold", "fly_entropy_top_k")),
    *(VL(name, ">=0.8.3", (INTERNAL,), (), f"{CFG}:518-558 (filled by EngineArgs.create_speculative_config / "
         "__post_init__)", "a config object, not a JSON key")
      for name in ("target_model_config", "target_parallel_config", "draft_model_config", "draft_parallel_config")),
    VL("draft_load_config", ">=0.17.0", (INTERNAL,), (), f"{CFG}:558", "a config object, not a JSON key"),
    # ---- the draft model's settings (draft_settings of the scan) ----
    VL("draft:model", ">=0.8.3", (HONOURED, ADJUSTED), ("vllm.mtp_model",), f"{CFG}:1406-1428 (model=self.model)",
       "mtp: the target's checkpoint"),
    VL("draft:revision", ">=0.8.3", (HONOURED, IGNORED), ("vllm.mtp_revision",), f"{CFG}:1406-1428",
       "the config's revision; mtp does not take the target's"),
    VL("draft:quantization", ">=0.8.3", (HONOURED, ADJUSTED), ("vllm.mtp_quantization",), f"{CFG}:1264-1275, 1425",
       "the config's; mtp takes the target's from 0.10.2 (the V1 proposer builds its layers with the target's from "
       "0.9.0: draft-settings records)"),
    VL("draft:dtype", ">=0.8.3", (HONOURED,), (), f"{CFG}:1415 (dtype=the target's)", "always the target's --dtype"),
    VL("draft:tokenizer", ">=0.8.3", (HONOURED,), (), f"{CFG}:1409-1413",
       "the target's tokenizer (the draft's own with use_heterogeneous_vocab)"),
    VL("draft:context length", ">=0.8.3", (ADJUSTED, REFUSED), ("vllm.draft_context_gate", "vllm.draft_context_gate_v1"),
       f"{CFG}:1686-1692, 1763-1804 (min of the draft's and the target's), 1807-1846; config/vllm.py:3025-3051",
       "capped at the target's; below the served length the V1 runner stops drafting past it (0.11.0+); 0.33 V2 "
       "runner may lower the target's to the draft's"),
    VL("draft:tensor parallel size", ">=0.8.3", (HONOURED, IGNORED),
       ("vllm.draft_tensor_parallel_size_ignored", "vllm.draft_tensor_parallel_size_default"),
       f"{CFG}:1890-1915 create_draft_parallel_config", "EAGLE heads use the target's parallel config"),
)  # fmt: skip
