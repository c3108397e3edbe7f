"""modelopt export (nvidia-modelopt 0.47.0 `EagleExporter`): Format A's config template with modelopt keys in
`eagle_config`, weights named `layers.{i}.*`, `d2t` only (no `t2d`) and no `embed_tokens` (the engine takes the
target's). Source: modelopt/torch/export/plugins/hf_spec_export.py:48-64, 182-225; hf_spec_configs.py:18-56.
"""

from __future__ import annotations

import torch

from eaglewire.formats import eagle
from eaglewire.formats.checkpoint import PROVENANCE_KEY, DrafterCheckpoint, layer_config_dict

NAME = "modelopt"
EAGLE_CONFIG_KEYS = (
    "use_input_layernorm_in_first_layer",
    "use_last_layernorm",
    "use_mtp_layernorm",
    "next_layer_regular",
    "parallel_draft_step",
    "parallel_draft_heads_num_layers",
)
DROPPED = ("t2d", "embed_tokens.weight")  # not part of the export (hf_spec_export.py:48-64)


def looks_like(cfg: dict, tensor_names: list[str]) -> bool:
    ec = cfg.get("eagle_config")
    if isinstance(ec, dict) and any(k in ec for k in EAGLE_CONFIG_KEYS):
        return True
    return (
        bool(tensor_names)
        and any(n.startswith("layers.0.") for n in tensor_names)
        and "t2d" not in tensor_names
        and "embed_tokens.weight" not in tensor_names
        and not any(n.startswith("midlayer.") for n in tensor_names)
    )


def read(cfg: dict, tensors: dict[str, torch.Tensor], where: str) -> DrafterCheckpoint:
    ckpt = eagle.read(cfg, tensors, where, fmt=NAME)
    ec = cfg.get("eagle_config") or {}
    if isinstance(ec.get("parallel_draft_step"), int) and ec["parallel_draft_step"] > 1:
        ckpt.notes.append(
            "parallel_draft_step > 1 (parallel draft heads): eaglewire runs only the EAGLE-3 head"
        )
    return ckpt


def disk_name(canonical: str, num_layers: int) -> str:
    return canonical


def build_config(ckpt: DrafterCheckpoint, ids: list[int] | None) -> dict:
    arch = ckpt.arch
    assert arch is not None
    cfg = {"architectures": list(eagle.ARCHITECTURES), **layer_config_dict(arch)}
    cfg.update({"draft_vocab_size": arch.draft_vocab_size, "use_cache": True})
    cfg["eagle_config"] = {
        "eagle_aux_hidden_state_layer_ids": list(ids) if ids is not None else [],
        "use_aux_hidden_state": True,
        "use_input_layernorm_in_first_layer": arch.embed_norm,
        "use_last_layernorm": True,
        "use_mtp_layernorm": False,
        "next_layer_regular": True,
        "parallel_draft_step": 1,
        "parallel_draft_heads_num_layers": 1,
    }
    if arch.target_hidden_size != arch.hidden_size:
        cfg["target_hidden_size"] = arch.target_hidden_size
    if arch.norm_before_fc:
        cfg["eagle_config"]["norm_before_fc"] = True
        cfg["norm_before_fc"] = True
    for flag in ("norm_before_residual", "fc_norm", "norm_output"):
        if getattr(arch, flag):
            cfg[flag] = True
    if ckpt.provenance is not None:
        cfg[PROVENANCE_KEY] = ckpt.provenance.to_config()
    return cfg


set_ids = eagle.set_ids
