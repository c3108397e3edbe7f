"""Load and save checkpoint tensors: safetensors (single file or sharded with an index), legacy `.bin` only
through `torch.load(weights_only=True)`. Never pickle, never run code found in a checkpoint.

Every failure is an `InputError` naming the file; writes are atomic so a failed write leaves nothing behind.
"""

from __future__ import annotations

import json
import os
import struct
import tempfile
from pathlib import Path

import torch
from safetensors import SafetensorError
from safetensors.torch import load_file, save

from eaglewire.errors import InputError
from eaglewire.jsonio import atomic_write_bytes, read_json_object

SAFETENSORS = "model.safetensors"
SAFETENSORS_INDEX = "model.safetensors.index.json"
BIN = "pytorch_model.bin"
BIN_INDEX = "pytorch_model.bin.index.json"


def weight_files(directory: Path) -> list[Path]:
    """The weight files of a checkpoint directory, in load order; [] when it has none."""
    for index_name in (SAFETENSORS_INDEX, BIN_INDEX):
        index = directory / index_name
        if index.exists():
            data = read_json_object(index, "weights index")
            weight_map = data.get("weight_map")
            if not isinstance(weight_map, dict) or not weight_map:
                raise InputError(f"{index}: key 'weight_map' must be a non-empty object")
            names = sorted(set(weight_map.values()))
            for n in names:
                if not isinstance(n, str) or "/" in n or n.startswith("."):
                    raise InputError(f"{index}: weight_map names a bad shard file {n!r}")
                if not (directory / n).exists():
                    raise InputError(f"{directory / n}: shard listed in {index_name} is missing")
            return [directory / n for n in names]
    for name in (SAFETENSORS, BIN):
        if (directory / name).exists():
            return [directory / name]
    loose = sorted(directory.glob("*.safetensors"))
    return loose


def _check_safetensors_header(path: Path) -> dict:
    """Reject truncated or malformed files with a clear line before safetensors raises something vaguer; return
    the header (tensor name -> dtype, shape, data_offsets)."""
    size = path.stat().st_size
    with path.open("rb") as f:
        head = f.read(8)
        if len(head) < 8:
            raise InputError(f"{path}: truncated safetensors file ({size} bytes, no header)")
        (n,) = struct.unpack("<Q", head)
        if n > size - 8:
            raise InputError(f"{path}: truncated safetensors file (header claims {n} bytes, file has {size})")
        try:
            header = json.loads(f.read(n))
        except (json.JSONDecodeError, UnicodeDecodeError):
            raise InputError(f"{path}: malformed safetensors header") from None
    if not isinstance(header, dict):
        raise InputError(f"{path}: malformed safetensors header")
    end = 0
    for key, info in header.items():
        if key == "__metadata__":
            continue
        offsets = info.get("data_offsets") if isinstance(info, dict) else None
        if (
            not isinstance(offsets, list)
            or len(offsets) != 2
            or not all(isinstance(o, int) and not isinstance(o, bool) and o >= 0 for o in offsets)
        ):
            raise InputError(f"{path}: malformed safetensors entry {key!r}")
        end = max(end, offsets[1])
    if 8 + n + end > size:
        raise InputError(
            f"{path}: truncated safetensors file (data needs {8 + n + end} bytes, file has {size})"
        )
    return header


DTYPES = {
    "F64": torch.float64, "F32": torch.float32, "F16": torch.float16, "BF16": torch.bfloat16,
    "I64": torch.int64, "I32": torch.int32, "I16": torch.int16, "I8": torch.int8, "U8": torch.uint8,
    "BOOL": torch.bool, "F8_E4M3": torch.float8_e4m3fn, "F8_E5M2": torch.float8_e5m2,
}  # fmt: skip
SMALL = 1 << 20  # elements: tensors this small (vocab maps, norms) are read even in lazy mode


