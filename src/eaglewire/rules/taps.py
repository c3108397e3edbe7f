"""The convention machinery: how one framework, in one version range, for one engine model file, turns the
numbers in a drafter config into taps. The rows themselves are data, one module per framework
(`engines/<engine>/taps.py`, `trainers/taps.py`); each engine's `MODEL_FILES` there (gathered in
`engines/models.py`) maps a target family to its model file.

One row per (framework, version range, engine model file(s), runner). A row says where the id list is
read from, the default for an L-layer target, the map F(v) from a configured value v to a tap, and which taps
the framework cannot capture (and whether asking for them crashes or silently drops a state). The facts and
their sources are in `docs/conventions.md`; every row cites the file and lines it encodes.

Two functions carry the table:
- `resolve(row, config, L)`: the taps a framework feeds (serving) or fed (training) a drafter whose config is
  `config`, on an L-layer target;
- `config_value_for(row, taps, L)`: the inverse, the config value that makes the framework use `taps`, or the
  reason it cannot be expressed.
New engine versions are new rows, not new if-branches.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field, replace
from enum import Enum

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from eaglewire.errors import InputError
from eaglewire.rules.row import Row
from eaglewire.taps import Wiring


class Rule(Enum):
    """F(v): the tap captured for a configured id v."""

    PLUS_ONE = (
        "F(v) = v + 1"  # "id i = output of layer i" (capture at the input of layer i+1, or a hook on layer i)
    )
    RAW = "F(v) = v"  # "id k = input of layer k" = HF hidden_states index
    FIRST_IS_ONE = "F(v) = v + 1 if ids[0] == 1 else v"  # SGLang deepseek_v2.py since 0.5.13 (PR #25454)
    RAW_IF_MAX_IS_L = "F(v) = v if max(ids) == L else v + 1"  # SGLang gpt_oss.py (PR #32334)
    FIXED = "no config: fixed taps"
    UNSUPPORTED = "no EAGLE-3 for this model"

    def apply(self, ids: tuple[int, ...], num_layers: int | None = None) -> tuple[int, ...]:
        shift = self is Rule.PLUS_ONE or (self is Rule.FIRST_IS_ONE and ids and ids[0] == 1)
        if self is Rule.RAW_IF_MAX_IS_L:
            shift = not (ids and num_layers is not None and max(ids) == num_layers)
        return tuple(v + 1 for v in ids) if shift else tuple(ids)

    def invert(self, taps: tuple[int, ...]) -> list[tuple[int, ...]]:
        """Candidate id lists (before ordering) that this rule might map onto `taps`."""
        if self is Rule.PLUS_ONE:
            return [tuple(t - 1 for t in taps)]
        if self is Rule.RAW:
            return [tuple(taps)]
        if self in (Rule.FIRST_IS_ONE, Rule.RAW_IF_MAX_IS_L):
            return [tuple(taps), tuple(t - 1 for t in taps)]
        return []


@dataclass(frozen=True)
class IdSource:
    """A config key the id list may be read from; `shift` converts that key's own semantics (DFlash +1)."""

    path: (
        str  # dotted path in the drafter's config.json, e.g. "eagle_config.eagle_aux_hidden_state_layer_ids"
    )
    shift: int = 0


TOP = IdSource("eagle_aux_hidden_state_layer_ids")
NESTED = IdSource("eagle_config.eagle_aux_hidden_state_layer_ids")
NESTED_LAYER_IDS = IdSource("eagle_config.layer_ids")
DFLASH = IdSource("dflash_config.target_layer_ids", shift=1)


_TERM = re.compile(r"^(?:(L)(?://(\d+))?)?([+-]?\d+)?$")


