"""Format B, speculators (`speculators_model_type: eagle3`): the layout `Eagle3DraftModel.save_pretrained`
writes (speculators 0.9.0), which vLLM reads directly. `transformer_layer_config` holds the decoder-layer config
(vocab_size = target vocab); ids are TOP-LEVEL `eagle_aux_hidden_state_layer_ids` in vLLM semantics.

Reading never touches `speculators_config.verifier` (the speculators loader insists on loading the verifier's
weights, which is exactly what fails offline) and never imports the `config.py` that `auto_map` points at.
"""

from __future__ import annotations

import torch

from eaglewire import __version__
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

NAME = "speculators"
ARCHITECTURE = (
    "Eagle3DraftModel"  # what speculators 0.9.0 save_pretrained writes (docs show Eagle3Speculator)
)
NEVER_SAVED = ("verifier_lm_head.weight", "verifier_norm.weight")  # speculators models/eagle3/core.py:31-42


def read(cfg: dict, tensors: dict[str, torch.Tensor], where: str) -> DrafterCheckpoint:
    kind = cfg.get("speculators_model_type")
    if kind != "eagle3":
        raise InputError(
            f"{where}: speculators_model_type {kind!r} is not an EAGLE-3 drafter (expected 'eagle3')"
        )
    tl = cfg.get("transformer_layer_config")
    if not isinstance(tl, dict):
        raise InputError(f"{where}: key 'transformer_layer_config' must be an object")
    tl_where = f"{where} transformer_layer_config"
    base = layer_arch(tl, tl_where)
    ids = cfg.get("eagle_aux_hidden_state_layer_ids")
    if ids is not None and (
        not isinstance(ids, list) or not all(isinstance(v, int) and not isinstance(v, bool) for v in ids)
    ):
        raise InputError(
            f"{where}: key 'eagle_aux_hidden_state_layer_ids' must be a list of integers, found {ids!r}"
        )
    notes = []
    canon = {k: v for k, v in tensors.items() if k not in NEVER_SAVED}
    target_hidden = cfg.get("target_hidden_size") or base["hidden_size"]
    if not isinstance(target_hidden, int) or target_hidden <= 0:
        raise InputError(
            f"{where}: key 'target_hidden_size' must be a positive integer, found {target_hidden!r}"
        )
    if "auto_map" in cfg:
        notes.append("auto_map / config.py present: never imported (eaglewire reads config.json as data)")
    if "norm_before_residual" not in cfg:
        notes.append(
            "no norm_before_residual key: speculators reads False, vLLM's speculators loader defaults to True"
        )
    arch = DrafterArch(
        **base,
        vocab_size=cfg_int(tl, "vocab_size", tl_where),
        draft_vocab_size=cfg_int(cfg, "draft_vocab_size", where, default=tl.get("vocab_size")),
        target_hidden_size=target_hidden,
        n_aux=len(ids) if ids else 3,
        norm_before_residual=cfg_bool(cfg, "norm_before_residual", where),
        fc_norm=cfg_bool(cfg, "fc_norm", where),
        norm_before_fc=cfg_bool(cfg, "norm_before_fc", where),
        norm_output=cfg_bool(cfg, "norm_output", where),
    )
    if arch.fc_norm and arch.norm_before_fc:
        raise InputError(
            f"{where}: norm_before_fc and fc_norm are mutually exclusive (speculators config.py:89-96)"
        )
    return DrafterCheckpoint(format=NAME, arch=arch, tensors=canon, config=cfg, disk_names={}, notes=notes)


def build_config(
    ckpt: DrafterCheckpoint, ids: list[int] | None, verifier: dict | None = None, speculative_tokens: int = 3
) -> dict:
    """A config.json as speculators 0.9.0 writes it (validated in tests through Eagle3SpeculatorConfig)."""
    arch = ckpt.arch
    assert arch is not None
    tl = layer_config_dict(arch)
    rp = dict(arch.rope_parameters)
    tl.pop("rope_theta")
    tl.pop("rope_scaling")
    tl["rope_parameters"] = rp
    cfg = {
        "architectures": [ARCHITECTURE],
        "speculators_model_type": "eagle3",
        "speculators_version": "0.9.0",
        "speculators_config": {
            "algorithm": "eagle3",
            "default_proposal_method": "greedy",
            "proposal_methods": [
                {
                    "proposal_type": "greedy",
                    "speculative_tokens": speculative_tokens,
                    "verifier_accept_k": 1,
                    "accept_tolerance": 0.0,
                }
            ],
            "verifier": verifier or {"name_or_path": None, "architectures": []},
        },
        "transformer_layer_config": tl,
        "draft_vocab_size": arch.draft_vocab_size,
        "target_hidden_size": arch.target_hidden_size,
        "eagle_aux_hidden_state_layer_ids": list(ids) if ids is not None else None,
        "norm_before_residual": arch.norm_before_residual,
        "norm_before_fc": arch.norm_before_fc,
        "fc_norm": arch.fc_norm,
        "norm_output": arch.norm_output,
        "embed_requires_grad": False,
        "tie_word_embeddings": False,
        "written_by": f"eaglewire {__version__}",
    }
    if ckpt.provenance is not None:
        cfg[PROVENANCE_KEY] = ckpt.provenance.to_config()
    return cfg


def set_ids(cfg: dict, ids: list[int]) -> dict:
    out = dict(cfg)
    out["eagle_aux_hidden_state_layer_ids"] = list(ids)
    return out


def disk_name(canonical: str, num_layers: int) -> str:
    """speculators' names are the canonical ones."""
    return canonical
