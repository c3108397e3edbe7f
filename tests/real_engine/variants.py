"""Drafter copies whose id lists vary, in every format eaglewire reads and writes: the matrix the engine settles.

Each variant is the zoo's `default` drafter (trained on h2,h4,h5 of the 8-layer zoo target) converted to a format
by `eaglewire convert`, then its config.json edited where that format keeps ids: top-level
`eagle_aux_hidden_state_layer_ids` (vLLM's first choice; speculators' only key), the nested
`eagle_config.eagle_aux_hidden_state_layer_ids` (SGLang's key, vLLM V1's fallback), both (agreeing or not), or
none. Ids are written as given: -1, 0, L-1, L, L+1, four ids for a three-wide fc, unsorted, repeated, empty.
"""

from __future__ import annotations

import json
import shutil
from dataclasses import dataclass
from pathlib import Path

from eaglewire import zoo

L = 8  # the zoo target's decoder layers
UNSET = "unset"  # the key is absent


@dataclass(frozen=True)
class Variant:
    name: str
    fmt: str  # eagle | speculators | modelopt
    top: list[int] | str | None  # the top-level list; UNSET = no key
    nested: list[int] | str | None  # eagle_config's list; UNSET = no key (speculators: never written)

    def edit(self, cfg: dict) -> dict:
        cfg = json.loads(json.dumps(cfg))
        cfg.pop("eagle_aux_hidden_state_layer_ids", None)
        if self.top != UNSET:
            cfg["eagle_aux_hidden_state_layer_ids"] = self.top
        ec = cfg.get("eagle_config")
        if isinstance(ec, dict):
            ec.pop("eagle_aux_hidden_state_layer_ids", None)
            if self.nested != UNSET:
                ec["eagle_aux_hidden_state_layer_ids"] = self.nested
        elif self.nested != UNSET:
            cfg["eagle_config"] = {"eagle_aux_hidden_state_layer_ids": self.nested}
        return cfg


# (name, top, nested) for the eagle and modelopt formats (both keys exist there)
NESTED_MATRIX = [
    ("top-only", [2, 4, 5], UNSET),
    ("nested-only", UNSET, [1, 3, 4]),  # as eaglewire and SGLang write it (SGLang adds 1 on Llama)
    ("nested-only-raw", UNSET, [2, 4, 5]),
    ("both-agree", [2, 4, 5], [1, 3, 4]),  # as shipped
    ("both-disagree", [0, 1, 4], [2, 4, 5]),
    ("none", UNSET, UNSET),
    ("empty-top", [], UNSET),
    ("empty-nested", UNSET, []),
    ("minus-one", [-1, 0, 3], UNSET),
    ("minus-one-nested", UNSET, [-1, 0, 3]),
    ("zero", [0, 1, 4], UNSET),
    ("L-1", [2, 4, L - 1], UNSET),
    ("L", [2, 4, L], UNSET),
    ("L+1", [2, 4, L + 1], UNSET),
    ("four", [1, 2, 4, 5], UNSET),
    ("unsorted", [5, 2, 4], UNSET),
    ("repeated", [2, 2, 5], UNSET),
]
# speculators keeps one top-level list (vLLM copies it only when non-empty)
TOP_MATRIX = [
    ("top", [2, 4, 5]),
    ("none", UNSET),
    ("empty", []),
    ("minus-one", [-1, 0, 3]),
    ("zero", [0, 1, 4]),
    ("L", [2, 4, L]),
    ("unsorted", [5, 2, 4]),
    ("repeated", [2, 2, 5]),
]
MODELOPT_SUBSET = (
    "nested-only",
    "top-only",
    "both-disagree",
    "none",
    "empty-nested",
    "minus-one-nested",
    "zero",
)


def variants() -> list[Variant]:
    out = [Variant(f"eagle/{n}", "eagle", t, e) for n, t, e in NESTED_MATRIX]
    out += [Variant(f"modelopt/{n}", "modelopt", t, e) for n, t, e in NESTED_MATRIX if n in MODELOPT_SUBSET]
    out += [Variant(f"speculators/{n}", "speculators", t, UNSET) for n, t in TOP_MATRIX]
    return out


def convert(src: Path, dst: Path, fmt: str) -> Path:
    """`eaglewire convert`'s own code (formats.convert)."""
    if not dst.exists():
        from eaglewire.formats.convert import convert as run

        run(src, dst, fmt, zoo.target_dir())
    return dst


def write_variant(v: Variant, root: Path) -> Path:
    """The drafter directory for `v` under root (weights linked from the converted copy)."""
    base = convert(zoo.drafter_dir("default"), root / "base" / v.fmt, v.fmt)
    out = root / v.name
    out.mkdir(parents=True, exist_ok=True)
    for f in base.iterdir():
        if f.name != "config.json" and not (out / f.name).exists():
            (out / f.name).symlink_to(f.resolve()) if f.is_file() else shutil.copytree(f, out / f.name)
    cfg = json.loads((base / "config.json").read_text())
    (out / "config.json").write_text(json.dumps(v.edit(cfg), indent=2))
    return out
