"""Format A, "EAGLE/SGLang native" (`LlamaForCausalLMEagle3`): SGLang, SpecForge, EAGLE and most published
EAGLE-3 drafters. A plain LlamaConfig plus `draft_vocab_size`, optional `target_hidden_size`, ids under
`eagle_config`; weights `midlayer.*` (layer 0), `fc`, `norm`, `lm_head`, `d2t`, `t2d`, optional `embed_tokens`.

Multi-layer drafts follow SGLang 0.5.23 (llama_eagle3.py): layers >= 1 are `layers.{i}.*` and their
pre-attention norm is stored as `hidden_norm` (vLLM and speculators call it `input_layernorm`).
"""

from __future__ import annotations

import re

import torch

from eaglewire.errors import InputError
from eaglewire.formats.checkpoint import (
    PROVENANCE_KEY,
    DrafterArch,
    DrafterCheckpoint,
    cfg_bool,
    cfg_int,
    layer_arch,
    layer_config_dict,
)
from eaglewire.jsonio import str_list
from eaglewire.rules.structure import NEXTN_SUFFIXES  # MTP/NextN draft layers: not EAGLE-3 heads

NAME = "eagle"
ARCHITECTURES = ("LlamaForCausalLMEagle3",)
MLA_ARCHITECTURES = ("Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM")
RUNNABLE_LAYERS = ("llama", "qwen3", "qwen2", "mistral")
LEGACY = {"aux_norm_low": "fc_norm.0", "aux_norm_mid": "fc_norm.1", "aux_norm_high": "fc_norm.2"}


def canonical_names(disk: list[str]) -> dict[str, str]:
    """disk name -> canonical name."""
    out = {}
    for name in disk:
        c = name[len("model.") :] if name.startswith("model.") else name
        if c.startswith("midlayer."):
            c = "layers.0." + c[len("midlayer.") :]
        for old, new in LEGACY.items():
            if c.startswith(old + "."):
                c = new + c[len(old) :]
        m = re.match(r"layers\.(\d+)\.hidden_norm\.(weight)$", c)
        if m and int(m.group(1)) >= 1:
            c = f"layers.{m.group(1)}.input_layernorm.weight"
        out[name] = c
    return out


def eagle_config(cfg: dict, where: str) -> dict:
    ec = cfg.get("eagle_config")
    if ec is None:
        return {}
    if not isinstance(ec, dict):
        raise InputError(f"{where}: key 'eagle_config' must be an object, found {type(ec).__name__}")
    return ec


def n_aux_declared(cfg: dict, where: str) -> int:
    """How many aux states SGLang/vLLM build fc for: num_aux_hidden_states, else len(eagle_config ids), else 3
    (sglang 0.5.23 llama_eagle3.py:156-161; vllm 0.33.0 llama_eagle3.py:209-221)."""
    if cfg.get("num_aux_hidden_states") is not None:
        return cfg_int(cfg, "num_aux_hidden_states", where)
    ids = eagle_config(cfg, where).get("eagle_aux_hidden_state_layer_ids")
    return len(ids) if isinstance(ids, list) and ids else 3


