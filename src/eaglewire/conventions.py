"""The convention table: how each framework, by version and target family, turns config numbers into taps.

One row per (framework, version range, engine class of the target, runner). A row says where the id list is
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
from dataclasses import dataclass, field
from enum import Enum

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from eaglewire.errors import InputError
from eaglewire.taps import Wiring


class Rule(Enum):
    """F(v): the tap captured for a configured id v."""

    PLUS_ONE = (
        "F(v) = v + 1"  # "id i = output of layer i" (capture at the input of layer i+1, or a hook on layer i)
    )
    RAW = "F(v) = v"  # "id k = input of layer k" = HF hidden_states index
    FIRST_IS_ONE = "F(v) = v + 1 if ids[0] == 1 else v"  # SGLang deepseek_v2.py since 0.5.13 (PR #25454)
    FIXED = "no config: fixed taps"

    def apply(self, ids: tuple[int, ...]) -> tuple[int, ...]:
        if self is Rule.PLUS_ONE or (self is Rule.FIRST_IS_ONE and ids and ids[0] == 1):
            return tuple(v + 1 for v in ids)
        return tuple(ids)

    def invert(self, taps: tuple[int, ...]) -> list[tuple[int, ...]]:
        """Candidate id lists (before ordering) that this rule might map onto `taps`."""
        if self is Rule.PLUS_ONE:
            return [tuple(t - 1 for t in taps)]
        if self is Rule.RAW:
            return [tuple(taps)]
        if self is Rule.FIRST_IS_ONE:
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
class Convention:
    key: str  # stable row id, e.g. "sglang-llama-0.5.15+"
    framework: str  # sglang | vllm | speculators | specforge | modelopt | eagle
    role: str  # "serve" (an engine feeding a drafter) or "train" (a trainer capturing training data)
    versions: str  # a PEP 440 specifier set, e.g. ">=0.5.15" or "==0.33.*"; "" = any version
    checked: tuple[str, ...]  # versions whose source was read for this row
    engine_class: str  # "llama" | "deepseek" | "any" (targets.FAMILIES maps a target to its class)
    id_sources: tuple[IdSource, ...]  # in precedence order; empty for FIXED rows
    rule: Rule  # F(v) for explicit ids
    default: str  # default id list when no source key is set, e.g. "2,L//2,L-3"
    default_rule: Rule  # F for the default (SGLang's default skips the +1)
    lowest_tap: int  # lowest tap the framework can capture (0 = embeddings reachable)
    highest_tap: str  # "L" (pre-norm last-layer output reachable) or "L-1"
    h0_crash: str | None  # what happens when h0 is requested but unreachable; None = silently never captured
    sorted_unique: bool = True  # captured states are deduplicated and concatenated in ascending layer order
    exactly: int | None = None  # the framework accepts exactly this many ids (SpecForge: 3)
    runner: str | None = None  # vLLM: "v1" or "mrv2"
    default_runner: bool = True  # the runner a plain launch uses
    fc_width_keys: tuple[str, ...] = (
        "num_aux_hidden_states",
        "eagle_config.eagle_aux_hidden_state_layer_ids",
    )
    reads_speculators_format: bool = False
    source: str = ""
    notes: tuple[str, ...] = ()

    @property
    def label(self) -> str:
        """e.g. `sglang>=0.5.13`, `vllm==0.33.* mrv2` (rows are per target class; the caller names the target)."""
        return f"{self.framework}{self.versions}" + (f" {self.runner}" if self.runner else "")

    def top(self, num_layers: int) -> int:
        return num_layers if self.highest_tap == "L" else num_layers - 1

    def covers(self, version: Version) -> bool:
        return version in SpecifierSet(self.versions)

    def distance(self, version: Version) -> float:
        """How far `version` lies from this row's bounds (0 when covered): picks the nearest row otherwise."""
        if self.covers(version):
            return 0.0
        bounds = [Version(spec.version.rstrip(".*")) for spec in SpecifierSet(self.versions)]
        return min((abs(_as_number(b) - _as_number(version)) for b in bounds), default=0.0)


SGL_LLAMA_SRC = (
    "sglang 0.5.23 srt/models/llama.py:929-941, 485-505; spec_aux_hidden_state.py:185-196; "
    "layers/layer_boundary/stage.py:421-432"
)
VLLM_SRC = (
    "vllm 0.33.0 v1/worker/gpu_model_runner.py:5169-5224; v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:"
    "25-40,113-150; models/interfaces.py:1608-1650,1751-1772"
)

