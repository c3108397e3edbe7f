"""The convention table against the engines' own capture code, replayed from the committed record.

`make test-engines` runs SGLang's and vLLM's `set_eagle3_layers_to_capture` / aux-layer readers on every
architecture the table names and writes what they captured to tests/engines/capture_oracle.json. This test needs
no engine: it resolves each recorded case with today's table and requires the engine's answer (the taps, or a
failure), so a table edit that contradicts the engine's code fails here, in make test.
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

import pytest
from engines.capture import configs

from eaglewire.engines import registries
from eaglewire.engines.table import parse_spec, rows_for
from eaglewire.rules.taps import resolve
from eaglewire.targets import FAMILIES, GENERIC, _family_of

RECORD = json.loads((Path(__file__).parent / "engines" / "capture_oracle.json").read_text())


def cases():
    cols = RECORD["columns"]
    for run in RECORD["engines"]:
        for values in run["cases"]:
            yield run["engine"], run["version"], dict(zip(cols, values, strict=True))


def test_the_record_is_not_empty():
    engines = {(e, v) for e, v, _ in cases()}
    assert {e for e, _ in engines} == {"sglang", "vllm"}
    assert sum(1 for _ in cases()) > 1000


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_the_record_covers_every_architecture_the_table_names(engine):
    """A family added to targets.FAMILIES is probed in the engines before its rows are trusted here."""
    named = {arch for fam in FAMILIES.values() for arch in fam.architectures}
    recorded = {c["arch"] for eng, _, c in cases() if eng == engine}
    assert named <= recorded, f"not in the record (make test-engines): {sorted(named - recorded)}"


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_the_record_covers_every_eagle3_target_of_the_engines_registry(engine):
    """The oracle runs over every target architecture the release's own registry serves with EAGLE-3
    (engines/<engine>/data/registry.json), not only the families eaglewire's table names."""
    for eng, version in {(e, v) for e, v, _ in cases() if e == engine}:
        listed = set(registries.targets(eng, version) or ())
        assert listed, (
            f"{eng} {version}: the release of the record was not read (scripts/engine_registries.py)"
        )
        recorded = {c["arch"] for e, v, c in cases() if (e, v) == (eng, version)}
        assert listed <= recorded, f"not in the record (make test-engines): {sorted(listed - recorded)}"


@functools.cache
def _matches(engine: str, version: str, arch: str):
    # the oracle runs the CUDA branch of a package that picks by platform: the rows a GPU server uses
    return [m for m in rows_for(parse_spec(f"{engine}=={version}"), _family_of([arch], "") or GENERIC, arch)
            if m.row.holds_on("cuda")]  # fmt: skip


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_the_table_gives_the_engines_answer(engine):
    wrong = []
    for eng, version, c in cases():
        if eng != engine:
            continue
        matches = _matches(eng, version, c["arch"])
        if not all(m.model_known for m in matches):
            continue  # a registry target whose capture code nobody read: the table claims nothing for it
        if (c["engine_failure"] or "").startswith("probe could not build the model"):
            continue  # the probe could not stand the model in: no answer from the engine to compare
        rows = {m.row.runner or "": m.row for m in matches}
        row = rows[c["runner"] or ""]
        config = dict(configs(eng, c["ids"]))[c["config_key"]]
        res = resolve(row, config, c["num_layers"])
        taps = list(res.taps.indices) if res.taps is not None and res.ok else None
        if taps != c["engine_taps"]:
            wrong.append(
                f"{c['arch']} {c['config_key']}={c['ids']}{' ' + c['runner'] if c['runner'] else ''}: "
                f"engine {c['engine_taps'] or c['engine_failure']}, table {row.key} {taps or res.failure}"
            )
    assert not wrong, f"{len(wrong)} cases, e.g. {wrong[:5]}"
