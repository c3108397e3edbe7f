"""Fixtures made by the peer libraries themselves (the ground truth for formats and forward parity)."""

from __future__ import annotations

from pathlib import Path

import torch


def speculators_drafter(
    out: Path,
    *,
    hidden: int = 64,
    vocab: int = 300,
    draft_vocab: int = 300,
    layers: int = 1,
    ids: list[int] | None = (1, 3, 5),
    norm_before_residual: bool = False,
    norm_before_fc: bool = False,
    fc_norm: bool = False,
    norm_output: bool = False,
    model_type: str = "llama",
    seed: int = 0,
):
    """A random-weight drafter written by speculators' own `save_pretrained` (returns the model too)."""
    from speculators.config import SpeculatorsConfig, VerifierConfig
    from speculators.models.eagle3 import Eagle3DraftModel, Eagle3SpeculatorConfig
    from speculators.proposals.greedy import GreedyTokenProposalConfig
    from transformers import LlamaConfig, Qwen3Config

    cls = LlamaConfig if model_type == "llama" else Qwen3Config
    tl = cls(
        vocab_size=vocab,
        hidden_size=hidden,
        intermediate_size=2 * hidden,
        num_hidden_layers=layers,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=512,
        rms_norm_eps=1e-6,
    )
    tl._attn_implementation = "eager"
    cfg = Eagle3SpeculatorConfig(
        transformer_layer_config=tl,
        draft_vocab_size=draft_vocab,
        norm_before_residual=norm_before_residual,
        norm_before_fc=norm_before_fc,
        fc_norm=fc_norm,
        norm_output=norm_output,
        eagle_aux_hidden_state_layer_ids=list(ids) if ids is not None else None,
        speculators_config=SpeculatorsConfig(
            algorithm="eagle3",
            proposal_methods=[GreedyTokenProposalConfig(speculative_tokens=3)],
            default_proposal_method="greedy",
            verifier=VerifierConfig(name_or_path=None, architectures=["LlamaForCausalLM"]),
        ),
    )
    torch.manual_seed(seed)
    model = Eagle3DraftModel(cfg)
    g = torch.Generator().manual_seed(seed)
    with torch.no_grad():
        for name, p in model.named_parameters():
            if "verifier" in name:
                continue
            if p.dim() >= 2:
                p.copy_(torch.randn(p.shape, generator=g) * 0.1)
            else:
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=g))
        if draft_vocab < vocab:
            chosen = torch.sort(torch.randperm(vocab, generator=g)[:draft_vocab]).values
            model.d2t.copy_(chosen - torch.arange(draft_vocab))
            model.t2d.zero_()
            model.t2d[chosen] = True
    model.save_pretrained(out)
    return model
