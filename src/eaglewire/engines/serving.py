"""The serving failures of every engine (rules/serving.py): the rows, and the one a launch meets."""

from __future__ import annotations

from packaging.version import Version

from eaglewire.engines.sglang import serving as sglang
from eaglewire.engines.vllm import serving as vllm
from eaglewire.rules.row import Spec, match
from eaglewire.rules.serving import STAGES, ServingFailure

ROWS: tuple[ServingFailure, ...] = (*vllm.ROWS, *sglang.ROWS)


def serving_failure(engine: str, version: str | Version, platform: str | None, family: str, config: dict,
                    drafter_archs: tuple[str, ...] = (), quantization: str | None = None) -> ServingFailure | None:  # fmt: skip
    """The row under which `engine` at `version` on `platform` cannot serve an EAGLE-3 drafter beside this target
    (None: none known). An unknown platform meets only the rows of the engine's own code (platform "*"): the
    others are platform facts. `quantization`: the target checkpoint's quant method, if pre-quantized."""
    rows = [r for r in match(ROWS, Spec(engine, Version(str(version)), platform))
            if r.platform in (platform, "*") and r.holds_for(family, config, drafter_archs, quantization)]  # fmt: skip
    # what a launch meets first: the earliest stage; at one stage, a row about this kind of target before a row
    # about every target (the engine reaches the target's own code path first, e.g. a hybrid model's state copy)
    # a platform's own refusal before one of the engine's code on every platform (the CPU runner refuses a
    # speculative config before any model is built)
    rows.sort(key=lambda r: (STAGES.index(r.stage), "*" in r.families, r.platform == "*"))
    return rows[0] if rows else None
