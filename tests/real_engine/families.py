"""Tiny random-weight targets of every EAGLE-3 family, for the engine's own answer on which taps it captures.

Each target is a config.json written by transformers' own config class for the family (the fields a real checkpoint
of it carries), with the zoo target's width (hidden 384), depth (8 layers) and vocabulary (its tokenizer files are
copied), so the zoo's drafters fit every one of them. The engine builds the model with random weights
(`load_format="dummy"`) in bfloat16, as these models are served: no weight file is written, and what is observed is the engine's model code, from its
registry and config checks down to the capture loop and the drafter's fc. Families transformers has no config class
for (shipped as remote code: MiniCPM, Kimi-K2) are written as their checkpoints write them.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from eaglewire import zoo

HIDDEN, LAYERS, HEADS, KV_HEADS, HEAD_DIM = 384, 8, 6, 2, 64
MOE = {"num_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128}
# MLA as DeepSeek-V3 and Kimi-K2 ship it (the engines' MLA kernels take its head sizes: 512 + 64 = 576)
MLA = {"q_lora_rank": 96, "kv_lora_rank": 512, "qk_rope_head_dim": 64, "qk_nope_head_dim": 128, "v_head_dim": 128,
       "n_routed_experts": 4, "num_experts_per_tok": 2, "moe_intermediate_size": 128, "n_shared_experts": 1,
       "first_k_dense_replace": 1, "n_group": 1, "topk_group": 1, "routed_scaling_factor": 1.0}  # fmt: skip
# family -> (transformers config class or None, architecture, fields beyond the common ones)
FAMILIES: dict[str, tuple[str | None, str, dict]] = {
    "llama": ("LlamaConfig", "LlamaForCausalLM", {}),
    "mistral": ("MistralConfig", "MistralForCausalLM", {"sliding_window": None}),
    "qwen2": ("Qwen2Config", "Qwen2ForCausalLM", {}),
    "qwen3": ("Qwen3Config", "Qwen3ForCausalLM", {}),
    "qwen3_moe": ("Qwen3MoeConfig", "Qwen3MoeForCausalLM", MOE),
    "gemma3": ("Gemma3TextConfig", "Gemma3ForCausalLM", {"sliding_window": 512}),
    "gpt_oss": ("GptOssConfig", "GptOssForCausalLM", {"num_local_experts": 4, "num_experts_per_tok": 2,
                                                      "sliding_window": 128}),
    "deepseek_v3": ("DeepseekV3Config", "DeepseekV3ForCausalLM", MLA),
    "llama4": ("Llama4TextConfig", "Llama4ForCausalLM", {"num_local_experts": 4, "num_experts_per_tok": 1,
                                                         "intermediate_size_mlp": 1024,
                                                         "interleave_moe_layer_step": 1}),
    "qwen3_next": ("Qwen3NextConfig", "Qwen3NextForCausalLM", MOE | {"full_attention_interval": 4}),
    "glm4_moe": ("Glm4MoeConfig", "Glm4MoeForCausalLM", {"n_routed_experts": 4, "num_experts_per_tok": 2,
                                                         "moe_intermediate_size": 128, "first_k_dense_replace": 1,
                                                         "n_group": 1, "topk_group": 1}),
    "minimax_m2": ("MiniMaxM2Config", "MiniMaxM2ForCausalLM", {"num_local_experts": 4, "num_experts_per_tok": 2,
                                                               "rotary_dim": HEAD_DIM // 2, "scoring_func": "sigmoid",
                                                               "use_routing_bias": True, "qk_norm_type": "per_layer"}),
    "kimi_k2": (None, "DeepseekV3ForCausalLM", MLA),
    "minicpm": (None, "MiniCPMForCausalLM", {"scale_emb": 12, "dim_model_base": 256, "scale_depth": 1.4}),
    # a target outside eaglewire's table whose every release's model code captured nothing (vLLM 0.10.2-0.33.0:
    # MiMoModel.forward overrides Qwen2's without the capture): the engine's own answer to that rule
    "mimo": ("Qwen2Config", "MiMoForCausalLM", {"num_nextn_predict_layers": 1}),
}  # fmt: skip
COMMON = {"hidden_size": HIDDEN, "num_hidden_layers": LAYERS, "num_attention_heads": HEADS,
          "num_key_value_heads": KV_HEADS, "head_dim": HEAD_DIM, "intermediate_size": 1024,
          "max_position_embeddings": 2048, "rms_norm_eps": 1e-5, "tie_word_embeddings": False}  # fmt: skip
TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "generation_config.json")
# MiniCPM and MiMo ship their config classes as remote code (configuration_minicpm.py, configuration_mimo.py, named
# by auto_map): these stand in for them, a plain PretrainedConfig that keeps every field of config.json (the
# engine's model code reads them), and MiMo's as its checkpoints define it, Qwen2's config under model_type `mimo`.
REMOTE_CONFIG = {
    "minicpm": ("configuration_minicpm.py", "MiniCPMConfig", "from transformers import PretrainedConfig\n\n\n"
                "class MiniCPMConfig(PretrainedConfig):\n    model_type = \"minicpm\"\n"),
    "mimo": ("configuration_mimo.py", "MiMoConfig", "from transformers import Qwen2Config\n\n\n"
             "class MiMoConfig(Qwen2Config):\n    model_type = \"mimo\"\n"),
}  # fmt: skip


def family_config(family: str) -> dict:
    """The config.json of the family's tiny target."""
    cls_name, arch, extra = FAMILIES[family]
    zoo_cfg = json.loads((zoo.target_dir() / "config.json").read_text())
    fields = COMMON | {"vocab_size": zoo_cfg["vocab_size"], "bos_token_id": zoo_cfg["bos_token_id"],
                       "eos_token_id": zoo_cfg["eos_token_id"], "pad_token_id": zoo_cfg["pad_token_id"]} | extra  # fmt: skip
    if cls_name is None:  # remote-code families: the config as their checkpoints write it
        model_type = family
        return {"architectures": [arch], "model_type": model_type, "hidden_act": "silu", "rope_theta": 10000.0,
                **fields}  # fmt: skip
    import transformers

    cfg = getattr(transformers, cls_name)(**fields).to_dict()
    cfg["architectures"] = [arch]
    if family in REMOTE_CONFIG:  # a remote config class built on transformers' (MiMo's on Qwen2's)
        cfg["model_type"] = family
    cfg.pop("transformers_version", None)
    return cfg


def write_target(family: str, out: Path, tokenizer_edit: dict | None = None) -> Path:
    """The family's tiny target (config and the zoo's tokenizer files; no weights: the engine loads dummy ones)."""
    out.mkdir(parents=True, exist_ok=True)
    for name in TOKENIZER_FILES:
        shutil.copy(zoo.target_dir() / name, out / name)
    if tokenizer_edit:
        tok = json.loads((out / "tokenizer_config.json").read_text())
        tok.update(tokenizer_edit)
        (out / "tokenizer_config.json").write_text(json.dumps(tok, indent=2))
    cfg = family_config(family)
    if family in REMOTE_CONFIG:
        name, cls, code = REMOTE_CONFIG[family]
        (out / name).write_text(code)
        cfg["auto_map"] = {"AutoConfig": f"{name.removesuffix('.py')}.{cls}"}
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    return out
