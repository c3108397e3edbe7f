"""The bundled zoo: a small real target trained on the Python standard library, its tokenizer, and drafters
trained on it with known wirings. `make zoo` (`eaglewire zoo build`) rebuilds all of it deterministically."""

from __future__ import annotations

from importlib import resources
from pathlib import Path

from eaglewire.errors import InputError

DRAFTERS = ("default", "custom-taps")


def zoo_dir() -> Path:
    return Path(str(resources.files("eaglewire") / "zoo"))


def target_dir() -> Path:
    return zoo_dir() / "target"


def deepseek_dir() -> Path:
    return zoo_dir() / "deepseek-tiny"


def drafter_dir(name: str) -> Path:
    if name not in DRAFTERS:
        raise InputError(f"unknown zoo drafter {name!r}: {', '.join(DRAFTERS)}")
    return zoo_dir() / "drafters" / name


def is_built() -> bool:
    return (target_dir() / "model.safetensors").exists()


def is_zoo_target(info) -> bool:
    """True when a TargetInfo is the bundled target (same tokenizer and shape): its held-out data is known."""
    if not is_built():
        return False
    from eaglewire.targets import read_target

    z = read_target(target_dir())
    return z.identity() == info.identity()


def held_out_samples(tokenizer, max_len: int = 512, limit: int | None = None):
    """Windows of the held-out stdlib files (never trained on): validation data and prompts."""
    from eaglewire.data import text_samples
    from eaglewire.zoo import corpus

    _, held = corpus.split(corpus.collect())
    out = text_samples(
        [(f.relpath, corpus.read_text(f)) for f in held], tokenizer, max_len, min_len=max_len // 2
    )
    return out[:limit] if limit else out


def train_samples(tokenizer, max_len: int = 512):
    from eaglewire.data import text_samples
    from eaglewire.zoo import corpus

    train, _ = corpus.split(corpus.collect())
    return text_samples([(f.relpath, corpus.read_text(f)) for f in train], tokenizer, max_len, min_len=64)
