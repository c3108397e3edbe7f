"""Every speculative argument of every release read, and what the engine does with it: honours it, adjusts it,
ignores it or refuses it, with the lint rows that report it and where the behaviour is written.

The arguments themselves are never listed by hand: `scripts/speculative_args.py` reads them out of each wheel
(`engines/<engine>/data/arguments.json`, `rules/scanned.py`). This table classifies them; tests/test_flags_arguments.py fails
for an argument a release defines that no row covers, so a new release with a new argument fails until it is
classified here (with a rule, or as honoured with no rule needed).

Verdicts (a row may carry several: what happens depends on the algorithm or the other flags, `note` says when):
- honoured: the engine uses the value given (an unset argument gets a default that does not override the user);
- adjusted: the engine changes the value the user gave (or fills one in that the user would not expect);
- ignored: accepted and never used, in the condition the note names;
- refused: startup fails (argparse, a ValueError of the argument code, or loading the draft);
- internal: not a launch argument (set by the engine itself, or no command-line flag).
An adjusted or ignored argument names the lint rows that report it, or says why none can (`no_rule`).
"""

from __future__ import annotations

import functools
from collections.abc import Iterable
from dataclasses import dataclass

from eaglewire.engines.sglang.args import SGLANG
from eaglewire.engines.vllm.args import VLLM
from eaglewire.rules import scanned
from eaglewire.rules.row import Row

HONOURED, ADJUSTED, IGNORED, REFUSED, INTERNAL = "honoured", "adjusted", "ignored", "refused", "internal"
VERDICTS = (HONOURED, ADJUSTED, IGNORED, REFUSED, INTERNAL)
SILENT = (ADJUSTED, IGNORED)


@dataclass(frozen=True)
class ArgumentRow(Row):
    engine: str
    name: str  # as the scan names it: a ServerArgs field, a SpeculativeConfig key, "EngineArgs.<field>", "draft:<setting>"
    versions: str  # PEP 440 specifier set over the releases read
    verdicts: tuple[str, ...]
    rules: tuple[str, ...]  # lint rows (FlagRule.name) that report it
    source: str  # where the behaviour is written, file:line at a release
    note: str = ""
    no_rule: str = ""  # an adjusted/ignored argument without a lint row: why none can report it


SG = functools.partial(ArgumentRow, SGLANG)
VL = functools.partial(ArgumentRow, VLLM)
S23 = "sglang 0.5.23"
HOOK = f"{S23} arg_groups/speculative_hook.py"
SIZES = ("sglang.partial_specification", "sglang.auto_choice", "sglang.auto_choice_needs_local_config",
         "sglang.auto_choice_standalone", "sglang.chain_rule", "sglang.chain_rule_fill", "sglang.topk_unset",
         "sglang.num_draft_tokens_unset", "sglang.page_size_topk_to_1", "sglang.page_size_auto_topk_to_1",
         "sglang.page_size_flashinfer_mtp", "sglang.trtllm_mha_topk", "sglang.page_size_tree_backend",
         "sglang.page_size_tree_backend_auto", "sglang.nothing_proposed", "sglang.tree_pool_too_small",
         "sglang.adaptive_params", "sglang.spec_v2_topk", "sglang.rejection_sampling_topk", "sglang.ngram_topk",
         "sglang.ngram_defaults")  # fmt: skip
NOT_READ = ("sglang.argument_not_read",)