ROWS: tuple[Convention, ...] = (
    # ---- SGLang: reads eagle_config.eagle_aux_hidden_state_layer_ids only; default [2, L//2, L-3] without +1.
    Convention(
        key="sglang-llama-0.5.15+",
        framework="sglang",
        role="serve",
        versions=">=0.5.15",
        checked=("0.5.23",),
        engine_class="llama",
        id_sources=(NESTED,),
        rule=Rule.PLUS_ONE,
        default="2,L//2,L-3",
        default_rule=Rule.RAW,
        lowest_tap=0,
        highest_tap="L-1",
        h0_crash=None,
        source=SGL_LLAMA_SRC,
        notes=(
            "id -1 captures the embeddings (capture_before_read at layer 0)",
            "id L-1 (the last layer's output) is never captured: the capture loop runs over layer inputs 0..L-1",
            "0.5.23 read at source; 0.5.15-0.5.22 assumed to behave like 0.5.23",
        ),
    ),
    Convention(
        key="sglang-llama-<=0.5.14",
        framework="sglang",
        role="serve",
        versions="<=0.5.14",
        checked=("0.5.10", "0.5.14"),
        engine_class="llama",
        id_sources=(NESTED,),
        rule=Rule.PLUS_ONE,
        default="2,L//2,L-3",
        default_rule=Rule.RAW,
        lowest_tap=1,
        highest_tap="L-1",
        h0_crash="capturing at layer 0 computes hidden_states + residual with residual None: TypeError at startup",
        source="sglang 0.5.14 srt/models/llama.py:406-416, 812-824; model_runner.py:461-472",
    ),
    Convention(
        key="sglang-deepseek-0.5.13+",
        framework="sglang",
        role="serve",
        versions=">=0.5.13",
        checked=("0.5.13", "0.5.14", "0.5.23"),
        engine_class="deepseek",
        id_sources=(NESTED,),
        rule=Rule.FIRST_IS_ONE,
        default="2,L//2,L-3",
        default_rule=Rule.RAW,
        lowest_tap=0,
        highest_tap="L-1",
        h0_crash=None,
        source=(
            "sglang 0.5.23 srt/models/deepseek_v2.py:3458-3473, 3175-3199; kimi_k25.py:693, 928-939; "
            "PR sgl-project/sglang#25454"
        ),
        notes=(
            "the +1 applies only when the FIRST listed id is 1 (list order matters, not the sorted order)",
            "Kimi-K2.5 (KimiK25ForConditionalGeneration) wraps DeepseekV3ForCausalLM and follows this row",
        ),
    ),
    Convention(
        key="sglang-deepseek-<=0.5.12",
        framework="sglang",
        role="serve",
        versions="<=0.5.12",
        checked=("0.5.6", "0.5.10", "0.5.11", "0.5.12"),
        engine_class="deepseek",
        id_sources=(NESTED,),
        rule=Rule.PLUS_ONE,
        default="2,L//2,L-3",
        default_rule=Rule.RAW,
        lowest_tap=1,
        highest_tap="L-1",
        h0_crash="capturing at layer 0 computes hidden_states + residual with residual None: TypeError at startup",
        source="sglang 0.5.10 srt/models/deepseek_v2.py:2302-2307, 2052-2059",
    ),
    # ---- vLLM 0.33: F(v) = v; V1 runner reads top-level then eagle_config; MRV2 never reads the nested ids.
    Convention(
        key="vllm-llama-mrv2-0.33",
        framework="vllm",
        role="serve",
        versions="==0.33.*",
        checked=("0.33.0",),
        engine_class="llama",
        runner="mrv2",
        default_runner=True,
        id_sources=(TOP, DFLASH, NESTED_LAYER_IDS),
        rule=Rule.RAW,
        default="2,L//2,L-3",
        default_rule=Rule.RAW,
        lowest_tap=0,
        highest_tap="L",
        h0_crash=None,
        reads_speculators_format=True,
        source=VLLM_SRC + "; config/vllm.py:731-767 (MRV2 is the default on GPU)",
        notes=("MRV2 does NOT read eagle_config.eagle_aux_hidden_state_layer_ids",),
    ),
    Convention(
        key="vllm-llama-v1-0.33",
        framework="vllm",
        role="serve",
        versions="==0.33.*",
        checked=("0.33.0",),
        engine_class="llama",
        runner="v1",
        default_runner=False,
        id_sources=(TOP, NESTED, DFLASH),
        rule=Rule.RAW,
        default="2,L//2,L-3",
        default_rule=Rule.RAW,
        lowest_tap=0,
        highest_tap="L",
        h0_crash=None,
        reads_speculators_format=True,
        source=VLLM_SRC,
    ),
    Convention(
        key="vllm-deepseek-mrv2-0.33",
        framework="vllm",
        role="serve",
        versions="==0.33.*",
        checked=("0.33.0",),
        engine_class="deepseek",
        runner="mrv2",
        default_runner=True,
        id_sources=(TOP, DFLASH, NESTED_LAYER_IDS),
        rule=Rule.RAW,
        default="2,L//2,L-3",
        default_rule=Rule.RAW,
        lowest_tap=1,
        highest_tap="L",
        h0_crash="DeepseekV2Model computes hidden_states + residual with residual None at index 0: TypeError",
        reads_speculators_format=True,
        source="vllm 0.33.0 models/deepseek_v2.py:1525, 1545-1571, 1586-1587; kimi_k25.py:376-380; "
        + VLLM_SRC,
        notes=("MRV2 does NOT read eagle_config.eagle_aux_hidden_state_layer_ids",),
    ),
    Convention(
        key="vllm-deepseek-v1-0.33",
        framework="vllm",
        role="serve",
        versions="==0.33.*",
        checked=("0.33.0",),
        engine_class="deepseek",
        runner="v1",
        default_runner=False,
        id_sources=(TOP, NESTED, DFLASH),
        rule=Rule.RAW,
        default="2,L//2,L-3",
        default_rule=Rule.RAW,
        lowest_tap=1,
        highest_tap="L",
        h0_crash="DeepseekV2Model computes hidden_states + residual with residual None at index 0: TypeError",
        reads_speculators_format=True,
        source="vllm 0.33.0 models/deepseek_v2.py:1525, 1545-1571, 1586-1587; " + VLLM_SRC,
    ),
    # ---- Trainers: how the training data's taps follow from the ids in the checkpoint they write.
    Convention(
        key="speculators-0.9",
        framework="speculators",
        role="train",
        versions="==0.9.*",
        checked=("0.9.0",),
        engine_class="any",
        id_sources=(TOP,),
        rule=Rule.RAW,
        default="2,L//2,L-3",
        default_rule=Rule.RAW,
        lowest_tap=0,
        highest_tap="L",
        h0_crash=None,
        reads_speculators_format=True,
        source=(
            "speculators 0.9.0 models/utils.py:99-140; models/eagle3/core.py:164-172, 391-409; "
            "scripts/launch_vllm.py:117-141 (training data captured by vLLM extract_hidden_states)"
        ),
        notes=(
            "training data comes from vLLM, so on DeepSeek/Kimi targets id 0 would crash vLLM's datagen "
            "(inferred, not executed)",
        ),
    ),
    Convention(
        key="specforge-llama",
        framework="specforge",
        role="train",
        versions="",
        checked=("a6b6b02", "0.2.0"),
        engine_class="llama",
        id_sources=(NESTED,),
        rule=Rule.PLUS_ONE,
        default="1,L//2-1,L-4",
        default_rule=Rule.PLUS_ONE,
        lowest_tap=1,
        highest_tap="L-1",
        h0_crash=None,
        exactly=3,
        source=(
            "SpecForge@a6b6b02 algorithms/model_providers.py:188-211; application/planning.py:96-111; "
            "capture through sglang 0.5.14 (llama.py +1)"
        ),
        notes=("ids must be exactly 3 distinct non-negative integers; id -1 is rejected",),
    ),
    Convention(
        key="specforge-deepseek",
        framework="specforge",
        role="train",
        versions="",
        checked=("a6b6b02", "0.2.0"),
        engine_class="deepseek",
        id_sources=(NESTED,),
        rule=Rule.FIRST_IS_ONE,
        default="1,L//2-1,L-4",
        default_rule=Rule.FIRST_IS_ONE,
        lowest_tap=0,
        highest_tap="L-1",
        h0_crash=None,
        exactly=3,
        source=(
            "SpecForge@a6b6b02 algorithms/model_providers.py:188-211; capture through sglang 0.5.14 "
            "deepseek_v2.py:2799-2814 (first-id heuristic)"
        ),
    ),
    Convention(
        key="modelopt-0.47",
        framework="modelopt",
        role="train",
        versions="==0.47.*",
        checked=("0.47.0",),
        engine_class="any",
        id_sources=(NESTED,),
        rule=Rule.PLUS_ONE,
        default="1,L//2-1,L-4",
        default_rule=Rule.PLUS_ONE,
        lowest_tap=1,
        highest_tap="L",
        h0_crash=None,
        source="nvidia-modelopt 0.47.0 torch/speculative/plugins/hf_eagle.py:58-63, 201-232, 402-406",
        notes=("forward hooks on decoder-layer outputs: the embeddings cannot be captured",),
    ),
    Convention(
        key="eagle-reference",
        framework="eagle",
        role="train",
        versions="",
        checked=("cb7e084",),
        engine_class="any",
        id_sources=(),
        rule=Rule.FIXED,
        default="2,L//2,L-3",
        default_rule=Rule.RAW,
        lowest_tap=0,
        highest_tap="L",
        h0_crash=None,
        source="SafeAILab/EAGLE@cb7e084 eagle/model/modeling_llama_kv.py:1138-1139; traineagle3/cnets.py:499",
        notes=("no config: taps are hard-coded to the inputs of layers 2, L//2, L-3",),
    ),
)

