"""The zoo corpus: the Python standard library of the running interpreter, split into train and held-out files.

Every Python installation carries this text, so the zoo can be rebuilt anywhere with no download. Tests and
generated tables are left out: they are repetitive (codec tables, `test_test_...` names) and teach a small model
to loop, which would inflate every acceptance number measured on it.
"""

from __future__ import annotations

import hashlib
import sysconfig
from dataclasses import dataclass
from pathlib import Path

# Top-level stdlib folders that are data rather than ordinary code.
EXCLUDED_TOP = frozenset({"site-packages", "dist-packages", "test", "encodings", "pydoc_data", "__pycache__"})
EXCLUDED_PARTS = frozenset({"test", "tests", "idle_test", "__pycache__"})
HELD_OUT_MODULUS = 20  # one file in twenty (by a hash of its path) is held out for validation and prompts


@dataclass(frozen=True)
class CorpusFile:
    relpath: str
    path: Path

    @property
    def held_out(self) -> bool:
        return is_held_out(self.relpath)


def stdlib_root() -> Path:
    return Path(sysconfig.get_paths()["stdlib"])


def is_held_out(relpath: str) -> bool:
    """Stable across machines and file-list changes: a property of the path alone."""
    digest = hashlib.sha256(relpath.encode()).digest()
    return int.from_bytes(digest[:4], "big") % HELD_OUT_MODULUS == 0


def _keep(parts: tuple[str, ...]) -> bool:
    if not parts or parts[0] in EXCLUDED_TOP:
        return False
    return not any(p in EXCLUDED_PARTS or p.startswith("test_") for p in parts)


def collect(root: Path | None = None) -> list[CorpusFile]:
    """All kept `.py` files under the stdlib root, sorted by relative path (deterministic)."""
    root = root or stdlib_root()
    files = []
    for path in root.rglob("*.py"):
        rel = path.relative_to(root)
        if _keep(rel.parts):
            files.append(CorpusFile(rel.as_posix(), path))
    return sorted(files, key=lambda f: f.relpath)


def read_text(f: CorpusFile) -> str:
    return f.path.read_text(encoding="utf-8", errors="replace")


def split(files: list[CorpusFile]) -> tuple[list[CorpusFile], list[CorpusFile]]:
    train = [f for f in files if not f.held_out]
    held = [f for f in files if f.held_out]
    return train, held