SGLANG_ROWS: tuple[ArgumentRow, ...] = (
    # ---- the algorithm, the drafter, the three sizes ----
    SG("speculative_algorithm", ">=0.4.5", (HONOURED, ADJUSTED, REFUSED),
       ("sglang.nextn_alias", "sglang.algorithm_upper", "sglang.algorithm_choices", "sglang.algorithm_family",
        "sglang.eagle_with_eagle3_drafter", "sglang.no_algorithm"),
       f"{HOOK}:109-160 (NEXTN -> EAGLE, upper-cased from 0.5.12); 0.4.5-0.5.11 server_args.py choices",
       "NEXTN is EAGLE; EAGLE with an EAGLE-3 head skips its fc"),
    SG("speculative_draft_model_path", ">=0.4.5", (HONOURED, ADJUSTED, REFUSED),
       ("sglang.mtp_draft_path", "sglang.draft_model_missing", "sglang.draft_model_missing_unknown_target"),
       f"{HOOK}:1120-1157 (MTP targets default it to the target); managers/tp_worker.py:468-482",
       "MTP/NextN targets: defaults to the target's own checkpoint"),
    SG("speculative_num_steps", ">=0.4.5", (HONOURED, ADJUSTED, REFUSED), SIZES,
       f"{HOOK}:1072-1284 _handle_eagle_family, 1392-1437; 0.4.5-0.5.12 server_args.py", "auto-chosen when unset"),
    SG("speculative_eagle_topk", ">=0.4.5", (HONOURED, ADJUSTED, REFUSED), SIZES,
       f"{HOOK}:1072-1284, 1306-1311 (NGRAM: topk := max bfs breadth); 0.4.5 server_args.py:353-355 (page size)",
       "page size > 1 forced it to 1 before 0.4.9"),
    SG("speculative_num_draft_tokens", ">=0.4.5", (HONOURED, ADJUSTED, REFUSED), SIZES,
       f"{HOOK}:1267-1277 (topk 1: num_steps + 1), 1312-1327 (NGRAM default 12)",
       "with topk 1 it is num_steps + 1 whatever is given"),
    SG("speculative_token_map", ">=0.4.5", (HONOURED, IGNORED), ("sglang.token_map_ignored",),
       f"{S23} speculative/eagle_worker_v2.py:323-333 init_token_map; standalone_worker_v2.py:128",
       "EAGLE and STANDALONE read it; EAGLE3 ignores it (its drafter carries d2t)"),
    SG("speculative_accept_threshold_single", ">=0.4.5", (HONOURED, REFUSED), (),
       f"{S23} speculative/eagle_utils.py:781 (tree verify of sampled requests); {HOOK}:1229-1237 (refused with "
       "rejection sampling, from 0.5.14)", "greedy requests verify by argmax: thresholds apply to sampling only"),
    SG("speculative_accept_threshold_acc", ">=0.4.5", (HONOURED, REFUSED), (),
       f"{S23} speculative/eagle_utils.py:782; {HOOK}:1229-1237", "as threshold_single"),
    # ---- the draft model's own settings ----
    SG("speculative_draft_model_revision", ">=0.5.2", (HONOURED,), (),
       f"{HOOK}:123-131 (None becomes 'main' when a draft path is given); managers/tp_worker.py:474-478",
       "unset: 'main', the hub's default branch name"),
    SG("speculative_draft_model_quantization", ">=0.5.7", (HONOURED, ADJUSTED),
       ("sglang.draft_quantization_inherited", "sglang.draft_quantization_inherited_unknown_drafter",
        "sglang.flag_not_in_release"),
       f"{S23} arg_groups/serving_hook.py:676-710 (unset: := --quantization; 'unquant' -> None); configs/"
       "model_config.py:945-966; 0.5.7-0.5.18 server_args.py", "unset, the draft takes the target's --quantization"),
    SG("speculative_draft_load_format", ">=0.5.4", (HONOURED,), (),
       f"{S23} model_executor/model_runner.py:1546; arg_groups/model_path_hook.py:205", "unset: --load-format"),
    SG("speculative_draft_kv_cache_dtype", ">=0.5.18", (HONOURED,), (),
       f"{S23} model_executor/model_runner.py:1565, mem_cache/kv_cache_configurator.py:1200",
       "unset: --kv-cache-dtype"),
    SG("speculative_draft_attention_backend", ">=0.5.7", (HONOURED, ADJUSTED), (),
       f"{S23} model_executor/model_runner.py:320, speculative/draft_worker_common.py:46; {HOOK}:886-986 (DFLASH "
       "replaces an unsupported one)", "EAGLE/EAGLE3 use it as given",
       no_rule="adjusted only for DFLASH drafts and SM100 NVFP4 KV (kv_cache_hook.py:215-223), outside EAGLE-3"),
    SG("speculative_attention_mode", ">=0.5.2", (HONOURED, ADJUSTED), (),
       f"{S23} speculative/draft_utils.py:147, layers/attention/hybrid_attn_backend.py:41; arg_groups/"
       "serving_hook.py:331-335", "'prefill' (default) or 'decode' backend for verify and draft extend",
       no_rule="adjusted only with the deprecated --attention-backend tokenspeed_mla ('prefill' -> 'decode')"),
    SG("speculative_moe_runner_backend", ">=0.5.5", (HONOURED,), (),
       f"{S23} layers/moe/utils.py:495; arg_groups/overrides.py:1649 (_speculative_moe_runner_default)",
       "unset: --moe-runner-backend (flashinfer_megamoe: flashinfer_trtllm); no effect on a dense EAGLE-3 head"),
    SG("speculative_moe_a2a_backend", ">=0.5.7", (HONOURED,), (),
       f"{S23} arg_groups/moe_hook.py:627, overrides.py:861", "unset: --moe-a2a-backend"),
    SG("speculative_enable_w4a4_mxfp4_megamoe", ">=0.5.22", (HONOURED,), (), f"{S23} layers/moe/utils.py:595",
       "unset: --enable-w4a4-mxfp4-megamoe"),
    SG("speculative_dsa_topk_backend", ">=0.5.19", (HONOURED,), (),
       f"{S23} layers/attention/dsa/dsa_topk_backend.py:43", "DSA (DeepSeek-V3.2-style) draft layers only"),
    SG("decrypted_draft_config_file", ">=0.5.5,<0.5.9", (IGNORED,), NOT_READ,
       "sglang 0.5.5-0.5.8: declared in server_args.py, read nowhere", "never read"),
    SG("decrypted_draft_config_file", ">=0.5.9", (HONOURED,), (),
       f"{S23} configs/model_config.py:951 (the draft's config override), {HOOK}:147"),
    SG("enable_draft_weights_cpu_backup", ">=0.5.6", (HONOURED,), (),
       f"{S23} model_executor/model_runner_components/load_model_utils.py:308"),
    SG("enable_multi_layer_eagle", ">=0.5.7", (HONOURED, REFUSED), (),
       f"{S23} configs/model_config.py:971, speculative/spec_utils.py:414; {HOOK}:255-259",
       "multi-layer MTP drafts; refused with DP spec/prefill coordination and some samplers"),
    SG("speculative_draft_window_size", ">=0.5.12", (HONOURED, IGNORED, REFUSED), NOT_READ,
       f"{S23} models/llama_eagle3.py:289, speculative/spec_utils.py:336; {HOOK}:197-214",
       "EAGLE, EAGLE3 (Llama heads), NEXTN, DFLASH read it; other algorithms log 'has no effect'; <= 0 refused"),
    SG("speculative_draft_sink_size", ">=0.5.21", (HONOURED, IGNORED, REFUSED), NOT_READ,
       f"{S23} speculative/spec_utils.py:355; {HOOK}:221-235 (needs the window size)",
       "the built-in EAGLE/MTP draft-decode path only; EAGLE3 ignores it"),
    SG("speculative_dflash_draft_window_size", "==0.5.11", (HONOURED, IGNORED), NOT_READ,
       "sglang 0.5.11 speculative/dflash_worker.py (DFLASH only); 0.5.12 renames it --speculative-draft-window-size",
       "DFLASH only"),
    # ---- verification ----
    SG("speculative_use_rejection_sampling", ">=0.5.14", (HONOURED, ADJUSTED, REFUSED),
       ("sglang.rejection_sampling_topk",),
       f"{HOOK}:1186-1260 (EAGLE/EAGLE3 with topk 1 only; on by default on ROCm; turned on by block verification)",
       no_rule="turned on only on ROCm or by --speculative-use-block-verification, both logged"),
    SG("speculative_use_block_verification", ">=0.5.22", (HONOURED, REFUSED), (),
       f"{HOOK}:175-193 (EAGLE/EAGLE3/DFLASH/DSPARK on CUDA/ROCm; turns rejection sampling on for EAGLE)"),
    # ---- adaptive ----
    SG("speculative_adaptive", ">=0.5.11", (HONOURED, ADJUSTED),
       ("sglang.adaptive", "sglang.adaptive_disabled", "sglang.adaptive_params", "sglang.adaptive_steps"),
       f"{HOOK}:257-260, 1374-1427", "turned off for topk > 1, other algorithms, attention DP"),
    SG("speculative_adaptive_config", ">=0.5.11", (HONOURED, IGNORED), NOT_READ,
       f"{HOOK}:1392-1399; speculative/eagle_worker_v2.py:1347-1353", "read only with --speculative-adaptive"),
    # ---- other algorithms' arguments ----
    *(SG(name, versions, (HONOURED, IGNORED), NOT_READ, f"{S23} speculative/ngram_worker.py:100-124; 0.5.3-0.5.9 "
         "speculative/ngram_worker.py", "NGRAM only")
      for name, versions in (("speculative_ngram_min_bfs_breadth", ">=0.5.3"), ("speculative_ngram_capacity", ">=0.5.3"),
                             ("speculative_ngram_match_type", ">=0.5.10"),
                             ("speculative_ngram_branch_length", ">=0.5.3,<0.5.10"),
                             ("speculative_ngram_min_match_window_size", ">=0.5.3,<0.5.10"),
                             ("speculative_ngram_max_match_window_size", ">=0.5.3,<0.5.10"),
                             ("speculative_ngram_max_trie_depth", ">=0.5.10"),
                             ("speculative_ngram_external_corpus_path", ">=0.5.11"),
                             ("speculative_ngram_external_sam_budget", ">=0.5.11"),
                             ("speculative_ngram_external_corpus_max_tokens", ">=0.5.11"))),
    SG("speculative_ngram_match_type", ">=0.5.3,<0.5.10", (IGNORED,), NOT_READ,
       "sglang 0.5.3-0.5.9: read nowhere (speculative/cpp_ngram/ngram_cache.py:32 keeps match_type='BFS')",
       "never read"),
    SG("speculative_ngram_max_bfs_breadth", ">=0.5.3", (HONOURED, IGNORED), (*NOT_READ, "sglang.ngram_topk"),
       f"{S23} speculative/ngram_worker.py:116; {HOOK}:1306-1312 (NGRAM's topk)", "NGRAM only"),
    SG("speculative_dflash_block_size", ">=0.5.11", (HONOURED, IGNORED), NOT_READ, f"{HOOK}:368 (_handle_dflash)",
       "DFLASH only"),
    SG("speculative_domino_candidate_pool_size", ">=0.5.20", (HONOURED, IGNORED), NOT_READ,
       f"{S23} speculative/dflash_worker_v2.py:462", "DFLASH only"),
    *(SG(name, ">=0.5.16", (HONOURED, IGNORED), NOT_READ,
         f"{HOOK}:666-878 (_handle_dspark); speculative/dspark_components/dspark_planner.py", "DSPARK only")
      for name in ("speculative_dspark_block_size", "speculative_dspark_sps_table_path",
                   "speculative_dspark_confidence_sts_path", "speculative_dspark_align_verify_tokens_to_graph_tier")),
    SG("uno_lora_path", ">=0.5.20", (HONOURED, IGNORED), NOT_READ,
       f"{HOOK}:449-460 (_handle_uno), speculative/uno_lora.py:28", "UNO only"),
    SG("speculative_skip_dp_mlp_sync", ">=0.5.11,<0.5.23", (HONOURED,), (),
       "sglang 0.5.22 managers/scheduler.py:3860, speculative/dspark_components/dspark_planner.py:175",
       "attention-DP MLP sync of speculative batches"),
    SG("enable_beta_spec", "==0.5.4", (HONOURED, IGNORED), ("sglang.overlap_schedule",),
       "sglang 0.5.4 server_args.py _handle_speculative_decoding (overlap for EAGLE only)",
       "EAGLE keeps the overlap scheduler; EAGLE3 does not"),
    SG("spec_trace_dir", ">=0.5.15", (IGNORED,), NOT_READ,
       "sglang 0.5.15-0.5.23: declared (0.5.23 arg_groups/fields/spec.py:245), read nowhere (scan: reads 0)",
       "never read"),
    SG("speculative_boundary_reduction", ">=0.5.21", (INTERNAL,), (),
       f"{S23} arg_groups/fields/spec.py:43 (Arg(no_cli=True, resolvable=True)); layers/moe/utils.py:583",
       "no command-line flag: the engine resolves it"),
    *(SG(name, ">=0.5.15", (HONOURED,), (), f"{S23} server_args.py:787-791, arg_groups/pd_disaggregation_hook.py:211",
         "decoupled speculation (drafter and verifier as separate servers)")
      for name in ("decoupled_spec_role", "decoupled_spec_rank", "decoupled_spec_bind_endpoint",
                   "decoupled_spec_connect_endpoints")),
    SG("enable_gdn_replayssm_spec", "==0.5.16", (HONOURED,), (),
       "sglang 0.5.16 layers/attention (GDN linear attention replay of speculative verify)", "hybrid targets only"),
    SG("enable_linear_replayssm_spec", ">=0.5.17", (HONOURED, REFUSED), (),
       f"{S23} arg_groups/attention_hook.py:450-525, layers/attention/linear/kda_backend.py:586",
       "hybrid linear-attention targets only"),
    # ---- target arguments the speculative resolution sets ----
    SG("max_running_requests", ">=0.4.5", (HONOURED, ADJUSTED),
       ("sglang.max_running_requests", "sglang.max_running_per_dp_worker"),
       f"{HOOK}:1086-1095 (unset: 48); 0.4.5-0.5.12 server_args.py", "unset: 48 with speculation"),
    SG("disable_overlap_schedule", ">=0.4.5,<0.5.14", (HONOURED, ADJUSTED), ("sglang.overlap_schedule",),
       "sglang 0.4.5-0.5.13 server_args.py / speculative_hook.py (turned on for EAGLE unless spec v2)"),
    SG("disable_overlap_schedule", ">=0.5.14", (HONOURED,), (),
       f"{HOOK}:66-78 (forced only on a CPU device)", "spec v2 keeps the overlap scheduler on GPUs"),
    SG("enable_mixed_chunk", ">=0.4.7,<0.5.19", (ADJUSTED,), ("sglang.mixed_chunk_disabled",),
       "sglang 0.4.7-0.5.18 server_args.py / speculative_hook.py _handle_eagle_family", "turned off for EAGLE"),
    SG("enable_mixed_chunk", ">=0.5.19", (HONOURED, ADJUSTED), ("sglang.ngram_defaults",),
       f"{S23} speculative/spec_info.py supports_mixed_chunk; {HOOK} _handle_ngram",
       "EAGLE/EAGLE3 keep it; NGRAM turns it off"),
    SG("mem_fraction_static", "==0.4.7", (HONOURED,), (),
       "sglang 0.4.7 server_args.py:253-280 (only when unset: a lower default for speculative CUDA graphs)"),
    SG("disable_radix_cache", ">=0.5.8", (HONOURED,), (),
       "sglang 0.5.8 server_args.py:1438-1442 (NemotronH with speculation: turned on), 0.5.10 server_args.py:"
       "2190-2202 (Mamba no_buffer)", "only switched on (never off) for hybrid Mamba targets with speculation"),
    SG("attention_backend", ">=0.5.7,<0.5.10", (HONOURED,), (),
       "sglang 0.5.7 server_args.py:1530-1546 (only when unset: fa3 / trtllm_mha / flashinfer by GPU, topk and model)",
       "the per-GPU default depends on speculation; a given backend is kept"),
    SG("disable_hybrid_swa_memory", "==0.5.8", (HONOURED,), (),
       "sglang 0.5.8 server_args.py:1286-1292 (GPT-OSS with speculation: turned on)", "only switched on, GPT-OSS only"),
    SG("linear_attn_decode_backend", ">=0.5.11,<0.5.13", (HONOURED,), (),
       "sglang 0.5.11 server_args.py:2860-2870 (only when unset, and only without speculation)"),
    SG("disable_piecewise_cuda_graph", ">=0.5.10", (HONOURED,), (),
       "sglang 0.5.10+ server_args.py (piecewise CUDA graphs off for speculative targets when unset)"),
    SG("enable_lora_overlap_loading", ">=0.5.20", (HONOURED,), (),
       f"{S23} arg_groups/lora_hook.py:56-59 (unset: False), check_lora_speculative_compatibility", "LoRA only"),
    SG("lora_strict_loading", ">=0.5.20", (HONOURED,), (), f"{S23} arg_groups/lora_hook.py", "LoRA only"),
    SG("mamba_ssm_dtype", ">=0.5.16", (HONOURED,), (),
       f"{S23} arg_groups/attention_hook.py:506-522 (unset: float32 with --enable-linear-replayssm-spec)",
       "hybrid targets only"),
    # ---- the draft model's settings (draft_settings of the scan) ----
    SG("draft:model", ">=0.4.5", (HONOURED, ADJUSTED), ("sglang.mtp_draft_path",),
       f"{S23} managers/tp_worker.py:468-482 (model_path=speculative_draft_model_path); speculative/"
       "eagle_worker_v2.py:215-235 (the draft worker gets the target's tp_rank and server_args)",
       "MTP targets default it to the target; the draft always runs at the target's --tp-size (SGLang has no "
       "draft TP argument, so the scan finds no draft TP setting)"),
    SG("draft:revision", ">=0.4.5,<0.5.2", (ADJUSTED,), (),
       "sglang 0.4.5-0.5.1 managers/tp_worker.py (the draft's ModelConfig gets revision=server_args.revision)",
       "the draft loads at the target's --revision",
       no_rule="no draft revision flag exists yet; the target's --revision applies to both"),
    SG("draft:revision", ">=0.5.2", (HONOURED,), (),
       f"{S23} managers/tp_worker.py:474-478 (speculative_draft_model_revision)"),
    SG("draft:quantization", ">=0.4.5", (ADJUSTED,),
       ("sglang.draft_quantization_inherited", "sglang.draft_quantization_inherited_unknown_drafter"),
       "sglang 0.4.5 managers/tp_worker.py:60-73; 0.5.23 configs/model_config.py:945-966",
       "the target's --quantization unless --speculative-draft-model-quantization (0.5.7+); NEXTN/MTP drafts are "
       "the target's own (quantized) checkpoint, where that is what is wanted"),
    SG("draft:context length", ">=0.4.5", (ADJUSTED, REFUSED),
       ("sglang.draft_context_length", "sglang.draft_context_length_raised"),
       f"{S23} speculative/eagle_worker_v2.py:229 (the target's context length), configs/model_config.py:1291-1318",
       "the target's; refused when longer than the drafter's own unless SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN"),
    SG("draft:dtype", ">=0.4.5", (HONOURED,), (),
       f"{S23} configs/model_config.py:965 (dtype=--dtype, the target's)", "the target's --dtype"),
)  # fmt: skip

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
    VL("max_model_len", ">=0.8.3", (HONOURED, REFUSED), (),
       f"{CFG}:1686-1692, 1763-1804 _maybe_override_draft_max_model_len",
       "refused when above the draft's or the target's; unset: min of the two"),
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
    VL("disable_padded_drafter_batch", ">=0.11.0", (HONOURED, IGNORED), ("vllm.mrv2_ignores_key",),
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
    VL("synthetic_acceptance_rate", "==0.19.0", (HONOURED,), (), "vllm 0.19.0 config/speculative.py (synthetic "
       "rejection sampling)", "renamed synthetic_acceptance_rates in 0.20.0"),
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
       "the config's; mtp takes the target's from 0.10.2"),
    VL("draft:dtype", ">=0.8.3", (HONOURED,), (), f"{CFG}:1415 (dtype=the target's)", "always the target's --dtype"),
    VL("draft:tokenizer", ">=0.8.3", (HONOURED,), (), f"{CFG}:1409-1413",
       "the target's tokenizer (the draft's own with use_heterogeneous_vocab)"),
    VL("draft:context length", ">=0.8.3", (ADJUSTED, REFUSED), (),
       f"{CFG}:1686-1692, 1763-1804 (min of the draft's and the target's), 1807-1846; config/vllm.py:3025-3051",
       "capped at the target's; 0.33 V2 runner may lower the target's to the draft's",
       no_rule="needs the target's derived max_model_len (vLLM's own derivation, not modelled here)"),
    VL("draft:tensor parallel size", ">=0.8.3", (HONOURED, IGNORED),
       ("vllm.draft_tensor_parallel_size_ignored", "vllm.draft_tensor_parallel_size_default"),
       f"{CFG}:1890-1915 create_draft_parallel_config", "EAGLE heads use the target's parallel config"),
)  # fmt: skip

