"""The release ledgers drive every default and version check: the newest release read, the oldest with EAGLE-3, the
releases each kind of rule was read at; and no release string stands as a default outside `engines/`."""

from __future__ import annotations

import ast
import re
from pathlib import Path

import pytest
from packaging.version import Version

from eaglewire.engines import table, versions
from eaglewire.engines.sglang import taps as sglang_taps
from eaglewire.engines.vllm import taps as vllm_taps
from eaglewire.rules import scanned
from eaglewire.rules.ledger import KINDS, ledger

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "eaglewire"
RELEASE = re.compile(r"^(sglang|vllm|trtllm)==\d|^\d+\.\d+\.\d+")


@pytest.mark.parametrize("engine", ["sglang", "vllm", "trtllm"])
def test_a_ledger_lists_each_release_once_oldest_first(engine):
    led = ledger(engine)
    names = [r.version for r in led.releases]
    assert len(names) == len(set(names))
    assert names == sorted(names, key=Version)
    for r in led.releases:
        assert set(r.read) <= set(KINDS), (engine, r.version, r.read)
        assert r.level in ("engine", "model-code", "read", "none")
        for o in r.observed:
            assert (PACKAGE / "engines" / engine / "data" / o.record).is_file(), o.record


@pytest.mark.parametrize("engine", ["sglang", "vllm"])
def test_the_defaults_and_ranges_come_from_the_ledger(engine):
    led = ledger(engine)
    assert table.NEWEST[engine] == led.newest
    assert table.default_spec(engine) == f"{engine}=={led.newest}"
    assert versions.CHECKED[engine] == led.read("flags")
    assert versions.OLDEST[engine] == led.oldest
    assert scanned.releases(engine) == led.read("arguments")
    assert (sglang_taps if engine == "sglang" else vllm_taps).__dict__[
        "ALL" if engine == "sglang" else "READ"
    ] == (led.read("taps"))


def test_a_new_release_in_the_ledger_moves_the_default(monkeypatch):
    """Marking a newer release read in the ledger is all it takes for it to become the default."""
    from dataclasses import replace

    from eaglewire.rules import ledger as ledger_module

    led = ledger("vllm")
    newer = replace(led.releases[-1], version="9.9.0", read=("flags",))
    fake = replace(led, releases=(*led.releases, newer))
    assert fake.newest == "9.9.0" and fake.default == "vllm==9.9.0"
    assert ledger_module.to_dict(fake)["releases"][-1] == {
        "version": "9.9.0",
        **{k: v for k, v in ledger_module.to_dict(led)["releases"][-1].items() if k != "version"},
        "read": ["flags"],
    }


def _defaults(tree: ast.AST):
    """String constants that stand as a default: function parameter defaults, class-level field values and the
    first argument of `typer.Option(...)` / `field(default=...)`."""
    for node in ast.walk(tree):
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            yield from (d for d in node.args.defaults + node.args.kw_defaults if d is not None)
        elif isinstance(node, ast.ClassDef):
            yield from (s.value for s in node.body if isinstance(s, (ast.AnnAssign, ast.Assign)) and s.value)
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", "")) == "Option"
        ):
            yield from node.args[:1]
        elif isinstance(node, ast.Call) and getattr(node.func, "id", "") == "field":
            yield from (k.value for k in node.keywords if k.arg == "default")


def test_no_release_string_is_a_default_outside_engines():
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        if "engines" in path.relative_to(PACKAGE).parts[:1]:
            continue
        for node in _defaults(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and RELEASE.match(node.value):
                found.append(f"{path.relative_to(PACKAGE)}:{node.lineno}: {node.value!r}")
    assert found == []