class LazyTensor:
    """A tensor whose bytes were not read: shape and dtype from the safetensors header, `load()` reads it. The
    static check needs shapes only, so a 70B-shaped drafter is checked without reading its gigabytes."""

    def __init__(self, path: Path, name: str, shape: list[int], dtype: torch.dtype):
        self.path, self.name, self.shape, self.dtype = path, name, torch.Size(shape), dtype

    def dim(self) -> int:
        return len(self.shape)

    def numel(self) -> int:
        return self.shape.numel()

    def is_floating_point(self) -> bool:
        return self.dtype.is_floating_point

    def load(self) -> torch.Tensor:
        from safetensors import safe_open

        with safe_open(str(self.path), "pt") as f:
            return f.get_tensor(self.name)


def _lazy_part(path: Path, header: dict) -> dict:
    from safetensors import safe_open

    out: dict = {}
    small = []
    for name, info in header.items():
        if name == "__metadata__":
            continue
        shape = info.get("shape")
        dtype = DTYPES.get(info.get("dtype"))
        # a flipped byte can leave a header that parses with a float or negative dimension in a shape
        dims_ok = isinstance(shape, list) and all(type(d) is int and d >= 0 for d in shape)
        if not dims_ok or dtype is None:
            raise InputError(f"{path}: malformed safetensors entry {name!r}")
        if torch.Size(shape).numel() <= SMALL:
            small.append(name)
        else:
            out[name] = LazyTensor(path, name, shape, dtype)
    try:
        with safe_open(str(path), "pt") as f:
            for name in small:
                out[name] = f.get_tensor(name)
    except (SafetensorError, OSError, ValueError) as e:
        raise InputError(f"{path}: cannot read safetensors ({str(e).splitlines()[0]})") from None
    return out


def load_tensors(files: list[Path], lazy: bool = False) -> dict[str, torch.Tensor]:
    """Every tensor of the weight files. `lazy`: large safetensors tensors stay `LazyTensor` (header only)."""
    tensors: dict[str, torch.Tensor] = {}
    for path in files:
        if path.suffix == ".safetensors":
            header = _check_safetensors_header(path)
            try:
                part = _lazy_part(path, header) if lazy else load_file(str(path))
            except (SafetensorError, OSError, ValueError) as e:
                raise InputError(f"{path}: cannot read safetensors ({str(e).splitlines()[0]})") from None
        else:
            try:
                part = torch.load(path, map_location="cpu", weights_only=True)
            except Exception as e:  # weights_only refuses pickled code; any failure is bad input here
                raise InputError(
                    f"{path}: cannot read as a weights-only torch file ({e.__class__.__name__})"
                ) from None
            if not isinstance(part, dict) or not all(isinstance(v, torch.Tensor) for v in part.values()):
                raise InputError(f"{path}: expected a dict of tensors")
        for k, v in part.items():
            if k in tensors:
                raise InputError(f"{path}: tensor {k!r} appears in two weight files")
            tensors[k] = v
    return tensors


def save_tensors(
    directory: Path, tensors: dict[str, torch.Tensor], metadata: dict[str, str] | None = None
) -> Path:
    """One `model.safetensors`, written atomically."""
    blob = save(
        {k: v.detach().contiguous().cpu() for k, v in tensors.items()}, metadata=metadata or {"format": "pt"}
    )
    path = directory / SAFETENSORS
    atomic_write_bytes(path, blob)
    return path


def staging_dir(final: Path) -> Path:
    """A temp folder beside `final`; the caller renames it into place once everything is written."""
    final.parent.mkdir(parents=True, exist_ok=True)
    return Path(tempfile.mkdtemp(prefix=f".{final.name}.", suffix=".tmp", dir=final.parent))


def publish(staging: Path, final: Path) -> None:
    """Move a fully written staging folder to `final` (which must not exist or be empty)."""
    if final.exists():
        if any(final.iterdir()):
            raise InputError(f"{final}: destination exists and is not empty; choose a new folder")
        final.rmdir()
    os.replace(staging, final)
