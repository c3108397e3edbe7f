"""Which launch arguments of one SGLang or vLLM release touch speculative decoding or the draft model, read from
the release's own source with `ast` (the engine is never imported). `scripts/speculative_args.py` runs it over
every release read and commits the result (`engines/<engine>/data/arguments.json`); `engines/arguments.py` says, per
argument, what the engine does with it; a test holds the two together, so a new release with a new argument
fails until it is classified.

What counts as touching speculation, mechanically:
- SGLang: a `ServerArgs` field (the class body in `srt/server_args.py`, or from 0.5.20 the namespace structs
  in `srt/arg_groups/fields/`) whose name names speculation (`speculative_*`, `*draft*`, `*spec*`, `*eagle*`,
  ...) or that sits in the `spec` namespace ("speculative"); a non-speculative field that the speculative
  resolution code writes ("adjusted": `_handle_speculative_decoding`, the speculative block of `__post_init__`,
  `arg_groups/speculative_hook.py`); and how the draft's `ModelConfig` is built ("draft setting": each keyword
  resolved for the draft branch of `is_draft_worker`/`is_draft_model`).
- vLLM: every `SpeculativeConfig` field (the `--speculative-config` keys; those `EngineArgs` fills in itself,
  and the config objects, are marked), the `EngineArgs` fields named for speculation (`--speculative-config`,
  `--spec-*`, the pre-0.8.5 individual flags), and how the draft's `ModelConfig` and `ParallelConfig` are built.
For each argument: its CLI flags, default, where it is declared, and where the engine's resolution code assigns
it (an engine that assigns an argument may adjust it).
"""

from __future__ import annotations

import ast
import re
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path

# A field whose name says it belongs to speculative decoding or the draft model.
SPECULATIVE_NAME = re.compile(
    r"(speculative|(^|_)spec(_|$)|draft|eagle|(^|_)mtp(_|$)|nextn|(^|_)ngram|dflash|dspark|(^|_)uno(_|$))"
)
# The draft's model/parallel settings eaglewire reports (the values come from the source).
DRAFT_SETTINGS = {
    "model_path": "model", "model": "model", "revision": "revision", "model_revision": "revision",
    "context_length": "context length", "max_model_len": "context length", "dtype": "dtype",
    "quantization": "quantization", "load_format": "load format", "tensor_parallel_size": "tensor parallel size",
    "tokenizer": "tokenizer",
}  # fmt: skip
# Names that hold the server arguments in SGLang's resolution code.
_SG_HOLDERS = frozenset({"self", "server_args", "cfg", "args", "sa", "view", "resolving", "resolved"})


@dataclass
class Argument:
    name: str
    kind: str  # "speculative" | "adjusted" | "key" | "set-by-engine" | "internal" | "flag"
    flags: list[str] = field(default_factory=list)
    default: str | None = None
    declared: str = ""  # path:line
    written: list[str] = field(default_factory=list)  # path:line where resolution code assigns it
    namespace: str | None = None
    type: str | None = None  # the annotation (SGLang `A[T, ...]`: T)
    read: list[str] = field(default_factory=list)  # the first sites (path:line) that read it, by path
    reads: int = 0  # how many sites read it (0: the engine never uses it)


@dataclass
class DraftSetting:
    setting: str  # e.g. "quantization"
    keyword: str  # the keyword of the call it is passed as
    source: str  # the expression, resolved for the draft
    where: str  # path:line


def _unparse(node: ast.AST | None) -> str | None:
    return None if node is None else ast.unparse(node)


def _parse(root: Path, rel: str) -> ast.Module | None:
    path = root / rel
    if not path.is_file():
        return None
    try:
        return ast.parse(path.read_text(encoding="utf-8", errors="replace"))
    except SyntaxError:
        return None


def _field_default(value: ast.AST | None) -> str | None:
    """`x: T = Field(default=3)` / `field(default=3)` -> "3"; `x: T = 3` -> "3"."""
    if isinstance(value, ast.Call):
        name = _unparse(value.func) or ""
        if name.split(".")[-1] in ("Field", "field"):
            for kw in value.keywords:
                if kw.arg == "default":
                    return _unparse(kw.value)
                if kw.arg == "default_factory":
                    return f"{_unparse(kw.value)}()"
            return None
    return _unparse(value)


def _class_fields(cls: ast.ClassDef) -> Iterable[tuple[str, ast.AnnAssign]]:
    for stmt in cls.body:
        if isinstance(stmt, ast.AnnAssign) and isinstance(stmt.target, ast.Name):
            yield stmt.target.id, stmt


