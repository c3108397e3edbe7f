"""The id matrix SGLang settles: drafter configs (tests/real_engine/variants.py's `Variant`, the zoo's `default`
drafter converted by `eaglewire convert`) chosen for what SGLang reads.

SGLang takes ids from `eagle_config.eagle_aux_hidden_state_layer_ids` only (+1 on Llama: id i captures the input of
layer i+1, h_{i+1}); a top-level list is never read and no nested list gives the default [2, L//2, L-3] raw. So the
top-level-only variants of the vLLM matrix collapse to the default (three kept: one equal to the default, one not,
one four ids wide), and the edge ids move under `eagle_config` (-2, -1, 0, L-2, L-1, L, L+1, four, unsorted,
repeated, empty). The modelopt format repeats the reading rows; the speculators format (one top-level list, no
`eagle_config`) checks that SGLang refuses it. Each variant is one server start (~20 s idle; see the report).
"""

from __future__ import annotations

from real_engine.variants import UNSET, L, Variant, write_variant

__all__ = ["UNSET", "L", "Variant", "variants", "write_variant"]

# (name, top, nested) for the eagle format
EAGLE = [
    ("top-only", [2, 4, 5], UNSET),  # the default's taps: served either way
    ("zero", [0, 1, 4], UNSET),  # a top-level list unlike the default: ignored
    ("four", [1, 2, 4, 5], UNSET),  # four top-level ids: ignored (vLLM fails here)
    ("empty-top", [], UNSET),
    ("none", UNSET, UNSET),
    ("nested-only", UNSET, [1, 3, 4]),  # as eaglewire and SGLang write it
    ("nested-only-raw", UNSET, [2, 4, 5]),
    ("both-agree", [2, 4, 5], [1, 3, 4]),  # as shipped
    ("both-disagree", [0, 1, 4], [2, 4, 5]),
    ("empty-nested", UNSET, []),
    ("minus-two-nested", UNSET, [-2, 0, 3]),
    ("minus-one-nested", UNSET, [-1, 0, 3]),
    ("zero-nested", UNSET, [0, 1, 4]),
    ("L-2-nested", UNSET, [2, 4, L - 2]),
    ("L-1-nested", UNSET, [2, 4, L - 1]),
    ("L-nested", UNSET, [2, 4, L]),
    ("L+1-nested", UNSET, [2, 4, L + 1]),
    ("four-nested", UNSET, [1, 2, 4, 5]),
    ("unsorted-nested", UNSET, [4, 1, 3]),
    ("repeated-nested", UNSET, [1, 1, 4]),
]
MODELOPT = ("top-only", "nested-only", "both-disagree", "none", "minus-one-nested")
SPECULATORS = [("top", [2, 4, 5]), ("none", UNSET)]


def variants() -> list[Variant]:
    out = [Variant(f"eagle/{n}", "eagle", t, e) for n, t, e in EAGLE]
    out += [Variant(f"modelopt/{n}", "modelopt", t, e) for n, t, e in EAGLE if n in MODELOPT]
    out += [Variant(f"speculators/{n}", "speculators", t, UNSET) for n, t in SPECULATORS]
    return out