def _default(spec: str, num_layers: int) -> tuple[int, ...]:
    """Evaluate a default like '2,L//2,L-3' for an L-layer target (kept as listed, duplicates included)."""
    out = []
    for term in spec.split(","):
        m = _TERM.match(term.strip())
        if not m or not term.strip():
            raise ValueError(f"bad default term {term!r}")
        value = (num_layers // int(m.group(2) or 1)) if m.group(1) else 0
        out.append(value + int(m.group(3) or 0))
    return tuple(out)


@dataclass(frozen=True)
class Convention(Row):
    """A tap row (a `Row`): how one framework, in one version range, for some engine model files and a runner,
    turns the ids in a drafter config into taps."""

    key: str  # stable row id, e.g. "sglang-llama-0.5.15+"
    framework: str  # sglang | vllm | trtllm | speculators | specforge | modelopt | eagle | eaglewire
    role: str  # "serve" (an engine feeding a drafter) or "train" (a trainer capturing training data)
    versions: str  # a PEP 440 specifier set, e.g. ">=0.5.15" or ">=0.9.0,<0.10.2"; "" = any version
    checked: tuple[str, ...]  # versions whose source was read for this row ("" entries: commits, see source)
    models: tuple[
        str, ...
    ]  # the engine model files the row covers (models.py maps targets to them); "*" = any
    id_sources: tuple[IdSource, ...]  # in precedence order; empty for FIXED rows
    rule: Rule  # F(v) for explicit ids
    default: str  # default id list when no source key is set, e.g. "2,L//2,L-3"
    default_rule: Rule  # F for the default (SGLang's default skips the +1)
    lowest_tap: int  # lowest tap the framework can capture (0 = embeddings reachable)
    highest_tap: str  # "L" (pre-norm last-layer output reachable) or "L-1"
    h0_crash: str | None  # what happens when h0 is requested but unreachable; None = silently never captured
    sorted_unique: bool = True  # captured states are deduplicated and concatenated in ascending layer order
    exactly: int | None = None  # the framework accepts exactly this many ids (SpecForge: 3)
    runner: str | None = None  # vLLM: "v0", "v1" or "mrv2"
    default_runner: bool = True  # the runner a plain launch uses
    fc_width_keys: tuple[str, ...] = (
        "num_aux_hidden_states",
        "eagle_config.eagle_aux_hidden_state_layer_ids",
    )
    reads_speculators_format: bool = False
    source: str = ""
    notes: tuple[str, ...] = ()
    unsupported: str | None = None  # Rule.UNSUPPORTED rows: what the engine does (refuses, crashes, ...)
    # UNSUPPORTED rows, where the refusal happens: "config" (the engine's config check, before any model code runs);
    # "capture" (the class takes the ids, so its registry lists an EAGLE-3 interface, but its forward captures none);
    # "load" (the draft model is built but the checkpoint does not load into it)
    refused_at: str | None = None
    refused_fix: str | None = (
        None  # UNSUPPORTED rows: what serves it instead, where a launch does (not a config value)
    )
    hl_crash: str | None = (
        None  # what happens when a tap above the highest reachable one is asked (None: dropped)
    )
    missing_crash: str | None = (
        None  # what happens when an asked state is not captured (None: silently fewer)
    )
    width_stage: str | None = (
        None  # where fewer/more aux states than the fc's width fail, where observed running
    )
    ignores_ids: str | None = None  # a code path that feeds the default taps whatever the ids say (when)
    # with ignores_ids: the code path's own call sets per-layer flags that the configured call never clears, so
    # the other steps capture the union of the default's taps and the configured ones (SGLang < 0.5.11, CUDA)
    graph_union: bool = False
    ignores_on: str | None = None  # the platform whose code path ignores the ids (None: every platform)
    empty_ids: str | None = None  # what an empty id list does when it is not read as "the default"
    launch_key: str | None = (
        None  # the ids live in the engine's launch config, not in the drafter's config.json
    )
    via: str | None = None  # trainers: the engine whose capture produced the training data
    verified_all: bool = False  # facts hold for every version the row covers (e.g. a fixed file of a commit)
    records_ids: bool = True  # trainers: the checkpoint carries the ids the trainer used
    # the platform the row holds on ("cpu", "cuda"; None: every one): where a platform serves the models with a
    # class of its own (vLLM's packages that pick their implementation by platform, engines/vllm/taps.py)
    platform: str | None = None

    def verified(self, version: Version | None) -> bool:
        """Whether `version` lies where this row was read at source: between the oldest and newest version
        read (a row's range beyond its newest read version is an assumption until someone reads it)."""
        if self.verified_all:
            return True
        read = [Version(v) for v in self.checked if _is_version(v)]
        if version is None:
            return bool(read)
        return bool(read) and self.covers(version) and min(read) <= version <= max(read)

    def on(self, platform: str | None) -> Convention:
        """The row as a launch on `platform` (None: not given) uses it: a code path that ignores the ids on another
        platform only is not taken there (SGLang's CUDA-graph runner before 0.5.11: its CPU graph runner makes no
        capture call of its own)."""
        if self.ignores_ids and self.ignores_on and platform and platform != self.ignores_on:
            return replace(self, ignores_ids=None, graph_union=False)
        return self

    def covers_model(self, model: str) -> bool:
        return "*" in self.models or model in self.models

    @property
    def label(self) -> str:
        """e.g. `sglang>=0.5.13`, `vllm>=0.33.0 mrv2` (rows are per target class; the caller names the target)."""
        return f"{self.framework}{self.versions}" + (f" {self.runner}" if self.runner else "")

    @property
    def engine_class(self) -> str:
        """A short name of the model file group the row covers (for display)."""
        return "any" if "*" in self.models else self.models[0]

    def top(self, num_layers: int) -> int:
        return num_layers if self.highest_tap == "L" else num_layers - 1

    @property
    def engine(self) -> str:
        """The framework, under the name every `Row` uses."""
        return self.framework

    def distance(self, version: Version) -> float:
        """How far `version` lies from this row's bounds (0 when covered): picks the nearest row otherwise."""
        if self.covers(version):
            return 0.0
        bounds = [Version(spec.version.rstrip(".*")) for spec in SpecifierSet(self.versions)]
        return min((abs(_as_number(b) - _as_number(version)) for b in bounds), default=0.0)


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


@dataclass(frozen=True)
class EngineSpec:
    framework: str
    version: Version | None

    def __str__(self) -> str:
        return self.framework + (f"=={self.version}" if self.version else "")


@dataclass(frozen=True)
class RowMatch:
    row: Convention
    exact: bool  # a row covers the version (False: the nearest row is used, say so)
    verified: bool = True  # the version lies where the row was read at source
    model: str = "*"  # the engine model file the target maps to
    model_known: bool = True  # False: the target family is not in the engine's model table (generic rule)
    basis: str | None = None  # what the engine's own registry says of an architecture the table does not list

    @property
    def assumed(self) -> bool:
        return not (self.exact and self.verified and self.model_known)


def _as_number(v: Version) -> float:
    parts = ([*list(v.release), 0, 0, 0])[:3]
    return parts[0] * 1e6 + parts[1] * 1e3 + parts[2]


def get_path(config: dict, path: str):
    node = config
    for part in path.split("."):
        if not isinstance(node, dict) or part not in node:
            return None
        node = node[part]
    return node


@dataclass
class Resolution:
    """What one framework does with one drafter config on one target."""

    row: Convention
    num_layers: int
    source_key: str | None  # the key the ids were read from; None = the framework's default
    ids: tuple[int, ...] | None  # the values as listed (config space)
    taps: Wiring | None  # what is captured, ascending; None when it fails
    failure: str | None = None  # a crash, a rejected value, or states silently never captured
    notes: list[str] = field(default_factory=list)
    stage: str | None = None  # where the failure surfaces ("load", "warm-up", "first request"), where known

    @property
    def ok(self) -> bool:
        return self.failure is None


def _read_ids(row: Convention, config: dict, num_layers: int):
    for src in row.id_sources:
        value = get_path(config, src.path)
        if value is None:
            continue
        if not isinstance(value, list) or not all(
            isinstance(v, int) and not isinstance(v, bool) for v in value
        ):
            raise InputError(f"drafter config key {src.path!r} must be a list of integers, found {value!r}")
        if not value:
            if row.empty_ids:
                return src.path, (), row.rule  # passed through as given: _capture reports it
            continue  # read as "use the default"
        return src.path, tuple(v + src.shift for v in value), row.rule
    return None, _default(row.default, num_layers), row.default_rule


def _unsupported(row: Convention, num_layers: int) -> Resolution:
    reason = row.unsupported or f"{row.framework} {row.versions} has no EAGLE-3 support for this model"
    return Resolution(row=row, num_layers=num_layers, source_key=None, ids=None, taps=None, failure=reason)


def resolve(row: Convention, config: dict, num_layers: int) -> Resolution:
    """The taps `row`'s framework captures for a drafter with this config.json on an L-layer target."""
    if row.rule is Rule.UNSUPPORTED:
        return _unsupported(row, num_layers)
    key, ids, rule = _read_ids(row, config, num_layers)
    return _capture(row, key, ids, rule, num_layers)


def after_default_flags(row: Convention, config: dict, num_layers: int) -> Resolution:
    """What a `graph_union` row's other steps capture: a code path first flagged the default's layers, then the
    configured request flagged its own and cleared none, so the union of both (an empty list adds nothing; a layer
    index below 0 wraps as Python's does). The configured request's own crash (a flag past the last layer) still
    raises there; the width the drafter's fc then gets is not checked here."""
    key, ids, rule = _read_ids(row, config, num_layers)
    default = _capture(row, None, _default(row.default, num_layers), row.default_rule, num_layers)
    if key is None or default.taps is None:
        return default
    taps = rule.apply(ids, num_layers)
    top = row.top(num_layers)
    if row.hl_crash and any(t > top for t in taps):
        return _capture(row, key, ids, rule, num_layers)
    flagged = {t % num_layers if t < 0 else t for t in taps if t <= top}
    res = Resolution(row=row, num_layers=num_layers, source_key=key, ids=ids, taps=None)
    res.taps = Wiring.of(sorted(flagged | set(default.taps.indices)))
    return res


def replayed(row: Convention, config: dict, num_layers: int) -> tuple[Wiring, Wiring | None] | None:
    """Where `resolve` fails only because a code path feeds the default whatever the ids (`ignores_ids`: SGLang's
    CUDA graphs before 0.5.11): the taps that path's steps feed (the default's) and the taps the other steps
    capture (the configured ones, or with `graph_union` the union; None where none). None otherwise. What the
    walk of `test --engine` and `doctor` feeds: the replayed steps are every verify after the first prefill."""
    res = resolve(row, config, num_layers)
    if res.taps is not None or not row.ignores_ids or not (res.failure or "").startswith(row.ignores_ids):
        return None
    plain = replace(row, ignores_ids=None, graph_union=False)
    default = resolve(plain, {}, num_layers).taps
    eager = (
        after_default_flags(plain, config, num_layers)
        if row.graph_union
        else resolve(plain, config, num_layers)
    )
    return (default, eager.taps) if default is not None else None


def resolve_ids(row: Convention, ids: tuple[int, ...], num_layers: int) -> Resolution:
    """As `resolve`, for an id list placed in the row's primary key."""
    if row.rule is Rule.UNSUPPORTED:
        return _unsupported(row, num_layers)
    if row.rule is Rule.FIXED:
        return _capture(row, None, _default(row.default, num_layers), row.default_rule, num_layers)
    return _capture(row, row.id_sources[0].path, tuple(ids), row.rule, num_layers)


def _capture(
    row: Convention, key: str | None, ids: tuple[int, ...], rule: Rule, num_layers: int
) -> Resolution:
    res = Resolution(row=row, num_layers=num_layers, source_key=key, ids=ids, taps=None)
    where = key or "the default"
    if not ids and row.empty_ids:
        res.failure = f"{where} is an empty list: {row.empty_ids}"
        return res
    if row.exactly is not None and len(ids) != row.exactly:
        res.failure = f"{row.framework} accepts exactly {row.exactly} ids, {where} lists {len(ids)}"
        return res
    if row.exactly is not None and (len(set(ids)) != len(ids) or min(ids) < 0):
        res.failure = f"{row.framework} requires distinct non-negative ids, {where} lists {list(ids)}"
        return res
    taps = rule.apply(ids, num_layers)
    if rule is Rule.RAW_IF_MAX_IS_L:
        res.notes.append(f"largest id {max(ids)}: {'taken raw' if max(ids) == num_layers else '+1 applied'}")
    if rule is Rule.FIRST_IS_ONE:
        res.notes.append(f"first id is {ids[0]}: {'+1 applied' if ids and ids[0] == 1 else 'taken raw'}")
    top = row.top(num_layers)
    above = [(v, t) for v, t in zip(ids, taps, strict=False) if t > top and row.hl_crash]
    if above:
        res.failure = f"id {above[0][0]} in {where} maps to h{above[0][1]}: {row.hl_crash}"
        return res
    missing = [
        (v, t)
        for v, t in zip(ids, taps, strict=False)
        if t < 0 or t > top or (t == 0 and row.lowest_tap > 0 and not row.h0_crash)
    ]
    crash = [
        (v, t) for v, t in zip(ids, taps, strict=False) if t == 0 and row.lowest_tap > 0 and row.h0_crash
    ]
    if crash:
        v, _ = crash[0]
        res.failure = f"id {v} in {where} asks for h0 (embeddings): {row.h0_crash}"
        return res
    if missing:
        v, t = missing[0]
        what = f"h{t}" if t >= 0 else f"layer {t}"
        then = row.missing_crash or "the fc input width no longer matches"
        res.stage = row.width_stage
        res.failure = (
            f"id {v} in {where} maps to {what}, which {row.framework} never captures (capturable: "
            f"h{row.lowest_tap}..h{top}); it gets {len(ids) - len(missing)} of {len(ids)} aux states: {then}"
        )
        return res
    unique = sorted(set(taps))
    if len(unique) < len(taps):
        res.failure = (
            f"ids {list(ids)} in {where} map to repeated taps {list(taps)}: {row.framework} captures each layer "
            f"once, so fc receives {len(unique)} states instead of {len(taps)}"
            + (f": {row.missing_crash}" if row.missing_crash else "")
        )
        res.stage = row.width_stage
        return res
    res.taps = Wiring.of(unique if row.sorted_unique else taps)
    if row.ignores_ids and key is not None:
        default = sorted(set(row.default_rule.apply(_default(row.default, num_layers), num_layers)))
        if unique != default:
            res.failure = (
                f"{row.ignores_ids}: the drafter gets h{','.join(map(str, default))} there, not {res.taps}"
            )
            res.taps = None
    return res


@dataclass
class ConfigFix:
    """How to make a framework feed given taps: the key and value to write, or why it cannot be done."""

    row: Convention
    taps: Wiring
    key: str | None  # dotted key path to set
    value: list[int] | None
    reason: str | None = None  # set when the taps cannot be expressed
    notes: list[str] = field(default_factory=list)

    @property
    def expressible(self) -> bool:
        return self.reason is None


def config_value_for(row: Convention, taps: Wiring, num_layers: int) -> ConfigFix:
    """The id list that makes `row` capture exactly `taps` (ascending), or the reason none exists."""
    want = tuple(sorted(taps.indices))
    if row.rule is Rule.UNSUPPORTED:
        return ConfigFix(
            row, taps, None, None, reason=row.refused_fix or _unsupported(row, num_layers).failure
        )
    if not row.id_sources and row.rule is not Rule.FIXED:
        return ConfigFix(row, taps, None, None, reason=f"{row.framework} reads no ids from a config")
    if row.rule is Rule.FIXED:
        fixed = resolve_ids(row, (), num_layers)
        if fixed.taps is not None and fixed.taps.indices == want:
            return ConfigFix(
                row, taps, None, None, notes=["these are the framework's fixed taps; nothing to set"]
            )
        return ConfigFix(
            row, taps, None, None, reason=f"{row.framework} has no config for its taps ({row.notes[0]})"
        )
    first_failure = None
    for base in row.rule.invert(want):
        for ids in _orderings(base):
            res = resolve_ids(row, ids, num_layers)
            if res.ok and res.taps is not None and res.taps.indices == want:
                fix = ConfigFix(row, taps, row.id_sources[0].path, list(ids))
                if list(ids) != sorted(ids):
                    fix.notes.append(
                        f"keep this order: {row.framework} decides the +1 by the first listed id; the states are "
                        "still concatenated in ascending layer order"
                    )
                return fix
            first_failure = first_failure or res.failure
    if (
        row.ignores_ids
    ):  # a code path feeds the default whatever the ids: name the value for the launches without it
        other = config_value_for(replace(row, ignores_ids=None, graph_union=False), taps, num_layers)
        if other.value is not None:
            return ConfigFix(row, taps, other.key, None, reason=(
                f"no config value feeds {taps} on every step ({row.ignores_ids}); where that path is off, "
                f"{other.key} = {other.value} does"))  # fmt: skip
    reason = first_failure or f"{row.framework} cannot capture {taps}"
    return ConfigFix(row, taps, row.id_sources[0].path, None, reason=reason)


def _orderings(ids: tuple[int, ...]):
    """Sorted first (the natural way to write it); other orders only matter for the first-id heuristic."""
    yield tuple(sorted(ids))
    if len(ids) <= 6:
        seen = {tuple(sorted(ids))}
        for perm in itertools.permutations(sorted(ids)):
            if perm not in seen:
                seen.add(perm)
                yield perm
