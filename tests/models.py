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
