"""Checkpoint structure the engines choke on, applied: the findings of every structure row of one engine release
(docs/engine-facts.md; docs/conventions.md (b), (c)). The rows live with their engines
(`engines/<engine>/structure.py`, the engine-agnostic ones and their order in `engines/structure.py`); what a row
is and what it is checked against, in `rules/structure.py`.
"""

from __future__ import annotations

from packaging.version import Version

from eaglewire.engines import table
from eaglewire.engines.structure import RULES
from eaglewire.formats import DrafterCheckpoint
from eaglewire.rules import taps as conv
from eaglewire.rules.row import Spec, match
from eaglewire.rules.structure import Context
from eaglewire.targets import TargetInfo


def findings_for(
    ckpt: DrafterCheckpoint, target: TargetInfo, spec: conv.EngineSpec, row, served
) -> list[tuple[str, str, str, dict[str, str]]]:
    """(severity, code, message with its source, what it rests on) for every rule of this engine version that
    fires."""
    version = spec.version or Version(table.NEWEST.get(spec.framework, "0"))
    c = Context(ckpt, target, spec.framework, version, row, served)
    out = []
    for r in match(RULES, Spec(spec.framework, version)):
        message = r.check(c)
        if message:
            out.append((r.severity, r.code, f"{message} [{r.source}]", r.evidence(message, version)))
    return out