FRAMEWORKS = ("sglang", "vllm", "speculators", "specforge", "modelopt", "eagle")
ENGINES = ("sglang", "vllm")
NEWEST = {"sglang": "0.5.23", "vllm": "0.33.0", "speculators": "0.9.0", "modelopt": "0.47.0"}


@dataclass(frozen=True)
class EngineSpec:
    framework: str
    version: Version | None

    def __str__(self) -> str:
        return self.framework + (f"=={self.version}" if self.version else "")


def parse_spec(text: str) -> EngineSpec:
    """`sglang==0.5.23`, `vllm==0.33.0`, `speculators`, ... (no version = newest row)."""
    name, _, ver = text.strip().partition("==")
    name = name.strip().lower()
    if name not in FRAMEWORKS:
        raise InputError(
            f"unknown framework {name!r} in {text!r}: use one of {', '.join(FRAMEWORKS)} (e.g. sglang==0.5.23)"
        )
    try:
        version = Version(ver.strip()) if ver.strip() else None
    except InvalidVersion:
        raise InputError(f"cannot read version {ver!r} in {text!r} (e.g. sglang==0.5.23)") from None
    return EngineSpec(name, version)


@dataclass(frozen=True)
class RowMatch:
    row: Convention
    exact: bool  # False: no row covers the version; the nearest one is used (say so)


