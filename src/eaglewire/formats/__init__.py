"""Drafter checkpoint formats: detect, read, write and convert, with no verifier or target weights.

`read_drafter(dir)` gives one in-memory `DrafterCheckpoint` whatever the layout; `write_drafter(ckpt, dir, fmt,
ids)` writes it back in any format. Conversion goes through taps: the source's id list is turned into taps with
the convention of the source format, then into the destination's id list with the destination's convention
(`convert.py`), so the drafter is fed the same hidden states before and after.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from eaglewire.errors import InputError
from eaglewire.formats import eagle, modelopt, speculators
from eaglewire.formats.checkpoint import (
    PROVENANCE_KEY,
    DrafterArch,
    DrafterCheckpoint,
    Provenance,
    check_tensors,
)
from eaglewire.formats.vocab import check_vocab_tensors
from eaglewire.formats.weights import load_tensors, publish, save_tensors, staging_dir, weight_files
from eaglewire.jsonio import read_json_object, str_list, write_json

FORMATS = ("eagle", "speculators", "modelopt")
MODULES = {"eagle": eagle, "speculators": speculators, "modelopt": modelopt}
CONFIG_FILE = "config.json"

__all__ = [
    "FORMATS",
    "DrafterArch",
    "DrafterCheckpoint",
    "Provenance",
    "declared_ids",
    "detect",
    "read_drafter",
    "write_drafter",
]


def detect(cfg: dict, tensor_names: list[str], where: str) -> str:
    """Which format a config (and its tensor names, when known) is in."""
    if "speculators_model_type" in cfg:
        return "speculators"
    if any(n.startswith("midlayer.") for n in tensor_names):
        return "eagle"
    if modelopt.looks_like(cfg, tensor_names):
        return "modelopt"
    archs = str_list(cfg, "architectures", where)
    if (
        any(
            a in eagle.ARCHITECTURES + eagle.MLA_ARCHITECTURES or a.endswith(eagle.NEXTN_SUFFIXES)
            for a in archs
        )
        or any("eagle3" in a.lower() for a in archs)
        or "draft_vocab_size" in cfg
        or "eagle_config" in cfg
    ):
        return "eagle"
    shown = archs[0] if archs and isinstance(archs[0], str) else "no architectures"
    raise InputError(
        f"{where}: not an EAGLE-3 drafter config ({shown}; no speculators_model_type, eagle_config or "
        "draft_vocab_size) - is this the target model?"
    )


def _configs(directory: Path) -> dict[str, dict]:
    """config.json plus any other *config*.json (e.g. config_speculators.json), by file name."""
    out = {CONFIG_FILE: read_json_object(directory / CONFIG_FILE, "drafter config")}
    for p in sorted(directory.glob("*config*.json")):
        if (
            p.name not in (CONFIG_FILE, "generation_config.json", "tokenizer_config.json")
            and "index" not in p.name
        ):
            out[p.name] = read_json_object(p, "config")
    return out


LAYER_NAME = re.compile(r"layers\.(\d+)\.")


def held_layers(ckpt: DrafterCheckpoint) -> None:
    """A config that declares more decoder layers than the weights hold, layers 0..k-1 present and none beyond
    (SpecForge#129: num_hidden_layers copied from the target): the drafter is the k layers it holds, and
    `config_layers` keeps the count the engines build from config.json (`check` decides what each does)."""
    arch = ckpt.arch
    if arch is None or arch.num_layers <= 1:
        return
    present = {int(m.group(1)) for name in ckpt.tensors if (m := LAYER_NAME.match(name))}
    held = len(present)
    if not 1 <= held < arch.num_layers or present != set(range(held)):
        return
    ckpt.config_layers, arch.num_layers = arch.num_layers, held
    ckpt.notes.append(
        f"config.json declares num_hidden_layers {ckpt.config_layers}; the weights hold {held} decoder layer(s): "
        f"read as the {held}-layer drafter they are (an engine builds {ckpt.config_layers}: `eaglewire check`)"
    )


def read_drafter(path: Path | str, *, weights: bool | str = True) -> DrafterCheckpoint:
    """Read a drafter directory (or its config.json). `weights=False` reads the configs alone; `weights="lazy"`
    reads shapes from the safetensors headers and only the small tensors' values (the static check)."""
    from eaglewire.hub import resolve

    path = resolve(path, "drafter")
    directory = path.parent if path.is_file() else path
    if not directory.exists():
        raise InputError(f"{directory}: drafter directory not found")
    if not (directory / CONFIG_FILE).exists():
        raise InputError(f"{directory}: no config.json in this drafter directory")
    configs = _configs(directory)
    cfg = configs[CONFIG_FILE]
    files = weight_files(directory) if weights else []
    tensors = load_tensors(files, lazy=weights == "lazy") if files else {}
    where = str(directory / CONFIG_FILE)
    fmt = detect(cfg, list(tensors), where)
    ckpt = MODULES[fmt].read(cfg, tensors, where)
    ckpt.path = directory
    ckpt.configs = configs
    ckpt.weight_files = [f.name for f in files]
    ckpt.provenance = Provenance.from_config(cfg)
    if ckpt.provenance is None:
        for other in configs.values():
            ckpt.provenance = Provenance.from_config(other)
            if ckpt.provenance:
                break
    if any((directory / n).exists() for n in ("config.py", "modeling.py")) or "auto_map" in cfg:
        if not any("auto_map" in n for n in ckpt.notes):
            ckpt.notes.append(
                "code files / auto_map present: never imported (eaglewire reads config.json as data)"
            )
    if tensors:
        held_layers(ckpt)
        check_tensors(ckpt)
        if ckpt.arch is not None:
            check_vocab_tensors(ckpt)
    return ckpt


ID_KEYS = (
    "eagle_config.eagle_aux_hidden_state_layer_ids",
    "eagle_aux_hidden_state_layer_ids",
    "eagle_config.layer_ids",
    "dflash_config.target_layer_ids",
    "num_aux_hidden_states",
)


def declared_ids(config: dict) -> dict[str, object]:
    """Every id-related key a drafter config declares (dotted path -> value), for `inspect`."""
    from eaglewire.rules.taps import get_path

    return {k: get_path(config, k) for k in ID_KEYS if get_path(config, k) is not None}


def _disk_names(ckpt: DrafterCheckpoint, fmt: str) -> dict[str, str]:
    mod = MODULES[fmt]
    n_layers = ckpt.arch.num_layers if ckpt.arch else 1
    same = ckpt.format == fmt and ckpt.disk_names
    out = {}
    for name in ckpt.tensors:
        out[name] = (
            ckpt.disk_names.get(name, mod.disk_name(name, n_layers))
            if same
            else mod.disk_name(name, n_layers)
        )
    return out


def write_drafter(
    ckpt: DrafterCheckpoint,
    out: Path | str,
    fmt: str,
    ids: list[int] | None,
    *,
    config: dict | None = None,
    extra_files: dict[str, dict] | None = None,
    may_exist: tuple[str, ...] = (),
) -> Path:
    """Write `ckpt` as `fmt` into the new folder `out` with `ids` as its id list (`config` overrides the whole
    config.json, e.g. to keep a same-format round trip faithful). A new folder is staged and renamed into place;
    an existing folder may only hold the entries named in `may_exist` (each file is then written atomically)."""
    if fmt not in FORMATS:
        raise InputError(f"unknown format {fmt!r}: use one of {', '.join(FORMATS)}")
    if ckpt.arch is None and config is None:
        raise InputError(
            f"{ckpt.where()}: cannot write this drafter ({'; '.join(ckpt.notes) or 'unknown layout'})"
        )
    out = Path(out)
    existing = out.exists()
    if existing and (not out.is_dir() or any(p.name not in may_exist for p in out.iterdir())):
        raise InputError(f"{out}: destination exists and is not empty; choose a new folder")
    mod = MODULES[fmt]
    cfg = config if config is not None else mod.build_config(ckpt, ids)
    tensors = dict(ckpt.tensors)
    if fmt == "modelopt":
        for name in modelopt.DROPPED:
            tensors.pop(name, None)
    names = _disk_names(ckpt, fmt)
    on_disk = {names.get(k, k): v for k, v in tensors.items()}
    stage = out if existing else staging_dir(out)
    try:
        write_json(stage / CONFIG_FILE, cfg)
        for name, data in (extra_files or {}).items():
            write_json(stage / name, data)
        if on_disk:
            save_tensors(stage, on_disk)
        if not existing:
            publish(stage, out)
    except BaseException:
        if not existing:
            shutil.rmtree(stage, ignore_errors=True)
        raise
    return out


def provenance_block(ckpt: DrafterCheckpoint) -> dict | None:
    return ckpt.provenance.to_config() if ckpt.provenance else None


def tensor_summary(ckpt: DrafterCheckpoint) -> list[tuple[str, list[int], str]]:
    return [
        (ckpt.disk_names.get(k, k), list(v.shape), str(v.dtype).replace("torch.", ""))
        for k, v in sorted(ckpt.tensors.items())
    ]


__all__ += ["PROVENANCE_KEY", "provenance_block", "tensor_summary"]