ROWS: tuple[ArgumentRow, ...] = SGLANG_ROWS + VLLM_ROWS


def rows_for(engine: str, name: str, release: str) -> list[ArgumentRow]:
    return [r for r in ROWS if r.engine == engine and r.name == name and r.covers(release)]


def enumerated(engine: str, release: str) -> list[str]:
    """What the scan found at a release: argument names, then the draft settings as "draft:<setting>"."""
    return [
        *scanned.arguments(engine, release),
        *(f"draft:{s}" for s in scanned.draft_settings(engine, release)),
    ]


@dataclass(frozen=True)
class Count:
    engine: str
    release: str
    enumerated: int  # arguments and draft settings the scan found
    classified: int  # with a row
    with_rule: int  # whose row names a lint rule
    silent: int  # adjusted or ignored in some condition
    silent_with_rule: int


def counts(engines: Iterable[str] = (SGLANG, VLLM)) -> list[Count]:
    """Per engine and release read: how many arguments there are, and how many a lint rule covers."""
    out = []
    for engine in engines:
        for release in scanned.releases(engine):
            names = enumerated(engine, release)
            found = {n: rows_for(engine, n, release) for n in names}
            silent = [n for n, rows in found.items() if any(set(r.verdicts) & set(SILENT) for r in rows)]
            out.append(Count(
                engine, release, len(names), sum(1 for rows in found.values() if rows),
                sum(1 for rows in found.values() if any(r.rules for r in rows)), len(silent),
                sum(1 for n in silent if any(r.rules for r in found[n])),
            ))  # fmt: skip
    return out


