"""`eaglewire matrix`: the question asked before an upgrade. For each drafter and every release of each engine, the
taps the engine feeds, `check`'s verdict there, the evidence that verdict rests on (`coverage`'s level for the
engine, release, the target's family and the platform; for an architecture the table does not list, the verdict's
own: its model-code record where that decided it) and the fix.

One `check` per drafter and release, on the drafter's configs (weight files are read for their shapes only where
present, as `eaglewire check` does); each answer is cached per (drafter, target, release, platform) for the
process, so a second matrix over the same drafters costs nothing. Releases: the engine's EAGLE-3 releases whose
capture code was read at source (the ledger's `taps` releases), or every EAGLE-3 release on the index.
"""

from __future__ import annotations

import re
import time
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path

from eaglewire.engines.runners import check_choice
from eaglewire.engines.table import ENGINES
from eaglewire.errors import InputError
from eaglewire.formats import DrafterCheckpoint, read_drafter
from eaglewire.jobs.check import CheckReport, EngineVerdict, check
from eaglewire.jobs.coverage import coverage
from eaglewire.rules.ledger import ledger
from eaglewire.targets import TargetInfo, read_target

DEFAULT_ENGINES = ("sglang", "vllm")
STATUSES = ("ok", "mismatch", "fails", "unverified")  # check's verdicts, in the order the page lists them
# check's own assumption when no platform is given (engines/runners.py: "A platform not given is assumed to be
# CUDA"): the platform whose evidence a cell shows then
ASSUMED_PLATFORM = "cuda"


@dataclass(frozen=True)
class MatrixCell:
    """One drafter at one engine release."""

    drafter: str  # the drafter's column name
    engine: str
    release: str
    label: str  # check's engine label, with the model runner it picked (vLLM)
    row: str  # the convention row the verdict rests on
    status: str  # check's verdict: ok | mismatch | fails | unverified
    taps: str | None  # the taps the engine feeds (None: it fails before feeding any)
    failure: str | None  # how it fails, when it does
    stage: str | None  # where the failure surfaces ("load", "warm-up", "first request"), where known
    level: str  # coverage's evidence level for (engine, release, target family, platform)
    record: str | None  # the record behind an engine / model-code level
    fix: dict | None  # check's fix: key and value to write, or why no value can
    problems: tuple[str, ...] = ()  # check's problem findings for this engine
    unknowns: tuple[str, ...] = ()  # what keeps it unverified, each with what settles it
    assumptions: tuple[str, ...] = ()

    def to_dict(self) -> dict:
        return {
            "drafter": self.drafter,
            "engine": self.engine,
            "release": self.release,
            "label": self.label,
            "row": self.row,
            "status": self.status,
            "served_taps": self.taps,
            "failure": self.failure,
            "failure_stage": self.stage,
            "level": self.level,
            "record": self.record,
            "fix": self.fix,
            "problems": list(self.problems),
            "unknowns": list(self.unknowns),
            "assumptions": list(self.assumptions),
        }


@dataclass(frozen=True)
class MatrixRelease:
    engine: str
    release: str
    read: bool  # the release's capture code was read at source
    platform_status: str | None  # what the ledger says of the release on the evidence platform
    cells: tuple[MatrixCell, ...]  # one per drafter, in the drafters' order

    def to_dict(self) -> dict:
        return {
            "engine": self.engine,
            "release": self.release,
            "read": self.read,
            "platform_status": self.platform_status,
            "cells": [c.to_dict() for c in self.cells],
        }


@dataclass(frozen=True)
class MatrixDrafter:
    name: str
    path: str
    format: str
    trained: str | None  # the taps it was trained on, as check reads them
    target: dict  # the target the verdicts are for (identity)
    problems: tuple[str, ...] = ()  # drafter-wide problem findings (not an engine's)

    def to_dict(self) -> dict:
        return {
            "name": self.name,
            "path": self.path,
            "format": self.format,
            "trained_taps": self.trained,
            "target": self.target,
            "problems": list(self.problems),
        }


@dataclass
class Matrix:
    drafters: list[MatrixDrafter]
    engines: list[str]
    platform: str | None  # as given
    evidence_platform: str  # the platform whose evidence the cells show
    platform_note: str
    all_releases: bool
    releases: list[MatrixRelease]
    seconds: float = 0.0
    checks: int = 0  # check calls made (the rest came from the cache)
    counts: dict[str, dict[str, int]] = field(default_factory=dict)  # drafter -> status -> releases

    def to_dict(self) -> dict:
        return {
            "drafters": [d.to_dict() for d in self.drafters],
            "engines": self.engines,
            "platform": self.platform,
            "evidence_platform": self.evidence_platform,
            "platform_note": self.platform_note,
            "all_releases": self.all_releases,
            "releases": [r.to_dict() for r in self.releases],
            "counts": self.counts,
            "seconds": round(self.seconds, 2),
            "checks": self.checks,
        }


_CACHE: dict[tuple, EngineVerdict] = {}  # (drafter, target, spec, platform) -> check's verdict


def _key(path: Path) -> tuple:
    """A drafter or target folder as a cache key: its path and its config's modification time and size."""
    cfg = path / "config.json" if path.is_dir() else path
    st = cfg.stat() if cfg.exists() else None
    return (str(path.resolve()), st and st.st_mtime_ns, st and st.st_size)


