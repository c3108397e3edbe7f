"""Tiny real transformers targets for tests (random weights where the weights do not matter)."""

from __future__ import annotations

from pathlib import Path

import torch

from eaglewire.zoo import corpus
from eaglewire.zoo.build import lm


def stdlib_text(chars: int) -> str:
    train, _ = corpus.split(corpus.collect())
    out, n = [], 0
    for f in train[:: max(1, len(train) // 40)]:
        t = corpus.read_text(f)
        out.append(t)
        n += len(t)
        if n >= chars:
            break
    return "\n".join(out)[:chars]


def make_tiny_target(
    path: Path, family: str = "llama", layers: int = 6, hidden: int = 64, seed: int = 0
) -> Path:
    tok = lm.train_tokenizer([stdlib_text(200_000)], vocab_size=320)
    torch.manual_seed(seed)
    if family == "llama":
        from transformers import LlamaConfig, LlamaForCausalLM

        cfg = LlamaConfig(
            vocab_size=len(tok),
            hidden_size=hidden,
            intermediate_size=2 * hidden,
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=2,
            max_position_embeddings=512,
            eos_token_id=tok.eos_token_id,
            bos_token_id=tok.eos_token_id,
            pad_token_id=tok.eos_token_id,
        )
        model = LlamaForCausalLM(cfg)
    else:
        from transformers import DeepseekV3Config, DeepseekV3ForCausalLM

        cfg = DeepseekV3Config(
            vocab_size=len(tok),
            hidden_size=hidden,
            intermediate_size=2 * hidden,
            moe_intermediate_size=hidden // 2,
            num_hidden_layers=layers,
            num_attention_heads=4,
            num_key_value_heads=4,
            n_routed_experts=4,
            n_shared_experts=1,
            num_experts_per_tok=2,
            first_k_dense_replace=1,
            kv_lora_rank=16,
            q_lora_rank=24,
            qk_nope_head_dim=8,
            qk_rope_head_dim=8,
            v_head_dim=16,
            n_group=1,
            topk_group=1,
            max_position_embeddings=512,
            eos_token_id=tok.eos_token_id,
            bos_token_id=tok.eos_token_id,
            pad_token_id=tok.eos_token_id,
        )
        model = DeepseekV3ForCausalLM(cfg)
    model.eval().save_pretrained(path)
    tok.save_pretrained(path)
    return path


def layerless_target(src: Path, dst: Path) -> Path:
    """A copy of the target folder `src` as a sharded checkpoint (embedding | layers | final norm + lm_head,
    with its safetensors index) whose layer shard is then deleted: a job that runs proves it read no layer."""
    import json
    import shutil

    from safetensors.torch import load_file, save_file

    dst.mkdir(parents=True)
    for f in src.iterdir():
        if f.is_file() and not f.name.endswith(".safetensors"):
            shutil.copy(f, dst / f.name)
    tensors = load_file(str(src / "model.safetensors"))
    shards = {"model-00001-of-00003.safetensors": {}, "model-00002-of-00003.safetensors": {}}
    shards["model-00003-of-00003.safetensors"] = {}
    for name, t in tensors.items():
        which = 1 if "embed_tokens" in name else 3 if name in ("model.norm.weight", "lm_head.weight") else 2
        shards[f"model-0000{which}-of-00003.safetensors"][name] = t
    weight_map = {}
    for shard, part in shards.items():
        save_file(part, str(dst / shard))
        weight_map.update(dict.fromkeys(part, shard))
    (dst / "model.safetensors.index.json").write_text(json.dumps({"metadata": {}, "weight_map": weight_map}))
    (dst / "model-00002-of-00003.safetensors").unlink()
    return dst