def read(cfg: dict, tensors: dict[str, torch.Tensor], where: str, fmt: str = NAME) -> DrafterCheckpoint:
    names = canonical_names(list(tensors))
    canon = {names[k]: v for k, v in tensors.items()}
    disk = {c: d for d, c in names.items()}
    archs = str_list(cfg, "architectures", where)
    ec = eagle_config(cfg, where)
    notes = []
    static_only = None
    if any(a in MLA_ARCHITECTURES for a in archs):
        static_only = "MLA drafter (Eagle3DeepseekV2ForCausalLM): static checks only, no forward pass here"
    elif any(a.endswith(NEXTN_SUFFIXES) for a in archs):
        static_only = (
            f"{archs[0]} is an MTP/NextN draft layer, not an EAGLE-3 head (it takes no aux hidden states)"
        )
    elif ec.get("use_aux_hidden_state") is False and "fc.weight" not in canon:
        fc = "there is no fc" if canon else "no weights here to show an fc"
        static_only = f"use_aux_hidden_state is false and {fc}: an EAGLE-1-style head fed the final state"
    elif cfg.get("model_type", "llama") not in RUNNABLE_LAYERS:
        static_only = (
            f"drafter layer model_type {cfg.get('model_type')!r}: static checks only, no forward pass here"
        )
    if static_only:
        notes.append(static_only)
        return DrafterCheckpoint(
            format=fmt, arch=None, tensors=canon, config=cfg, disk_names=disk, notes=notes
        )
    base = layer_arch(cfg, where)
    vocab = cfg_int(cfg, "vocab_size", where)
    draft_vocab = cfg.get("draft_vocab_size")
    if draft_vocab is None:
        lm = canon.get("lm_head.weight")
        draft_vocab = int(lm.shape[0]) if lm is not None else vocab
        notes.append(
            "draft_vocab_size is null or absent: the draft vocabulary is taken as the whole vocabulary (which lm_head "
            "each release then scores with, or whether it loads at all: `check`)"
        )
    else:
        draft_vocab = cfg_int(cfg, "draft_vocab_size", where)
    target_hidden = cfg_int(cfg, "target_hidden_size", where, default=base["hidden_size"])
    fc = canon.get("fc.weight")
    n_aux = n_aux_declared(cfg, where)
    if (
        fc is not None
        and fc.dim() == 2
        and fc.shape[1] % target_hidden == 0
        and fc.shape[1] // target_hidden != n_aux
    ):
        notes.append(
            f"fc.weight takes {fc.shape[1] // target_hidden} aux states but the engines build fc for {n_aux} "
            "(num_aux_hidden_states / eagle_config ids / default 3)"
        )
        n_aux = fc.shape[1] // target_hidden
    arch = DrafterArch(
        **base,
        vocab_size=vocab,
        draft_vocab_size=draft_vocab,
        target_hidden_size=target_hidden,
        n_aux=n_aux,
        fc_bias=cfg_bool(cfg, "bias", where),
        norm_before_residual=cfg_bool(cfg, "norm_before_residual", where),
        fc_norm=cfg_bool(cfg, "fc_norm", where) or cfg_bool(cfg, "use_aux_norm", where),
        norm_before_fc=cfg_bool(ec, "norm_before_fc", where, default=cfg_bool(cfg, "norm_before_fc", where)),
        norm_output=cfg_bool(cfg, "norm_output", where),
        embed_norm=cfg_bool(ec, "use_input_layernorm_in_first_layer", where, default=True),
    )
    return DrafterCheckpoint(format=fmt, arch=arch, tensors=canon, config=cfg, disk_names=disk, notes=notes)


def disk_name(canonical: str, num_layers: int) -> str:
    """Default on-disk name of a canonical tensor in this format."""
    if canonical.startswith("layers.0."):
        return "midlayer." + canonical[len("layers.0.") :]
    m = re.match(r"layers\.(\d+)\.input_layernorm\.weight$", canonical)
    if m and int(m.group(1)) >= 1:
        return f"layers.{m.group(1)}.hidden_norm.weight"
    return canonical


def build_config(ckpt: DrafterCheckpoint, ids: list[int] | None) -> dict:
    """A fresh Format-A config.json for a drafter (used when converting into this format)."""
    arch = ckpt.arch
    assert arch is not None
    cfg = {"architectures": list(ARCHITECTURES), **layer_config_dict(arch)}
    cfg.update({"draft_vocab_size": arch.draft_vocab_size, "target_hidden_size": arch.target_hidden_size})
    ec: dict = {"use_aux_hidden_state": True}
    if ids is not None:
        ec["eagle_aux_hidden_state_layer_ids"] = list(ids)
    elif arch.n_aux != 3:
        cfg["num_aux_hidden_states"] = arch.n_aux
    if (
        arch.norm_before_fc
    ):  # SGLang and TensorRT-LLM read it under eagle_config, vLLM 0.18-0.21 top-level only
        ec["norm_before_fc"] = True
        cfg["norm_before_fc"] = True
    cfg["eagle_config"] = ec
    for flag in ("norm_before_residual", "fc_norm", "norm_output"):
        if getattr(arch, flag):
            cfg[flag] = True
    if arch.fc_bias:
        cfg["bias"] = True
    if ckpt.provenance is not None:
        cfg[PROVENANCE_KEY] = ckpt.provenance.to_config()
    return cfg


def set_ids(cfg: dict, ids: list[int]) -> dict:
    """Write an id list where SGLang reads it (and the V1 vLLM runner falls back to)."""
    out = dict(cfg)
    ec = dict(out.get("eagle_config") or {})
    ec["eagle_aux_hidden_state_layer_ids"] = list(ids)
    ec.setdefault("use_aux_hidden_state", True)
    out["eagle_config"] = ec
    return out