def _checked(ckpt: DrafterCheckpoint, dkey: tuple, target: TargetInfo | None, tkey: tuple | None, spec: str,
             platform: str | None) -> tuple[EngineVerdict, bool]:  # fmt: skip
    """check's verdict for one drafter at one release (cached), and whether it was computed now."""
    key = (dkey, tkey, spec, platform)
    if key in _CACHE:
        return _CACHE[key], False
    _CACHE[key] = check(ckpt, target, [spec], platform=platform).verdicts[0]
    return _CACHE[key], True


def _names(paths: list[Path]) -> list[str]:
    """Column names: each drafter's folder name, its full path where two share a name."""
    names = [p.resolve().name for p in paths]
    return [n if names.count(n) == 1 else str(p) for n, p in zip(names, paths, strict=True)]


def matrix(
    drafters: list[Path | str],
    target: Path | str | None = None,
    engines: list[str] | None = None,
    platform: str | None = None,
    all_releases: bool = False,
) -> Matrix:
    """The verdict of every drafter at every release of each engine (module docstring)."""
    start = time.perf_counter()
    if not drafters:
        raise InputError("matrix: give at least one drafter folder")
    engines = list(dict.fromkeys(engines or DEFAULT_ENGINES))
    for e in engines:
        if e not in ENGINES or "==" in e:
            raise InputError(
                f"--engine {e!r}: give an engine name, one of {', '.join(ENGINES)} (every release)"
            )
    check_choice(platform, None)
    paths = [Path(d) for d in drafters]
    ckpts = [read_drafter(p, weights="lazy") for p in paths]
    dkeys = [_key(p) for p in paths]
    tinfo = read_target(target) if target is not None else None
    tkey = _key(Path(target)) if target is not None else None
    evidence = platform or ASSUMED_PLATFORM
    cov = coverage()
    names = _names(paths)
    # what check says of each drafter alone: its format, training taps, target (the family the evidence is for)
    alone = [check(ckpt, tinfo, []) for ckpt in ckpts]
    releases: list[MatrixRelease] = []
    computed = 0
    for engine in engines:
        led = ledger(engine)
        for rel in (r for r in led.releases if r.eagle3 and (all_releases or "taps" in r.read)):
            cells = []
            for name, dkey, ckpt, rep in zip(names, dkeys, ckpts, alone, strict=True):
                v, fresh = _checked(ckpt, dkey, tinfo, tkey, f"{engine}=={rel.version}", platform)
                computed += fresh
                c = cov.cell(engine, rel.version, rep.target.family, evidence)
                level, record = (c.level, c.record) if c else _own_evidence(v)
                cells.append(_cell(name, engine, rel.version, v, level, record))
            releases.append(
                MatrixRelease(
                    engine, rel.version, "taps" in rel.read, rel.platforms.get(evidence), tuple(cells)
                )
            )
    out = Matrix(
        [_drafter(n, p, rep) for n, p, rep in zip(names, paths, alone, strict=True)],
        engines, platform, evidence, _platform_note(platform), all_releases, releases,
        checks=computed,
    )  # fmt: skip
    out.counts = {
        n: dict(Counter(c.status for r in releases for c in r.cells if c.drafter == n)) for n in names
    }
    out.seconds = time.perf_counter() - start
    return out


def _own_evidence(v: EngineVerdict) -> tuple[str, str | None]:
    """(level, record) of the verdict's own evidence, where coverage has no cell for the target's family (an
    architecture the table does not list, decided from its model-code record: `coverage.evidence`)."""
    level = (v.evidence or {}).get("level", "none")
    found = re.search(r"\((engines/[^()]+\.json)\)$", (v.evidence or {}).get("basis", ""))
    return level, found.group(1) if found and level in ("engine", "model-code") else None


def _cell(
    name: str, engine: str, release: str, v: EngineVerdict, level: str, record: str | None
) -> MatrixCell:
    s = v.served
    return MatrixCell(
        name, engine, release, v.engine, v.row_key, v.status, str(s.taps) if s.taps else None, s.failure, s.stage,
        level, record, v.to_dict()["fix"], tuple(f.message for f in v.findings if f.severity == "problem"),
        tuple(v.unknowns), tuple(v.assumptions),
    )  # fmt: skip


def _drafter(name: str, path: Path, rep: CheckReport) -> MatrixDrafter:
    return MatrixDrafter(
        name, str(path), rep.format, str(rep.trained.wiring) if rep.trained.wiring else None,
        rep.target.identity(), tuple(f.message for f in rep.findings if f.severity == "problem"),
    )  # fmt: skip


def _platform_note(platform: str | None) -> str:
    if platform is not None:
        return f"--platform {platform}: verdicts and evidence for {platform}"
    return (
        f"no --platform: check's own assumption, {ASSUMED_PLATFORM.upper()} where the platform changes the row "
        f"(vLLM's model runner: its {ASSUMED_PLATFORM.upper()} default; SGLang before 0.5.11: its CUDA graphs), and "
        "the evidence shown is "
        f"{ASSUMED_PLATFORM.upper()}'s"
    )