def _namespace(cls: ast.ClassDef) -> str | None:
    for stmt in cls.body:
        if isinstance(stmt, ast.Assign) and any(getattr(t, "id", None) == "_NS_PATH" for t in stmt.targets):
            if isinstance(stmt.value, ast.Constant):
                return str(stmt.value.value)
    return None


def _add_argument_flags(tree: ast.Module) -> dict[str, list[str]]:
    """dest -> flags of every `parser.add_argument("--x", ...)` (argparse's dest rule)."""
    out: dict[str, list[str]] = {}
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        if node.func.attr != "add_argument":
            continue
        flags = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        longs = [f for f in flags if f.startswith("--")]
        if not longs:
            continue
        dest = next((kw.value.value for kw in node.keywords if kw.arg == "dest"
                     and isinstance(kw.value, ast.Constant)), None)  # fmt: skip
        dest = dest or longs[0][2:].replace("-", "_")
        out.setdefault(str(dest), [])
        out[str(dest)] += [f for f in flags if f not in out[str(dest)]]
    return out


def _annotated_flags(name: str, ann: ast.AST) -> list[str] | None:
    """SGLang's `A[type, Arg(aliases=[...], no_cli=True)]` / `A[type, "help"]` fields generate their own flag."""
    if not (isinstance(ann, ast.Subscript) and _unparse(ann.value) == "A"):
        return None
    flags = ["--" + name.replace("_", "-")]
    for node in ast.walk(ann):
        if isinstance(node, ast.Call) and _unparse(node.func) == "Arg":
            for kw in node.keywords:
                if kw.arg == "no_cli" and isinstance(kw.value, ast.Constant) and kw.value.value:
                    return []
                if kw.arg == "aliases" and isinstance(kw.value, ast.List | ast.Tuple):
                    flags += [e.value for e in kw.value.elts if isinstance(e, ast.Constant)]
    return flags


def _writes(nodes: Iterable[ast.AST], rel: str) -> dict[str, list[str]]:
    """name -> path:line of each `holder.name = ...` and `declare_resolution(..., name=...)` inside `nodes`."""
    out: dict[str, list[str]] = {}

    def add(name: str, line: int) -> None:
        site = f"{rel}:{line}"
        if site not in out.setdefault(name, []):
            out[name].append(site)

    for top in nodes:
        for node in ast.walk(top):
            targets: list[ast.AST] = []
            if isinstance(node, ast.Assign):
                targets = list(node.targets)
            elif isinstance(node, ast.AugAssign | ast.AnnAssign):
                targets = [node.target]
            elif isinstance(node, ast.Call) and (_unparse(node.func) or "").endswith("declare_resolution"):
                for kw in node.keywords:
                    if kw.arg:
                        add(kw.arg, node.lineno)
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "setattr":
                if len(node.args) >= 2 and isinstance(node.args[1], ast.Constant):
                    add(str(node.args[1].value), node.lineno)
            for target in targets:
                for t in ast.walk(target):
                    if (
                        isinstance(t, ast.Attribute)
                        and isinstance(t.value, ast.Name)
                        and t.value.id in _SG_HOLDERS
                    ):
                        add(t.attr, t.lineno)
    return out


def _type(ann: ast.AST) -> str:
    if isinstance(ann, ast.Subscript) and _unparse(ann.value) == "A" and isinstance(ann.slice, ast.Tuple):
        return ast.unparse(ann.slice.elts[0])
    return ast.unparse(ann)


