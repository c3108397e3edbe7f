"""`eaglewire inspect`: everything a drafter folder says about itself, and what each engine will feed it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from eaglewire.engines import models, table
from eaglewire.errors import InputError
from eaglewire.formats import declared_ids, read_drafter, tensor_summary
from eaglewire.formats.trained import TrainedTaps, trained_taps
from eaglewire.formats.vocab import VocabReport, checkpoint_vocab_report
from eaglewire.rules import taps as conv
from eaglewire.targets import TargetInfo, read_target


@dataclass
class ServedRow:
    row: str
    label: str
    source_key: str | None
    ids: list[int] | None
    taps: str | None
    failure: str | None


@dataclass
class Inspection:
    path: str
    format: str
    arch: dict | None
    tensors: list[tuple[str, list[int], str]]
    weight_files: list[str]
    configs: dict[str, dict[str, object]]  # file -> declared id keys
    readers: dict[str, str]
    provenance: dict | None
    vocab: VocabReport | None
    notes: list[str]
    target: TargetInfo | None = None
    trained: TrainedTaps | None = None
    served: list[ServedRow] = field(default_factory=list)
    target_error: str | None = None  # --target could not be read: the drafter part is still reported

    def to_dict(self) -> dict:
        return {
            "path": self.path,
            "format": self.format,
            "arch": self.arch,
            "weight_files": self.weight_files,
            "tensors": [{"name": n, "shape": s, "dtype": d} for n, s, d in self.tensors],
            "declared_ids": self.configs,
            "config_readers": self.readers,
            "provenance": self.provenance,
            "vocab": None
            if self.vocab is None
            else {
                "draft_vocab_size": self.vocab.draft_vocab_size,
                "vocab_size": self.vocab.vocab_size,
                "has_d2t": self.vocab.has_d2t,
                "has_t2d": self.vocab.has_t2d,
                "ok": self.vocab.ok,
                "findings": [f.__dict__ for f in self.vocab.findings],
            },
            "notes": self.notes,
            "target": None if self.target is None else self.target.identity(),
            "trained": None
            if self.trained is None
            else {
                "taps": str(self.trained.wiring) if self.trained.wiring else None,
                "basis": self.trained.basis,
                "confidence": self.trained.confidence,
            },
            "served": [s.__dict__ for s in self.served],
            "target_error": self.target_error,
        }


def readers_of(configs: dict[str, dict]) -> dict[str, str]:
    out = {}
    for name, cfg in configs.items():
        if name == "config.json":
            fmt = "speculators" if "speculators_model_type" in cfg else "EAGLE/SGLang"
            who = "vLLM (reads speculators format natively)" if fmt == "speculators" else "SGLang and vLLM"
            out[name] = f"{fmt} format; read by {who}"
        else:
            out[name] = "not read by any engine (a training record: ids here are what the trainer used)"
    return out


def inspect_drafter(path: Path | str, target: Path | str | None = None) -> Inspection:
    ckpt = read_drafter(path, weights="lazy")
    vrep = None
    if ckpt.arch is not None and ckpt.has_weights:
        vrep = checkpoint_vocab_report(ckpt)
    ins = Inspection(
        path=str(ckpt.path),
        format=ckpt.format,
        arch=ckpt.arch.to_dict() if ckpt.arch else None,
        tensors=tensor_summary(ckpt),
        weight_files=ckpt.weight_files,
        configs={name: declared_ids(cfg) for name, cfg in ckpt.configs.items()},
        readers=readers_of(ckpt.configs),
        provenance=ckpt.provenance.to_config()["provenance"] if ckpt.provenance else None,
        vocab=vrep,
        notes=list(ckpt.notes),
    )
    if target is not None:
        try:
            tinfo = read_target(target)
        except InputError as e:
            ins.target_error = str(e)
            return ins
        ins.target = tinfo
        ins.trained = trained_taps(ckpt, tinfo)
        for row in table.ROWS:
            if row.role != "serve" or not row.covers_model(models.model_file(row.framework, tinfo.family)[0]):
                continue
            res = conv.resolve(row, ckpt.config, tinfo.num_layers)
            ins.served.append(
                ServedRow(
                    row.key,
                    row.label,
                    res.source_key,
                    list(res.ids) if res.ids else None,
                    str(res.taps) if res.taps else None,
                    res.failure,
                )
            )
    return ins
