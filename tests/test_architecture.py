"""The arrows of the architecture, enforced on the source (AST, no imports run):

- only `cli/` prints (print, sys.stdout/sys.stderr) or imports rich;
- `jobs/` never imports `cli/`, `bench/` or the zoo (the CLI picks the zoo's data and paths);
- `formats/` never imports `jobs/`, `bench/` or `cli/`;
- `rules/`, `engines/` and `trainers/` import no torch, transformers, safetensors or model code (drafter, targets'
  runner, capture, jobs): the static check and the lint run from configs alone;
- only `cli/` imports `zoo.build` (the recipes); only `cli/` and `bench/suite.py` import the zoo at all;
- arrows only downwards: every module sits on a floor (`FLOORS`) and imports only from lower floors or its own
  folder; an engine's folder imports no other engine's folder; nothing imports `tools/` (the generators);
- no import circle between modules, function-local imports included.
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
            elif _under(module, "eaglewire.jobs") and any(
                _under(name, p) for p in ("eaglewire.cli", "eaglewire.bench", "eaglewire.zoo")
            ):
                bad = f"{module.split('.')[1]}/ imports {name}"
            elif _under(module, "eaglewire.formats") and any(
                _under(name, p) for p in ("eaglewire.jobs", "eaglewire.bench", "eaglewire.cli")
            ):
                bad = f"formats/ imports {name}"
            elif any(
                _under(module, p) for p in ("eaglewire.rules", "eaglewire.engines", "eaglewire.trainers")
            ) and any(_under(name, p) for p in MODEL_CODE):
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
    (root / "engines").mkdir()
    (root / "jobs" / "evaluate.py").write_text(
        "from eaglewire.cli import render\nfrom eaglewire import zoo\n"
    )
    (root / "formats" / "convert.py").write_text("def f():\n    from eaglewire.jobs.check import check\n")
    (root / "engines" / "parse.py").write_text("import torch\n")
    (root / "jobs" / "probe.py").write_text("from eaglewire.bench.advise import advise\n")
    (root / "rules").mkdir()
    (root / "rules" / "taps.py").write_text("from eaglewire.drafter import Eagle3Drafter\n")
    (root / "targets.py").write_text("import rich\nprint('hello')\n")
    found = violations(root)
    assert any("jobs/ imports eaglewire.cli" in v for v in found), found
    assert any("jobs/ imports eaglewire.zoo" in v for v in found), found
    assert any("formats/ imports eaglewire.jobs" in v for v in found), found
    assert any("jobs/probe.py:1: jobs/ imports eaglewire.bench.advise" in v for v in found), found
    assert any("imports model code torch" in v for v in found), found
    assert any("rules/taps.py:1: eaglewire.rules.taps imports model code" in v for v in found), found
    assert any("imports rich" in v for v in found), found
    assert any("prints" in v for v in found), found


# Floors, lowest first: a module imports only from floors below its own, or from its own folder.
FLOORS = (
    ("eaglewire.errors",),
    ("eaglewire.jsonio", "eaglewire.taps", "eaglewire.metrics", "eaglewire.hub", "eaglewire.devices",
     "eaglewire.data"),
    ("eaglewire.rules",),
    ("eaglewire.engines.sglang", "eaglewire.engines.vllm", "eaglewire.engines.trtllm", "eaglewire.trainers"),
    ("eaglewire.engines",),
    ("eaglewire.targets",),
    ("eaglewire.formats", "eaglewire.partial", "eaglewire.server", "eaglewire.enginecode"),
    ("eaglewire.capture",),
    ("eaglewire.dumps", "eaglewire.drafter"),
    ("eaglewire.jobs",),
    ("eaglewire.zoo",),
    ("eaglewire.bench",),
    ("eaglewire.cli",),
)  # fmt: skip


def _room(module: str) -> tuple[int, str]:
    """(floor, room): the most specific prefix of FLOORS the module lies under."""
    best = (-1, "")
    for floor, rooms in enumerate(FLOORS):
        for room in rooms:
            if _under(module, room) and len(room) > len(best[1]):
                best = (floor, room)
    return best


def graph(root: Path) -> dict[str, set[str]]:
    """module -> the package modules it imports (function-local imports included; a name imported from a package
    counts as its submodule when one exists)."""
    files = {_module(p, root): p for p in sorted(root.rglob("*.py"))}
    out: dict[str, set[str]] = {}
    for module, path in files.items():
        deps = set()
        for _, name in _imports(ast.parse(path.read_text(), str(path)), module):
            if name in files and name != module and not module.startswith(name + "."):
                deps.add(name)
        out[module] = deps
    # "from eaglewire.x import y" adds both eaglewire.x and eaglewire.x.y: keep the submodule where it exists
    for module, deps in out.items():
        out[module] = {d for d in deps if not any(o.startswith(d + ".") for o in deps) or d not in files}
    return out


def upward(root: Path) -> list[str]:
    """Every import that runs up a floor, or across engines, or into tools/."""
    found = []
    for module, deps in graph(root).items():
        floor, room = _room(module)
        for dep in deps:
            dfloor, droom = _room(dep)
            if droom == room:
                continue
            if dfloor >= floor:
                found.append(f"{module} -> {dep} (floor {floor} {room} -> floor {dfloor} {droom})")
    for path in sorted(root.rglob("*.py")):
        module = _module(path, root)
        for line, name in _imports(ast.parse(path.read_text(), str(path)), module):
            if _under(name, "tools"):
                found.append(f"{module}:{line} imports the generators {name}")
    return sorted(set(found))


def circles(root: Path) -> list[list[str]]:
    """Strongly connected groups of more than one module (Tarjan)."""
    g = graph(root)
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on: set[str] = set()
    out: list[list[str]] = []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in g.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            group = []
            while True:
                w = stack.pop()
                on.discard(w)
                group.append(w)
                if w == v:
                    break
            if len(group) > 1:
                out.append(sorted(group))

    for v in sorted(g):
        if v not in index:
            visit(v)
    return out


def test_no_import_runs_up_a_floor():
    assert upward(PACKAGE) == []


def test_no_import_circle():
    assert circles(PACKAGE) == []


def test_the_floor_and_circle_checks_catch_them(tmp_path):
    root = tmp_path / "eaglewire"
    (root / "rules").mkdir(parents=True)
    (root / "engines" / "vllm").mkdir(parents=True)
    (root / "rules" / "taps.py").write_text("def f():\n    from eaglewire.engines.vllm import flags\n")
    (root / "engines" / "vllm" / "flags.py").write_text("from eaglewire.rules import taps\n")
    (root / "engines" / "vllm" / "taps.py").write_text("from eaglewire.engines import table\n")
    (root / "engines" / "table.py").write_text("from eaglewire.engines.vllm import taps\n")
    up = upward(root)
    assert any(u.startswith("eaglewire.rules.taps -> eaglewire.engines.vllm.flags") for u in up), up
    assert any(u.startswith("eaglewire.engines.vllm.taps -> eaglewire.engines.table") for u in up), up
    found = circles(root)
    assert ["eaglewire.engines.table", "eaglewire.engines.vllm.taps"] in found, found
    assert ["eaglewire.engines.vllm.flags", "eaglewire.rules.taps"] in found, found