def _reads(
    root: Path,
    prefix: str,
    args: dict[str, Argument],
    skip: Iterable[str],
    attr_of=None,
    holder: str | None = None,
) -> None:
    """Fill `read`/`reads`: every `x.<name>` load (or `getattr(x, "<name>")`) in the package, outside `skip`
    (declarations, argparse defaults `ServerArgs.<name>`). `attr_of(name)` maps an argument to its attribute;
    `holder`: count only reads whose object's expression contains it (vLLM's keys are common words: `model`)."""
    attr = {(attr_of(n) if attr_of else n): n for n in args}
    skipped = tuple(skip)
    for path in sorted((root / prefix).rglob("*.py") if prefix else root.rglob("*.py")):
        rel = str(path.relative_to(root))
        if rel.startswith(skipped):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        if holder is not None and holder not in text.lower():
            continue
        wanted = [a for a in attr if a in text]
        if not wanted:
            continue
        try:
            tree = ast.parse(text)
        except SyntaxError:
            continue
        wanted_set = set(wanted)
        for node in ast.walk(tree):
            name = None
            if isinstance(node, ast.Attribute) and node.attr in wanted_set and isinstance(node.ctx, ast.Load):
                if not (isinstance(node.value, ast.Name) and node.value.id == "ServerArgs"):
                    name = node.attr
            elif (isinstance(node, ast.Subscript) and isinstance(node.ctx, ast.Load)
                  and isinstance(node.slice, ast.Constant) and node.slice.value in wanted_set):  # fmt: skip
                name = node.slice.value  # global_server_args_dict["<name>"] (SGLang before 0.5.4)
            elif (isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == "getattr"
                  and len(node.args) >= 2 and isinstance(node.args[1], ast.Constant)
                  and node.args[1].value in wanted_set):  # fmt: skip
                name = node.args[1].value
            if name is None:
                continue
            if holder is not None:
                obj = node.args[0] if isinstance(node, ast.Call) else node.value  # type: ignore[union-attr]
                if holder not in ast.unparse(obj).lower():
                    continue
            arg = args[attr[name]]
            arg.reads += 1
            if len(arg.read) < 3 and not any(r.startswith(rel + ":") for r in arg.read):
                arg.read.append(f"{rel}:{node.lineno}")


def _mentions(node: ast.AST, names: Iterable[str]) -> bool:
    wanted = set(names)
    return any(
        (isinstance(n, ast.Attribute) and n.attr in wanted) or (isinstance(n, ast.Name) and n.id in wanted)
        for n in ast.walk(node)
    )


# --------------------------------------------------------------------------------------------------------------
# SGLang

_SG_FIELD_FILES = ("srt/server_args.py",)
_SG_SPEC_FUNCS = re.compile(r"specul|eagle|ngram|draft")


def _sg_fields(root: Path) -> dict[str, Argument]:
    found: dict[str, Argument] = {}
    files = list(_SG_FIELD_FILES) + sorted(
        str(p.relative_to(root)) for p in (root / "srt/arg_groups/fields").glob("*.py")
    )
    flags: dict[str, list[str]] = {}
    for rel in [
        "srt/server_args.py",
        *sorted(str(p.relative_to(root)) for p in (root / "srt/arg_groups").glob("*.py")),
    ]:
        tree = _parse(root, rel)
        if tree is not None:
            for dest, fl in _add_argument_flags(tree).items():
                flags.setdefault(dest, fl)
    for rel in files:
        tree = _parse(root, rel)
        if tree is None:
            continue
        for cls in ast.walk(tree):
            if not isinstance(cls, ast.ClassDef):
                continue
            ns = _namespace(cls)
            if cls.name != "ServerArgs" and ns is None:
                continue
            for name, stmt in _class_fields(cls):
                if name.startswith("_") or name in found:
                    continue
                generated = _annotated_flags(name, stmt.annotation)
                arg = Argument(
                    name,
                    "other",
                    flags.get(name, generated or []),
                    _field_default(stmt.value),
                    f"{rel}:{stmt.lineno}",
                    namespace=ns,
                    type=_type(stmt.annotation),
                )
                found[name] = arg
    return found


def _sg_resolution(root: Path, speculative_only: bool) -> list[tuple[str, list[ast.AST]]]:
    """SGLang's argument resolution code, (file, nodes): `speculative_only` keeps the speculative part
    (`_handle_speculative_decoding` and kin, the speculative block of `__post_init__`, speculative_hook.py);
    else every function of server_args.py and of the arg_groups hooks."""
    out: list[tuple[str, list[ast.AST]]] = []
    tree = _parse(root, "srt/server_args.py")
    if tree is not None:
        nodes: list[ast.AST] = []
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef):
                if not speculative_only or _SG_SPEC_FUNCS.search(node.name):
                    nodes.append(node)
                elif node.name == "__post_init__":
                    nodes += [s for s in ast.walk(node) if isinstance(s, ast.If)
                              and _mentions(s.test, ["speculative_algorithm"])]  # fmt: skip
        out.append(("srt/server_args.py", nodes))
    hooks = ["srt/arg_groups/speculative_hook.py"]
    if not speculative_only:
        hooks = sorted(str(p.relative_to(root)) for p in (root / "srt/arg_groups").rglob("*.py"))
        hooks = [h for h in hooks if "/fields/" not in h]
    for rel in hooks:
        hook = _parse(root, rel)
        if hook is not None:
            out.append((rel, [n for n in ast.walk(hook) if isinstance(n, ast.FunctionDef)]))
    return out


