"""Hand-made checkpoints in the layouts other tools write (configs as in their templates, random weights)."""

from __future__ import annotations

import json
from pathlib import Path

import torch
from safetensors.torch import save_file

from eaglewire.formats import read_drafter

H, V, DV = 64, 300, 120  # drafter hidden, target vocab, draft vocab


def target_config(
    path: Path, family: str = "llama", layers: int = 12, hidden: int = H, vocab: int = V
) -> Path:
    """A target config.json (no weights)."""
    path.mkdir(parents=True, exist_ok=True)
    if family == "llama":
        cfg = {"architectures": ["LlamaForCausalLM"], "model_type": "llama"}
    elif family == "deepseek_v3":
        cfg = {"architectures": ["DeepseekV3ForCausalLM"], "model_type": "deepseek_v3"}
    elif family == "qwen3":
        cfg = {"architectures": ["Qwen3ForCausalLM"], "model_type": "qwen3"}
    elif family == "deepseek_v4":
        cfg = {"architectures": ["DeepseekV4ForCausalLM"], "model_type": "deepseek_v4", "hc_mult": 4}
    elif family == "kimi_k25":
        inner = {
            "architectures": ["DeepseekV3ForCausalLM"],
            "model_type": "kimi_k2",
            "num_hidden_layers": layers,
            "hidden_size": hidden,
            "vocab_size": vocab,
        }
        cfg = {
            "architectures": ["KimiK25ForConditionalGeneration"],
            "model_type": "kimi_k25",
            "text_config": inner,
        }
        (path / "config.json").write_text(json.dumps(cfg))
        return path
    else:
        raise ValueError(family)
    cfg.update(
        {
            "num_hidden_layers": layers,
            "hidden_size": hidden,
            "vocab_size": vocab,
            "intermediate_size": 2 * hidden,
            "num_attention_heads": 4,
        }
    )
    (path / "config.json").write_text(json.dumps(cfg))
    return path


def _layer0(g: torch.Generator, prefix: str, hidden: int = H, heads: int = 4, kv: int = 2) -> dict:
    hd = hidden // heads
    r = lambda *s: torch.randn(*s, generator=g) * 0.1  # noqa: E731
    return {
        prefix + "self_attn.q_proj.weight": r(heads * hd, 2 * hidden),
        prefix + "self_attn.k_proj.weight": r(kv * hd, 2 * hidden),
        prefix + "self_attn.v_proj.weight": r(kv * hd, 2 * hidden),
        prefix + "self_attn.o_proj.weight": r(hidden, heads * hd),
        prefix + "mlp.gate_proj.weight": r(2 * hidden, hidden),
        prefix + "mlp.up_proj.weight": r(2 * hidden, hidden),
        prefix + "mlp.down_proj.weight": r(hidden, 2 * hidden),
        prefix + "input_layernorm.weight": 1 + r(hidden),
        prefix + "hidden_norm.weight": 1 + r(hidden),
        prefix + "post_attention_layernorm.weight": 1 + r(hidden),
    }


def vocab_maps(g: torch.Generator, vocab: int = V, draft: int = DV):
    chosen = torch.sort(torch.randperm(vocab, generator=g)[:draft]).values
    t2d = torch.zeros(vocab, dtype=torch.bool)
    t2d[chosen] = True
    return chosen - torch.arange(draft), t2d


def llama_fields(hidden: int = H, vocab: int = V) -> dict:
    return {
        "model_type": "llama",
        "hidden_size": hidden,
        "intermediate_size": 2 * hidden,
        "num_hidden_layers": 1,
        "num_attention_heads": 4,
        "num_key_value_heads": 2,
        "rms_norm_eps": 1e-6,
        "max_position_embeddings": 512,
        "rope_theta": 10000.0,
        "hidden_act": "silu",
        "vocab_size": vocab,
        "tie_word_embeddings": False,
    }


def config_only_drafter(path: Path, vocab: int = 128256, ids: list[int] | None = None, nested: bool = False):
    """An EAGLE-3 head's config.json alone (hidden 4096, no weights), read as check reads a drafter: its ids at the
    top level, under `eagle_config` (`nested`), or none (each engine feeds its default)."""
    path.mkdir(parents=True, exist_ok=True)
    config = {**llama_fields(4096, vocab), "architectures": ["LlamaForCausalLMEagle3"], "draft_vocab_size": 32000,
              "target_hidden_size": 4096}  # fmt: skip
    if ids is not None:
        key = {"eagle_config": {"eagle_aux_hidden_state_layer_ids": ids}} if nested else {}
        config |= key or {"eagle_aux_hidden_state_layer_ids": ids}
    (path / "config.json").write_text(json.dumps(config))
    return read_drafter(path, weights="lazy")


def eagle_drafter(
    path: Path,
    ids: list[int] | None = None,
    seed: int = 0,
    n_aux: int | None = None,
    embed: bool = True,
    extra_config: dict | None = None,
) -> Path:
    """SpecForge/EAGLE layout: LlamaForCausalLMEagle3, `midlayer.*`, ids under eagle_config."""
    path.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(seed)
    n = n_aux or (len(ids) if ids else 3)
    tensors = _layer0(g, "midlayer.")
    d2t, t2d = vocab_maps(g)
    tensors.update(
        {
            "fc.weight": torch.randn(H, n * H, generator=g) * 0.1,
            "norm.weight": torch.ones(H),
            "lm_head.weight": torch.randn(DV, H, generator=g) * 0.1,
            "d2t": d2t,
            "t2d": t2d,
        }
    )
    if embed:
        tensors["embed_tokens.weight"] = torch.randn(V, H, generator=g) * 0.1
    cfg = {
        "architectures": ["LlamaForCausalLMEagle3"],
        **llama_fields(),
        "draft_vocab_size": DV,
        "target_hidden_size": H,
    }
    if ids is not None:
        cfg["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": ids, "use_aux_hidden_state": True}
    cfg.update(extra_config or {})
    (path / "config.json").write_text(json.dumps(cfg, indent=2))
    save_file(tensors, str(path / "model.safetensors"))
    return path


def modelopt_drafter(path: Path, ids: list[int], seed: int = 0) -> Path:
    """modelopt 0.47 export layout: template config, `layers.0.*`, d2t only, no embed_tokens."""
    path.mkdir(parents=True, exist_ok=True)
    g = torch.Generator().manual_seed(seed)
    tensors = _layer0(g, "layers.0.")
    d2t, _ = vocab_maps(g)
    tensors.update(
        {
            "fc.weight": torch.randn(H, len(ids) * H, generator=g) * 0.1,
            "norm.weight": torch.ones(H),
            "lm_head.weight": torch.randn(DV, H, generator=g) * 0.1,
            "d2t": d2t,
        }
    )
    cfg = {
        "architectures": ["LlamaForCausalLMEagle3"],
        **llama_fields(),
        "draft_vocab_size": DV,
        "use_cache": True,
        "eagle_config": {
            "eagle_aux_hidden_state_layer_ids": ids,
            "use_aux_hidden_state": True,
            "use_input_layernorm_in_first_layer": True,
            "use_last_layernorm": True,
            "use_mtp_layernorm": False,
            "next_layer_regular": True,
            "parallel_draft_step": 1,
            "parallel_draft_heads_num_layers": 1,
        },
    }
    (path / "config.json").write_text(json.dumps(cfg, indent=4))
    save_file(tensors, str(path / "model.safetensors"))
    return path
