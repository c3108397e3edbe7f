"""The arrows of the architecture, enforced on the source (AST, no imports run):

- only `cli/` prints (print, sys.stdout/sys.stderr) or imports rich;
- `jobs/` and `probe/` never import `cli/`, `bench/` or the zoo (the CLI picks the zoo's data and paths);
- `formats/` never imports `jobs/`, `bench/` or `cli/`;
- `conventions/` and `flags/` import no torch, transformers, safetensors or model code (drafter, targets' runner,
  capture, jobs): the static check and the lint run from configs alone;
- only `cli/` imports `zoo.build` (the recipes); only `cli/` and `bench/suite.py` import the zoo at all.
"""

from __future__ import annotations

import ast
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "src" / "eaglewire"

MODEL_CODE = (
    "torch",
    "transformers",
    "safetensors",
    "eaglewire.drafter",
    "eaglewire.capture",
    "eaglewire.jobs",
    "eaglewire.bench",
    "eaglewire.cli",
)


def _module(path: Path, root: Path) -> str:
    rel = path.relative_to(root.parent).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


def _imports(tree: ast.AST, module: str) -> list[tuple[int, str]]:
    out = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            out += [(node.lineno, a.name) for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import: resolve against the package
                pkg = (
                    module.split(".")[: -node.level] if not module.endswith("__init__") else module.split(".")
                )
                base = ".".join([*pkg, base]) if base else ".".join(pkg)
            out.append((node.lineno, base))
            out += [(node.lineno, f"{base}.{a.name}") for a in node.names]
    return out


def _prints(tree: ast.AST) -> list[int]:
    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "print":
            lines.append(node.lineno)
        if (
            isinstance(node, ast.Attribute)
            and node.attr in ("stdout", "stderr")
            and isinstance(node.value, ast.Name)
            and node.value.id == "sys"
        ):
            lines.append(node.lineno)
    return lines


def _under(module: str, prefix: str) -> bool:
    return module == prefix or module.startswith(prefix + ".")


def violations(root: Path) -> list[str]:
    """Every broken arrow in the package at `root` (the folder named eaglewire), as `file:line: what`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        module = _module(path, root)
        tree = ast.parse(path.read_text(), str(path))
        where = path.relative_to(root.parent)
        in_cli = _under(module, "eaglewire.cli")
        if not in_cli:
            found += [f"{where}:{n}: prints (only cli/ prints)" for n in _prints(tree)]
        for line, name in _imports(tree, module):
            bad = None
            if not in_cli and _under(name, "rich"):
                bad = "imports rich (only cli/ renders)"
            elif (_under(module, "eaglewire.jobs") or _under(module, "eaglewire.probe")) and any(
                _under(name, p) for p in ("eaglewire.cli", "eaglewire.bench", "eaglewire.zoo")
            ):
                bad = f"{module.split('.')[1]}/ imports {name}"
            elif _under(module, "eaglewire.formats") and any(
                _under(name, p) for p in ("eaglewire.jobs", "eaglewire.bench", "eaglewire.cli")
            ):
                bad = f"formats/ imports {name}"
            elif (_under(module, "eaglewire.conventions") or _under(module, "eaglewire.flags")) and any(
                _under(name, p) for p in MODEL_CODE
            ):
                bad = f"{module} imports model code {name}"
            elif _under(name, "eaglewire.zoo.build") and not (
                in_cli or _under(module, "eaglewire.zoo.build")
            ):
                bad = f"imports the zoo recipes {name} (only cli/ may)"
            elif (
                _under(name, "eaglewire.zoo")
                and not _under(module, "eaglewire.zoo")
                and not in_cli
                and module != "eaglewire.bench.suite"
            ):
                bad = f"imports the zoo {name} (only cli/ and bench/suite.py may)"
            if bad:
                found.append(f"{where}:{line}: {bad}")
    return sorted(set(found))


def test_the_package_keeps_its_arrows():
    assert violations(PACKAGE) == []


def test_the_check_catches_a_forbidden_import(tmp_path):
    root = tmp_path / "eaglewire"
    (root / "jobs").mkdir(parents=True)
    (root / "formats").mkdir()
    (root / "flags").mkdir()
    (root / "jobs" / "evaluate.py").write_text(
        "from eaglewire.cli import render\nfrom eaglewire import zoo\n"
    )
    (root / "formats" / "convert.py").write_text("def f():\n    from eaglewire.jobs.check import check\n")
    (root / "flags" / "lint.py").write_text("import torch\n")
    (root / "probe").mkdir()
    (root / "probe" / "job.py").write_text("from eaglewire.bench.advise import advise\n")
    (root / "conventions").mkdir()
    (root / "conventions" / "model.py").write_text("from eaglewire.drafter import Eagle3Drafter\n")
    (root / "targets.py").write_text("import rich\nprint('hello')\n")
    found = violations(root)
    assert any("jobs/ imports eaglewire.cli" in v for v in found), found
    assert any("jobs/ imports eaglewire.zoo" in v for v in found), found
    assert any("formats/ imports eaglewire.jobs" in v for v in found), found
    assert any("probe/ imports eaglewire.bench.advise" in v for v in found), found
    assert any("imports model code torch" in v for v in found), found
    assert any(
        "conventions/model.py:1: eaglewire.conventions.model imports model code" in v for v in found
    ), found
    assert any("imports rich" in v for v in found), found
    assert any("prints" in v for v in found), found