def _resolve_for_draft(value: ast.AST, func: ast.AST | None, flag_names: set[str]) -> ast.AST:
    """The draft's branch of `a if is_draft_x else b` (or of a local assigned that way)."""
    if isinstance(value, ast.Name) and func is not None:
        assigned = [
            n.value for n in ast.walk(func) if isinstance(n, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == value.id for t in n.targets)
            and n.lineno < getattr(value, "lineno", 10**9)
        ]  # fmt: skip
        if assigned:
            value = assigned[-1]
    if isinstance(value, ast.IfExp) and _mentions(value.test, flag_names):
        negated = isinstance(value.test, ast.UnaryOp) and isinstance(value.test.op, ast.Not)
        return _resolve_for_draft(value.orelse if negated else value.body, func, flag_names)
    return value


def _draft_calls(
    root: Path, rels: Iterable[str], callee: re.Pattern, flag_names: set[str], always: bool = False
) -> list[DraftSetting]:
    """Keywords of the draft's config constructor calls, each resolved for the draft. `always`: every call
    found builds the draft's config (vLLM's SpeculativeConfig); else only calls in scope of `flag_names`."""
    out: list[DraftSetting] = []
    seen: set[str] = set()
    for rel in rels:
        tree = _parse(root, rel)
        if tree is None:
            continue
        parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
        for node in ast.walk(tree):
            if not (isinstance(node, ast.Call) and callee.search(_unparse(node.func) or "")):
                continue
            func = node
            while func in parents and not isinstance(func, ast.FunctionDef):
                func = parents[func]
            # from_server_args builds the draft's config too: its callers pass is_draft_model.
            in_draft_scope = isinstance(func, ast.FunctionDef) and (
                func.name == "from_server_args" or _mentions(func, flag_names)
            )
            if not always and not in_draft_scope and not _mentions(node, flag_names):
                continue
            items = [(kw.arg, kw.value) for kw in node.keywords if kw.arg]
            if node.args and not any(k in ("model_path", "model") for k, _ in items):
                items.insert(0, ("model_path", node.args[0]))
            for keyword, value in items:
                setting = DRAFT_SETTINGS.get(keyword)
                if setting is None or setting in seen:
                    continue
                resolved = _resolve_for_draft(value, func if isinstance(func, ast.FunctionDef) else None,
                                              flag_names)  # fmt: skip
                seen.add(setting)
                out.append(DraftSetting(setting, keyword, ast.unparse(resolved), f"{rel}:{node.lineno}"))
    return out


def scan_sglang(root: Path) -> dict:
    """`root` is the unzipped `sglang/` package folder of one release."""
    fields = _sg_fields(root)
    for arg in fields.values():
        if SPECULATIVE_NAME.search(arg.name) or arg.namespace == "spec":
            arg.kind = "speculative"
    speculative = [a.name for a in fields.values() if a.kind == "speculative"]
    conditional = [
        (
            rel,
            [
                n
                for top in nodes
                for n in ast.walk(top)
                if isinstance(n, ast.If) and _mentions(n.test, speculative)
            ],
        )
        for rel, nodes in _sg_resolution(root, speculative_only=False)
    ]  # if-blocks on a speculative argument anywhere in the resolution code
    for rel, nodes in [*_sg_resolution(root, speculative_only=True), *conditional]:
        for name, sites in _writes(nodes, rel).items():
            arg = fields.get(name)
            if arg is not None and arg.kind in ("other", "adjusted"):
                arg.kind = "adjusted"
                arg.written += [s for s in sites if s not in arg.written]
    for rel, nodes in _sg_resolution(root, speculative_only=False):
        for name, sites in _writes(nodes, rel).items():
            arg = fields.get(name)
            if arg is not None and arg.kind == "speculative":
                arg.written += [s for s in sites if s not in arg.written]
    found = {n: a for n, a in fields.items() if a.kind != "other"}
    _reads(root, "srt", found, ("srt/arg_groups/fields/", "srt/arg_groups/field_order.py"))
    draft = _draft_calls(
        root,
        ("srt/managers/tp_worker.py", "srt/configs/model_config.py"),
        re.compile(r"(^|\.)ModelConfig(\.from_server_args)?$"),
        {"is_draft_worker", "is_draft_model"},
    )
    return {
        "arguments": [asdict(a) for a in sorted(fields.values(), key=lambda a: a.name) if a.kind != "other"],
        "draft_settings": [asdict(d) for d in draft],
    }


