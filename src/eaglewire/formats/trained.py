"""The taps a drafter was trained on, read from the checkpoint alone: given by the user, recorded as eaglewire
provenance, or inferred from a trainer's record or the format's own convention, with how sure that is.

A format's id list is written in the convention of its primary reader/producer (`NATIVE`); the convention table
(`conventions.py`) turns it into taps.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglewire import conventions as conv
from eaglewire.errors import InputError
from eaglewire.formats.checkpoint import DrafterCheckpoint
from eaglewire.taps import Wiring
from eaglewire.targets import FAMILIES, TargetInfo

# The convention a format's own id list is written in: its primary reader/producer.
NATIVE = {"speculators": "speculators", "modelopt": "modelopt", "eagle": "sglang"}
CONFIDENCE = ("certain", "high", "medium", "low")


@dataclass
class TrainedTaps:
    wiring: Wiring | None
    basis: str  # where the answer comes from
    confidence: str  # one of CONFIDENCE
    ids: list[int] | None = None
    key: str | None = None
    row: str | None = None


def target_from_provenance(ckpt: DrafterCheckpoint) -> TargetInfo | None:
    t = ckpt.provenance.target if ckpt.provenance else None
    if not isinstance(t, dict) or t.get("family") not in FAMILIES:
        return None
    return TargetInfo(
        architecture=t.get("architecture", ""),
        text_architecture=t.get("architecture", ""),
        model_type=t["family"],
        family=t["family"],
        num_layers=int(t["num_layers"]),
        hidden_size=int(t["hidden_size"]),
        vocab_size=int(t["vocab_size"]),
        source="provenance",
        tokenizer_sha256=t.get("tokenizer_sha256"),
    )


def native_row(fmt: str, engine_class: str) -> conv.Convention:
    spec = conv.parse_spec(NATIVE[fmt])
    return conv.rows_for(spec, engine_class)[0].row


def trained_taps(
    ckpt: DrafterCheckpoint,
    target: TargetInfo,
    trained_on: Wiring | None = None,
    trained_with: str | None = None,
) -> TrainedTaps:
    """The training taps: given, from provenance, or inferred from the checkpoint (say how sure)."""
    L = target.num_layers
    if trained_on is not None:
        return TrainedTaps(trained_on.validate(L).served(), "--trained-on", "certain")
    if trained_with is not None:
        spec = conv.parse_spec(trained_with)
        rows = [m.row for m in conv.rows_for(spec, target.engine_class) if m.row.role == "train"]
        if not rows:
            raise InputError(
                f"--trained-with {trained_with}: not a trainer eaglewire knows (speculators, specforge, modelopt, eagle)"
            )
        cfg = _training_config(ckpt, rows[0])
        return _from_row(rows[0], cfg, L, f"--trained-with {trained_with}", "high")
    if ckpt.provenance and ckpt.provenance.taps:
        return TrainedTaps(
            Wiring.parse(ckpt.provenance.taps).validate(L).served(), "eaglewire provenance", "certain"
        )
    for name, cfg in ckpt.configs.items():
        if name != "config.json" and cfg.get("speculators_model_type") == "eagle3":
            row = native_row("speculators", target.engine_class)
            return _from_row(row, cfg, L, f"{name} (the speculators training config in the folder)", "high")
    if ckpt.format == "speculators":
        return _from_row(
            native_row("speculators", target.engine_class),
            ckpt.config,
            L,
            "speculators format (written by the speculators trainer)",
            "medium",
        )
    if ckpt.format == "modelopt":
        return _from_row(
            native_row("modelopt", target.engine_class), ckpt.config, L, "modelopt export", "medium"
        )
    declared = conv.get_path(ckpt.config, "eagle_config.eagle_aux_hidden_state_layer_ids")
    if declared:
        row = native_row("eagle", target.engine_class)
        return _from_row(
            row,
            ckpt.config,
            L,
            "eagle_config ids read the way SGLang (this format's engine) reads them",
            "low",
        )
    return TrainedTaps(
        Wiring.of(sorted(set(conv._default("2,L//2,L-3", L)))),
        "no ids anywhere: every framework's default",
        "medium",
    )


def _training_config(ckpt: DrafterCheckpoint, row: conv.Convention) -> dict:
    if row.framework == "speculators":
        for cfg in ckpt.configs.values():
            if cfg.get("speculators_model_type") == "eagle3":
                return cfg
    return ckpt.config


def _from_row(row: conv.Convention, cfg: dict, L: int, basis: str, confidence: str) -> TrainedTaps:
    res = conv.resolve(row, cfg, L)
    if not res.ok:
        return TrainedTaps(
            None, f"{basis}: {res.failure}", "low", list(res.ids or []), res.source_key, row.key
        )
    return TrainedTaps(
        res.taps,
        basis + ("" if res.source_key else " (no ids: the trainer's default)"),
        confidence,
        list(res.ids or []),
        res.source_key,
        row.key,
    )