def rows_for(spec: EngineSpec, engine_class: str) -> list[RowMatch]:
    """The convention rows for a framework/version and a target's engine class (vLLM: both runners)."""
    cands = [r for r in ROWS if r.framework == spec.framework and r.engine_class in (engine_class, "any")]
    if not cands:
        return []
    version = spec.version or (Version(NEWEST[spec.framework]) if spec.framework in NEWEST else None)
    if version is None:
        return [RowMatch(r, True) for r in cands]
    exact = [r for r in cands if r.covers(version)]
    if exact:
        return [RowMatch(r, True) for r in exact]
    best = min(r.distance(version) for r in cands)
    return [RowMatch(r, False) for r in cands if r.distance(version) == best]


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
            continue  # an empty list means "use the default" in every framework that reads it
        return src.path, tuple(v + src.shift for v in value), row.rule
    return None, _default(row.default, num_layers), row.default_rule


def resolve(row: Convention, config: dict, num_layers: int) -> Resolution:
    """The taps `row`'s framework captures for a drafter with this config.json on an L-layer target."""
    key, ids, rule = _read_ids(row, config, num_layers)
    return _capture(row, key, ids, rule, num_layers)


def resolve_ids(row: Convention, ids: tuple[int, ...], num_layers: int) -> Resolution:
    """As `resolve`, for an id list placed in the row's primary key."""
    if row.rule is Rule.FIXED:
        return _capture(row, None, _default(row.default, num_layers), row.default_rule, num_layers)
    return _capture(row, row.id_sources[0].path, tuple(ids), row.rule, num_layers)


def _capture(
    row: Convention, key: str | None, ids: tuple[int, ...], rule: Rule, num_layers: int
) -> Resolution:
    res = Resolution(row=row, num_layers=num_layers, source_key=key, ids=ids, taps=None)
    where = key or "the default"
    if row.exactly is not None and len(ids) != row.exactly:
        res.failure = f"{row.framework} accepts exactly {row.exactly} ids, {where} lists {len(ids)}"
        return res
    if row.exactly is not None and (len(set(ids)) != len(ids) or min(ids) < 0):
        res.failure = f"{row.framework} requires distinct non-negative ids, {where} lists {list(ids)}"
        return res
    taps = rule.apply(ids)
    if rule is Rule.FIRST_IS_ONE:
        res.notes.append(f"first id is {ids[0]}: {'+1 applied' if ids and ids[0] == 1 else 'taken raw'}")
    top = row.top(num_layers)
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
        res.failure = (
            f"id {v} in {where} maps to {what}, which {row.framework} never captures (capturable: "
            f"h{row.lowest_tap}..h{top}); it gets {len(ids) - len(missing)} of {len(ids)} aux states and the fc "
            f"input width no longer matches"
        )
        return res
    unique = sorted(set(taps))
    if len(unique) < len(taps):
        res.failure = (
            f"ids {list(ids)} in {where} map to repeated taps {list(taps)}: {row.framework} captures each layer "
            f"once, so fc receives {len(unique)} states instead of {len(taps)}"
        )
        return res
    res.taps = Wiring.of(unique if row.sorted_unique else taps)
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