# --------------------------------------------------------------------------------------------------------------
# vLLM

_VL_CONFIG_FILES = ("vllm/config/speculative.py", "vllm/config/__init__.py", "vllm/config.py")
_VL_OBJECTS = re.compile(
    r"\b(ModelConfig|ParallelConfig|LoadConfig|VllmConfig|CacheConfig|SchedulerConfig)\b"
)


def _find_class(root: Path, rels: Iterable[str], name: str) -> tuple[str, ast.ClassDef] | None:
    for rel in rels:
        tree = _parse(root, rel)
        if tree is None:
            continue
        for node in tree.body:
            if isinstance(node, ast.ClassDef) and node.name == name:
                return rel, node
    return None


def _engine_filled_keys(cls: ast.ClassDef) -> set[str]:
    """Keys EngineArgs.create_speculative_config puts into the user's dict itself (`.update({...})`)."""
    keys: set[str] = set()
    for node in ast.walk(cls):
        if isinstance(node, ast.FunctionDef) and node.name == "create_speculative_config":
            for call in ast.walk(node):
                if (
                    isinstance(call, ast.Call)
                    and isinstance(call.func, ast.Attribute)
                    and call.func.attr == "update"
                ):
                    for arg in call.args:
                        if isinstance(arg, ast.Dict):
                            keys |= {k.value for k in arg.keys if isinstance(k, ast.Constant)}
    return keys


def scan_vllm(root: Path) -> dict:
    """`root` is the folder holding the unzipped `vllm/` package of one release."""
    found = _find_class(root, _VL_CONFIG_FILES, "SpeculativeConfig")
    engine = _find_class(root, ("vllm/engine/arg_utils.py",), "EngineArgs")
    args: dict[str, Argument] = {}
    filled = _engine_filled_keys(engine[1]) if engine else set()
    if found is not None:
        rel, cls = found
        names = {name for name, _ in _class_fields(cls)}
        for name, stmt in _class_fields(cls):
            if name.startswith("_"):
                continue
            kind = "key"
            if _VL_OBJECTS.search(ast.unparse(stmt.annotation)):
                kind = "internal"
            elif name in filled:
                kind = "set-by-engine"
            args[name] = Argument(name, kind, [f"--speculative-config.{name}"], _field_default(stmt.value),
                                  f"{rel}:{stmt.lineno}", type=_type(stmt.annotation))  # fmt: skip
        writes = _writes([n for n in cls.body if isinstance(n, ast.FunctionDef)], rel)
        for name, sites in writes.items():
            if name in args and name in names:
                args[name].written = sites
    if engine is not None:
        rel, cls = engine
        tree = _parse(root, rel)
        flags = _add_argument_flags(tree) if tree is not None else {}
        for name, stmt in _class_fields(cls):
            if not SPECULATIVE_NAME.search(name) or name.startswith("_"):
                continue
            args[f"EngineArgs.{name}"] = Argument(
                f"EngineArgs.{name}", "flag", flags.get(name, ["--" + name.replace("_", "-")]),
                _field_default(stmt.value), f"{rel}:{stmt.lineno}",
            )  # fmt: skip
    # Reads of `<something spec...>.key` outside SpeculativeConfig's own file (its validation reads every key);
    # EngineArgs fields by their (unique) names.
    keys = {n: a for n, a in args.items() if not n.startswith("EngineArgs.")}
    if found is not None:
        _reads(root, "vllm", keys, (found[0],), holder="spec")
    flags_ = {n: a for n, a in args.items() if n.startswith("EngineArgs.")}
    _reads(root, "vllm", flags_, (), attr_of=lambda n: n.split(".", 1)[1])
    draft: list[DraftSetting] = []
    if found is not None:
        rel = found[0]
        draft = _draft_calls(root, (rel,), re.compile(r"(^|\.)(ModelConfig|ParallelConfig)$"), set(), True)
        draft = [d for d in draft if d.setting != "tokenizer" or "draft" not in d.source]
    return {
        "arguments": [asdict(a) for a in sorted(args.values(), key=lambda a: a.name)],
        "draft_settings": [asdict(d) for d in draft],
    }


def scan(engine: str, root: Path) -> dict:
    """One release: `root` is the folder the wheel was unzipped into (holding `sglang/` or `vllm/`)."""
    if engine == "sglang":
        return scan_sglang(root / "sglang")
    return scan_vllm(root)