def markdown() -> str:
    """docs/speculative-arguments.md: the counts per release and the table."""
    lines = [
        "# Speculative arguments: what each engine release does with them",
        "",
        "Generated by `make docs` from `src/eaglewire/engines/arguments.py` and the arguments "
        "`scripts/speculative_args.py` read out of each wheel (`src/eaglewire/engines/<engine>/data/arguments.json`). "
        "Verdicts: honoured, adjusted, ignored, refused, internal (see the module docstring).",
        "",
        "| engine | release | arguments enumerated | classified | with a lint rule | adjusted/ignored | "
        "adjusted/ignored with a rule |",
        "|---|---|---|---|---|---|---|",
    ]
    for c in counts():
        lines.append(f"| {c.engine} | {c.release} | {c.enumerated} | {c.classified} | {c.with_rule} | {c.silent} | "
                     f"{c.silent_with_rule} |")  # fmt: skip
    lines += [
        "",
        "| engine | argument | releases | verdicts | lint rules | source | note |",
        "|---|---|---|---|---|---|---|",
    ]
    for r in ROWS:
        note = r.note + (f" (no rule: {r.no_rule})" if r.no_rule else "")
        lines.append(f"| {r.engine} | `{r.name}` | {r.versions} | {', '.join(r.verdicts)} | "
                     f"{', '.join(r.rules) or '-'} | {r.source} | {note} |")  # fmt: skip
    return "\n".join(lines) + "\n"
