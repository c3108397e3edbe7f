"""Convert a drafter between formats without losing its wiring.

The source's ids are read as taps with the source format's own convention (or taken from provenance), then
written as the destination format's ids with the destination's convention. When the destination cannot express
those taps the conversion is refused with the reason and nothing is written. The destination also records the
taps as provenance, so later tools need no guessing.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from pathlib import Path

from eaglewire.engines import table
from eaglewire.errors import InputError
from eaglewire.formats import FORMATS, MODULES, DrafterCheckpoint, Provenance, read_drafter, write_drafter
from eaglewire.formats.checkpoint import PROVENANCE_KEY
from eaglewire.formats.trained import NATIVE, native_row, target_from_provenance, trained_taps
from eaglewire.formats.vocab import t2d_from_d2t
from eaglewire.rules import taps as conv
from eaglewire.taps import Wiring
from eaglewire.targets import TargetInfo, read_target


@dataclass
class ConvertResult:
    source: str
    source_format: str
    destination: str
    format: str
    taps: Wiring
    taps_basis: str
    ids: list[int] | None  # the destination's id list (its native key)
    extra_keys: dict[str, list[int]] = field(default_factory=dict)  # other engines' keys written alongside
    notes: list[str] = field(default_factory=list)

    def to_dict(self) -> dict:
        return {**asdict(self), "taps": str(self.taps)}


def convert(
    src: Path | str,
    dst: Path | str,
    to: str,
    target: Path | str | TargetInfo | None = None,
    trained_on: Wiring | None = None,
) -> ConvertResult:
    if to not in FORMATS:
        raise InputError(f"--to {to!r}: use one of {', '.join(FORMATS)}")
    ckpt = read_drafter(src)
    if ckpt.arch is None:
        raise InputError(f"{ckpt.where()}: cannot convert this drafter ({'; '.join(ckpt.notes)})")
    if not ckpt.has_weights:
        raise InputError(
            f"{ckpt.path}: no weights (model.safetensors, an index, or pytorch_model.bin) to convert"
        )
    tinfo = _target(ckpt, target)
    trained = trained_taps(ckpt, tinfo, trained_on)
    if trained.wiring is None:
        raise InputError(
            f"{ckpt.where()}: cannot tell which taps the source feeds ({trained.basis}); pass --trained-on"
        )
    taps = trained.wiring
    out = _prepared(ckpt, to)
    prov = out.provenance or Provenance()
    if not prov.taps or trained_on is not None:  # a recorded basis travels with the taps unchanged
        prov.taps_basis, prov.taps_known = trained.basis, trained.known
        prov.taps_assumptions = [str(a) for a in trained.assumptions] or None
    prov.taps = str(taps)
    prov.target = prov.target or tinfo.identity()
    prov.written_by = prov.written_by or f"eaglewire convert from {ckpt.format}"
    out.provenance = prov
    cfg, ids, extra, notes = format_config(out, to, taps, tinfo)
    result = ConvertResult(str(src), ckpt.format, str(dst), to, taps, trained.basis, ids, extra, notes)
    if ckpt.format == "modelopt" and "embed_tokens.weight" not in ckpt.tensors:
        result.notes.append("source has no embed_tokens (modelopt): the destination has none either")
    write_drafter(out, dst, to, ids, config=cfg)
    return result


def _target(ckpt: DrafterCheckpoint, target: Path | str | TargetInfo | None) -> TargetInfo:
    if isinstance(target, TargetInfo):
        return target
    if target is not None:
        return read_target(target)
    info = target_from_provenance(ckpt)
    if info is None:
        raise InputError(
            f"{ckpt.where()}: pass --target CONFIG_OR_DIR (needed to translate ids between conventions)"
        )
    return info


def _prepared(ckpt: DrafterCheckpoint, to: str) -> DrafterCheckpoint:
    out = ckpt.copy()
    if "t2d" not in out.tensors and "d2t" in out.tensors and out.arch is not None and to != "modelopt":
        out.tensors["t2d"] = t2d_from_d2t(out.tensors["d2t"], out.arch.vocab_size)
    if to != ckpt.format:
        out.disk_names = {}
    return out


def format_config(ckpt: DrafterCheckpoint, fmt: str, taps: Wiring, target: TargetInfo, strict: bool = True):
    """config.json for `ckpt` as `fmt` so that the format's engines feed `taps`: (config, ids, extra keys, notes).

    When the format's own convention cannot express the taps, `strict` raises InputError (convert refuses);
    otherwise (a freshly trained drafter must still be written) the id list is left out and a note says why:
    the provenance still records the taps, so `check` reports the problem for that engine."""
    L = target.num_layers
    fix = conv.config_value_for(native_row(fmt, target.family), taps, L)
    notes: list[str] = []
    if not fix.expressible:
        if strict:
            raise InputError(
                f"cannot write {taps} as a {fmt} checkpoint for this {target.family} target: {fix.reason}"
            )
        notes.append(f"{NATIVE[fmt]} cannot feed {taps}: {fix.reason}")
    cfg = MODULES[fmt].build_config(ckpt, fix.value)
    extra: dict[str, list[int]] = {}
    _carry(ckpt, fmt, cfg)
    if fmt in ("eagle", "modelopt"):
        # vLLM reads a top-level list first (MRV2 never reads eagle_config, V1 >= 0.22 would read the nested one
        # raw): write its value too, so every engine feeds the same taps from one config.json.
        for m in table.rows_for(table.parse_spec("vllm"), target.family):
            vfix = conv.config_value_for(m.row, taps, L)
            if vfix.expressible and vfix.key == "eagle_aux_hidden_state_layer_ids":
                cfg["eagle_aux_hidden_state_layer_ids"] = extra[vfix.key] = list(vfix.value or [])
                break
        else:
            notes.append(f"vLLM cannot feed {taps} on a {target.family} target: no top-level id list written")
    if fmt == "modelopt":
        notes.append(
            "the modelopt export format stores no t2d and no embed_tokens (engines use the target's)"
        )
    if ckpt.provenance is not None:
        cfg[PROVENANCE_KEY] = ckpt.provenance.to_config()
    return cfg, fix.value, extra, notes


# Text-model keys the drafter's attention and RoPE read that DrafterArch does not model: carried as written.
CARRIED = (
    "sliding_window",
    "use_sliding_window",
    "layer_types",
    "max_window_layers",
    "original_max_position_embeddings",
)


def _layer_config(cfg: dict, fmt: str) -> dict:
    if fmt == "speculators":
        inner = cfg.get("transformer_layer_config")
        return inner if isinstance(inner, dict) else {}
    return cfg


def _carry(ckpt: DrafterCheckpoint, fmt: str, cfg: dict) -> None:
    """Copy the CARRIED keys from the source's layer config into the destination's."""
    src, dst = _layer_config(ckpt.config, ckpt.format), _layer_config(cfg, fmt)
    for key in CARRIED:
        if key in src and key not in dst:
            dst[key] = src[key]


__all__ = ["ConvertResult", "convert", "format_config"]
