"""Reading and writing small JSON files: one-line errors on read, atomic writes (temp file + rename)."""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from eaglewire.errors import InputError


def read_json(path: Path, what: str = "JSON file") -> Any:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise InputError(f"{path}: {what} not found") from None
    except (OSError, UnicodeDecodeError) as e:
        raise InputError(f"{path}: cannot read {what} ({e.__class__.__name__})") from None
    try:
        return json.loads(text)
    except json.JSONDecodeError as e:
        raise InputError(f"{path}: not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None


def read_json_object(path: Path, what: str = "config") -> dict:
    data = read_json(path, what)
    if not isinstance(data, dict):
        raise InputError(f"{path}: {what} must be a JSON object, found {type(data).__name__}")
    return data


def str_list(cfg: dict, key: str, where: object) -> list[str]:
    """`cfg[key]` as a list of strings (empty when absent); anything else is bad input naming the key."""
    value = cfg.get(key) or []
    if not isinstance(value, list) or not all(isinstance(a, str) for a in value):
        raise InputError(f"{where}: key {key!r} must be a list of strings, found {value!r}")
    return value


def atomic_write_bytes(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def write_json(path: Path, data: Any) -> None:
    atomic_write_bytes(path, (json.dumps(data, indent=2, sort_keys=False) + "\n").encode())
