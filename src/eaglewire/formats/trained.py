"""The taps a drafter was trained on, read from the checkpoint alone: every candidate the evidence leaves, and what
a verdict built on them assumes.

Certain: given by the user (`--trained-on`) or recorded by eaglewire's own trainer. Otherwise the taps are worked
out under every candidate for what the checkpoint does not say: the trainer (every trainer that writes this
format or key, when none is recorded), its version (every version read, when none is given), the numbering of
ids a conversion copied verbatim. The candidates' distinct answers are the `options`; when there is one, the taps
are `known`, with `assumptions` naming what was assumed and the known exception that would break it
(`trainers/exceptions.py`). A class of published heads measured to break the assumption (an `observed`
exception) or nothing to go on leaves them unknown (`blocked`), and `unknown` says what settles it. A missing id
list never silently means "the default": it is a candidate, stated as an assumption.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from packaging.version import Version

from eaglewire.engines import models, table
from eaglewire.errors import InputError
from eaglewire.formats.checkpoint import DrafterCheckpoint
from eaglewire.rules import taps as conv
from eaglewire.rules.taps import Rule
from eaglewire.taps import Wiring
from eaglewire.targets import FAMILIES, GENERIC, TargetInfo
from eaglewire.trainers.exceptions import exceptions_for
from eaglewire.trainers.taps import TRAINERS

# The convention a format's own id list is written in: its primary reader/producer.
NATIVE = {"speculators": "speculators", "modelopt": "modelopt", "eagle": "sglang"}
CONFIDENCE = ("certain", "high", "medium", "low")

SETTLE = "pass --trained-on h<a>,h<b>,... or --trained-with TRAINER==VERSION"
MEASURE = "`eaglewire doctor` on the target (or on a dump of its training data) measures it"
# Trainers that write an EAGLE/SGLang-format checkpoint, by what they leave in it (docs/versions.md 4.8).
NESTED_WRITERS = ("specforge", "modelopt")  # ids in eagle_config, SGLang's numbering
IDLESS_WRITERS = ("specforge", "modelopt", "eagle", "angelslim", "automodel")
ANGELSLIM_KEY = "aux_hidden_states_layer_ids"
MODELOPT_FINGERPRINT = "a modelopt export (eagle_config keys or layers.N.* weights without t2d)"


@dataclass(frozen=True)
class Assumption:
    """A fact a decided verdict rests on, and the known case that would break it (with its source)."""

    fact: str
    exception: str | None = None

    def __str__(self) -> str:
        return self.fact + (f" (breaks if {self.exception})" if self.exception else "")


@dataclass
class TrainedOption:
    """One training wiring the evidence leaves, and the candidates (trainer rows, readings) that give it."""

    wiring: Wiring
    who: list[str]

    def __str__(self) -> str:
        return f"{self.wiring} ({', '.join(self.who)})"


@dataclass
class TrainedTaps:
    wiring: (
        Wiring | None
    )  # the one option, or the best guess when they disagree (the format's engine reading)
    basis: str  # where the answer comes from
    confidence: str  # one of CONFIDENCE (for people); `known` and `options` decide verdicts
    ids: list[int] | None = None
    key: str | None = None
    row: str | None = None
    known: bool = False  # one option, nothing blocking it (assumptions may remain: see `assumptions`)
    unknown: str | None = None  # why not known, and what settles it
    candidates: dict[str, str] = field(default_factory=dict)  # candidate -> the taps it would have captured
    options: list[TrainedOption] = field(default_factory=list)
    assumptions: list[Assumption] = field(default_factory=list)
    blocked: bool = False  # an observed exception, or no candidate at all: no verdict can rest on the options
    final_state: bool = False  # an EAGLE-1-style head (use_aux_hidden_state false, no fc): fed no aux states

    def to_dict(self) -> dict:
        return {
            "taps": str(self.wiring) if self.wiring else None,
            "basis": self.basis,
            "confidence": self.confidence,
            "ids": self.ids,
            "key": self.key,
            "known": self.known,
            "unknown": self.unknown,
            "candidates": self.candidates,
            "options": [{"taps": str(o.wiring), "from": o.who} for o in self.options],
            "assumptions": [str(a) for a in self.assumptions],
            "blocked": self.blocked,
            "final_state": self.final_state,
        }


def target_from_provenance(ckpt: DrafterCheckpoint) -> TargetInfo | None:
    t = ckpt.provenance.target if ckpt.provenance else None
    if not isinstance(t, dict) or not isinstance(t.get("family"), str):
        return None
    family = t["family"] if t["family"] in FAMILIES else GENERIC
    return TargetInfo(
        architecture=t.get("architecture", ""),
        text_architecture=t.get("architecture", ""),
        model_type=t["family"],
        family=family,
        num_layers=int(t["num_layers"]),
        hidden_size=int(t["hidden_size"]),
        vocab_size=int(t["vocab_size"]),
        source="provenance",
        tokenizer_sha256=t.get("tokenizer_sha256"),
    )


def native_row(fmt: str, family: str) -> conv.Convention:
    spec = table.parse_spec(NATIVE[fmt])
    return table.rows_for(spec, family)[0].row


def _taps(res: conv.Resolution) -> str:
    return str(res.taps) if res.taps else f"fails: {res.failure}"


def _group(results: dict[str, Wiring]) -> list[TrainedOption]:
    """Candidates with the same taps (as a set: engines concatenate ascending) become one option."""
    out: list[TrainedOption] = []
    for who, w in results.items():
        same = next((o for o in out if o.wiring.same_set(w)), None)
        if same is None:
            out.append(TrainedOption(w.served(), [who]))
        else:
            same.who.append(who)
    return out


def _spread(options: list[TrainedOption]) -> str:
    return "; ".join(f"{', '.join(o.who)} would give {o.wiring}" for o in options)


def _result(
    options: list[TrainedOption],
    basis: str,
    *,
    best: Wiring | None = None,
    assumptions: list[Assumption] | None = None,
    blocked: str | None = None,
    undecided: str | None = None,
    certain: bool = False,
    **extra,
) -> TrainedTaps:
    """One TrainedTaps from its options: known when there is one and nothing blocks it."""
    known = blocked is None and len(options) == 1
    wiring = options[0].wiring if len(options) == 1 else best
    assumptions = list(assumptions or [])
    confidence = ("certain" if certain else "medium" if assumptions else "high") if known else "low"
    unknown = blocked if blocked is not None else None if known else undecided
    if unknown is None and not known:
        unknown = f"no candidate for the training taps; {SETTLE}"
    return TrainedTaps(wiring, basis, confidence, known=known, unknown=unknown, options=options,
                       assumptions=assumptions, blocked=blocked is not None or not options, **extra)  # fmt: skip


def trained_taps(
    ckpt: DrafterCheckpoint,
    target: TargetInfo,
    trained_on: Wiring | None = None,
    trained_with: str | None = None,
) -> TrainedTaps:
    """The training taps: given, recorded, or worked out under every candidate the checkpoint leaves."""
    L = target.num_layers
    if trained_on is not None:
        w = trained_on.validate(L).served()
        return _result([TrainedOption(w, ["--trained-on"])], "--trained-on", certain=True)
    if trained_with is not None:
        spec = table.parse_spec(trained_with)
        if spec.framework not in TRAINERS:
            raise InputError(
                f"--trained-with {trained_with}: not a trainer eaglewire knows ({', '.join(TRAINERS)})"
            )
        return from_trainer(ckpt, target, spec, f"--trained-with {trained_with}")
    prov = ckpt.provenance
    if prov and prov.taps:
        return _from_provenance(prov, L)
    for name, cfg in ckpt.configs.items():
        if name != "config.json" and cfg.get("speculators_model_type") == "eagle3":
            spec = table.parse_spec(_speculators_spec(cfg))
            where = f"{name} (the speculators training config in the folder)"
            return from_trainer(ckpt, target, spec, where, cfg, recorded=True)
    if ckpt.format == "speculators":
        spec = table.parse_spec(_speculators_spec(ckpt.config))
        where = "speculators format (written by the speculators library)"
        return from_trainer(ckpt, target, spec, where, recorded=True)
    if ckpt.format == "modelopt":
        return from_trainer(ckpt, target, table.parse_spec("modelopt"), "modelopt export", fingerprint=True)
    return _writer_unknown(ckpt, target)


def _speculators_spec(cfg: dict) -> str:
    version = cfg.get("speculators_version")
    return f"speculators=={version}" if isinstance(version, str) and version.strip() else "speculators"


def _from_provenance(prov, L: int) -> TrainedTaps:
    taps = Wiring.parse(prov.taps).validate(L).served()
    writer = prov.written_by or "eaglewire"
    option = [TrainedOption(taps, [f"eaglewire provenance ({writer})"])]
    if prov.taps_known is None and writer.startswith("eaglewire train"):
        return _result(option, "eaglewire provenance (recorded by the trainer)", certain=True)
    if prov.taps_known is True:
        basis = f"eaglewire provenance ({writer}, from {prov.taps_basis or 'a known record'})"
        carried = [Assumption(str(a)) for a in prov.taps_assumptions or [] if isinstance(a, str)]
        return _result(option, basis, assumptions=carried)
    basis = f"eaglewire provenance ({writer}, from {prov.taps_basis or 'an unrecorded basis'})"
    return _result(option, basis, blocked=f"{writer} recorded inferred taps; {SETTLE}")


def _prerelease_rows(
    spec: conv.EngineSpec, target: TargetInfo, cfg: dict, matches: list[conv.RowMatch]
) -> list[conv.RowMatch] | None:
    """A pre-release no row covers (speculators 0.5.0.dev163, which RedHatAI's heads carry) runs code of the release
    line before it or of the release it leads to: both rows are candidates, and a config with ids rules out a row
    that never writes them. None where the version is not such a pre-release."""
    if spec.version is None or not matches or not matches[0].assumed:
        return None
    v = Version(str(spec.version))
    if not (v.is_prerelease or v.is_devrelease):
        return None
    base = [m for m in table.rows_for(conv.EngineSpec(spec.framework, Version(v.base_version)), target.family)
            if m.row.role == "train" and not m.assumed]  # fmt: skip
    if not base:
        return None
    rows = {m.row.key: replace(m, exact=True, verified=True) for m in [*matches, *base]}
    has_ids = any(conv.resolve(m.row, cfg, target.num_layers).source_key is not None for m in rows.values())
    writing = [m for m in rows.values() if m.row.records_ids or not has_ids]
    return writing or list(rows.values())


def _trainer_assumptions(
    framework: str, rows: list[conv.Convention], has_ids: bool, taps: Wiring
) -> tuple[list[Assumption], str | None]:
    """What a verdict on this trainer's taps assumes, and an observed exception that blocks it (if any). A
    trainer row that never writes the ids it trained on makes "no ids" an assumption: its default."""
    found = exceptions_for([framework], has_ids)
    blocked = next((str(e) for e in found if e.observed), None)
    silent = [r.key for r in rows if not r.records_ids]
    if has_ids or not silent:
        return [], blocked
    caveats = " or ".join(str(e) for e in found if not e.observed) or "the run used other ids"
    fact = (
        f"trained with {framework}'s default ids ({taps}): {', '.join(silent)} never write the ids they used"
    )
    return [Assumption(fact, caveats)], blocked


def from_trainer(
    ckpt: DrafterCheckpoint,
    target: TargetInfo,
    spec: conv.EngineSpec,
    basis: str,
    cfg: dict | None = None,
    *,
    recorded: bool = False,
    fingerprint: bool = False,
) -> TrainedTaps:
    """The taps `spec`'s trainer captured for the ids in `cfg` (default: config.json). With a version: the row
    read at that version (unknown if nobody read it). Without: every row of that trainer, each a candidate.
    `recorded`: the trainer comes from its own record in the folder (not from the user); `fingerprint`: it is
    inferred from the format alone."""
    cfg = ckpt.config if cfg is None else cfg
    L = target.num_layers
    if spec.version is not None:
        matches = [m for m in table.rows_for(spec, target.family) if m.row.role == "train"]
    else:
        model, known_model = models.model_file(spec.framework, target.family)
        matches = [
            conv.RowMatch(r, True, True, model, known_model)
            for r in table.ROWS
            if r.framework == spec.framework and r.role == "train" and r.covers_model(model)
        ]
    if not matches:
        raise InputError(f"{basis}: no convention row for {spec} on a {target.family} target")
    around = _prerelease_rows(spec, target, cfg, matches)
    matches = around or matches
    if all(m.row.rule is Rule.UNSUPPORTED for m in matches):
        return _conversion(ckpt, target, cfg, basis, matches[0].row)
    matches = [m for m in matches if m.row.rule is not Rule.UNSUPPORTED]
    results = {m.row.key: conv.resolve(m.row, cfg, L) for m in matches}
    first = matches[0]
    res = results[first.row.key]
    extra = {"ids": list(res.ids or []), "key": res.source_key, "row": first.row.key,
             "candidates": {k: _taps(r) for k, r in results.items()}}  # fmt: skip
    if spec.version is not None and first.assumed and not around:
        why = (f"{spec} is not a version whose source was read (row {first.row.key}, read at "
               f"{', '.join(first.row.checked)}); pass --trained-on if you know the taps")  # fmt: skip
        return _result([], basis, best=res.taps, blocked=why, **extra)
    ok = {k: r.taps for k, r in results.items() if r.ok and r.taps is not None}
    if not ok:
        why = f"{spec.framework} could not have captured these ids ({res.failure}); {SETTLE}"
        return _result([], f"{basis}: {res.failure}", blocked=why, **extra)
    options = _group(ok)
    has_ids = any(r.source_key is not None for r in results.values())
    rows = [m.row for m in matches if m.row.key in ok]
    assumptions, blocked = _trainer_assumptions(spec.framework, rows, has_ids, options[0].wiring)
    if blocked is not None:
        blocked = (
            f"a known exception applies, {blocked}: the training taps are unknown; pass --trained-on "
            f"h<a>,h<b>,... if you know them, or {MEASURE}"
        )
    if fingerprint:
        assumptions.insert(
            0, Assumption(f"trained by {spec.framework}: the checkpoint is {MODELOPT_FINGERPRINT}")
        )
    if around:
        assumptions.insert(0, Assumption(
            f"{spec} is a pre-release between the releases read: trained as one of the rows around it "
            f"({', '.join(m.row.key for m in matches)})", "a pre-release with code of neither"))  # fmt: skip
    ids = extra["ids"]
    undecided = None
    if len(options) > 1:
        undecided = (f"the {spec.framework} version decides the taps ({_spread(options)}); pass --trained-with "
                     f"{spec.framework}==X or --trained-on")  # fmt: skip
    if (
        spec.framework == "speculators"
        and recorded
        and ids
        and sorted(ids) == sorted(conv._default("1,L//2-1,L-4", L))
    ):
        lifted = _wiring((v + 1 for v in ids), L) or options[0].wiring
        options.append(TrainedOption(lifted.served(), ["converted from an output-of-layer trainer"]))
        undecided = (
            f"ids {ids} are the output-of-layer default of SpecForge/modelopt/AngelSlim ([1, L//2-1, L-4]), not "
            "speculators' ([2, L//2, L-3]): a `speculators convert` output copies ids verbatim, so if this was "
            f"converted from such a drafter it was trained one tap higher ({lifted}); {SETTLE}, or {MEASURE}"
        )
    if res.source_key is None:
        basis += " (no ids: the trainer's default)"
    return _result(options, basis, best=res.taps, assumptions=assumptions, blocked=blocked,
                   undecided=undecided, **extra)  # fmt: skip


def _wiring(indices, L: int) -> Wiring | None:
    """The wiring of these indices, or None where none exists on an L-layer target (empty, out of range, or
    a repeated tap): a reading that gives no wiring is no candidate."""
    ids = [int(i) for i in indices]
    if not ids or any(not 0 <= i <= L for i in ids) or len(set(ids)) != len(ids):
        return None
    return Wiring.of(ids)


def _conversion(ckpt: DrafterCheckpoint, target: TargetInfo, cfg: dict, basis: str, row) -> TrainedTaps:
    """A speculators < 0.3 checkpoint: that version had no trainer, so it is a conversion whose ids were copied
    verbatim from whatever the source's trainer used, in that trainer's numbering."""
    L = target.num_layers
    ids = conv.get_path(cfg, "eagle_aux_hidden_state_layer_ids")
    why = row.unsupported or "a conversion"
    if isinstance(ids, list) and ids and all(isinstance(v, int) and not isinstance(v, bool) for v in ids):
        readings = {
            "ids as HF hidden-state indices (the engines' numbering)": _wiring(ids, L),
            "ids in output-of-layer numbering (SpecForge, modelopt, AngelSlim)": _wiring(
                (v + 1 for v in ids), L
            ),
        }
        options = _group({k: w for k, w in readings.items() if w is not None})
        undecided = (
            f"{why}; the source's numbering decides the taps ({_spread(options)}); {SETTLE}, or {MEASURE}"
        )
        return _result(options, f"{basis}: {why}", ids=list(ids), key="eagle_aux_hidden_state_layer_ids",
                       row=row.key, undecided=undecided)  # fmt: skip
    default = _wiring(conv._default("2,L//2,L-3", L), L)
    if default is None:
        return _result([], f"{basis}: {why}", row=row.key, undecided=f"{why}; {SETTLE}")
    fact = f"converted without ids from a drafter trained on the default taps {default} ({why})"
    return _result([TrainedOption(default, ["every trainer's default"])], f"{basis}: {why}", row=row.key,
                   assumptions=[Assumption(fact, "the source drafter was trained on other ids")])  # fmt: skip


def _writer_unknown(ckpt: DrafterCheckpoint, target: TargetInfo) -> TrainedTaps:
    """An EAGLE/SGLang-format checkpoint with no record of its trainer: the taps each trainer that writes this
    format (or this key) would have captured for its ids are the candidates; the answer is known when they agree."""
    L = target.num_layers
    cfg = ckpt.config
    nested = conv.get_path(cfg, "eagle_config.eagle_aux_hidden_state_layer_ids")
    top = conv.get_path(cfg, "eagle_aux_hidden_state_layer_ids")
    angel = cfg.get(ANGELSLIM_KEY)
    if not nested and top:
        return _top_only(ckpt, target, top)
    if nested:
        writers, what = NESTED_WRITERS, "eagle_config ids"
    elif angel:
        writers, what = ("angelslim",), f"{ANGELSLIM_KEY} (AngelSlim's key)"
    else:
        writers, what = IDLESS_WRITERS, "this format without ids"
    results: dict[str, conv.Resolution] = {}
    frameworks: dict[str, str] = {}
    for trainer in writers:
        model, _ = models.model_file(trainer, target.family)
        for r in table.ROWS:
            if r.framework != trainer or r.role != "train" or not r.covers_model(model):
                continue
            if r.rule is Rule.UNSUPPORTED or (nested and r.rule is Rule.FIXED):
                continue  # a trainer that never reads ids did not write these
            results[r.key] = conv.resolve(r, cfg, L)
            frameworks[r.key] = r.framework
    candidates = {k: _taps(r) for k, r in results.items()}
    sglang = conv.resolve(native_row("eagle", target.family), cfg, L)
    has_ids = bool(nested or angel)
    listed = list(nested or angel or [])
    extra = {"ids": listed or None, "candidates": candidates}
    basis = (
        "eagle_config ids read the way SGLang (this format's engine) reads them"
        if nested
        else (
            "no ids and no trainer record in the checkpoint" if not has_ids else f"{what}, no trainer record"
        )
    )
    ok = {k: r.taps for k, r in results.items() if r.ok and r.taps is not None}
    assumptions: list[Assumption] = []
    raw = _wiring(nested, L) if nested and max(nested) == L else None
    if not ok and raw is not None:
        # only HF-index numbering reaches id L (the last layer's output): SGLang reads gpt-oss lists this way
        ok = {"ids as HF hidden-state indices (id L exists only in that numbering)": raw}
        assumptions.append(Assumption(
            f"ids {nested} are HF hidden-state indices: no trainer that writes eagle_config in SGLang's numbering "
            f"can reach id {L} = L (sglang PR #32334 reads such lists the same way)"))  # fmt: skip
    if not ok:
        why = (
            f"no trainer that writes {what} could have captured these ids ({_spread_res(results)}); {SETTLE}"
        )
        return _result([], basis, best=sglang.taps, blocked=why, **extra)
    options = _group(ok)
    names = sorted({frameworks[k] for k in ok if k in frameworks})
    found = exceptions_for([*names, "unknown"], has_ids)
    caveats = " or ".join(str(e) for e in found) or None
    if names:
        fact = (f"no trainer recorded: every trainer that writes {what} ({', '.join(names)}) would have captured "
                f"{options[0].wiring}" + ("" if has_ids else " (its default)"))  # fmt: skip
        assumptions.insert(0, Assumption(fact, caveats))
    undecided = f"no trainer recorded: the ids' convention is the trainer's ({_spread(options)}); {SETTLE}, or {MEASURE}"
    if not has_ids:
        undecided = (
            f"the checkpoint records no layer ids and no trainer ({_spread(options)}); {SETTLE}, or {MEASURE}"
        )
    best = sglang.taps if has_ids else None
    return _result(options, basis, best=best, assumptions=assumptions, undecided=undecided, **extra)


def _spread_res(results: dict[str, conv.Resolution]) -> str:
    return "; ".join(f"{k}: {_taps(r)}" for k, r in results.items()) or "no trainer row applies"


def _top_only(ckpt: DrafterCheckpoint, target: TargetInfo, top) -> TrainedTaps:
    """EAGLE format with only the top-level ids (vLLM's key): written for vLLM (HF indices), or another trainer's
    numbering lifted there (as nm-testing's conversions lifted SpecForge's)."""
    L = target.num_layers
    vllm = conv.resolve(table.rows_for(table.parse_spec("vllm"), target.family)[0].row, ckpt.config, L)
    ids = [v for v in top if isinstance(v, int) and not isinstance(v, bool)]
    readings = {
        "ids written for vLLM's top-level key (HF indices)": _wiring(ids, L),
        "SpecForge/modelopt numbering lifted to the top level": _wiring((v + 1 for v in ids), L),
    }
    options = _group({k: w for k, w in readings.items() if w is not None})
    undecided = (f"no trainer recorded and only vLLM's top-level ids: their numbering is the writer's "
                 f"({_spread(options)}); {SETTLE}")  # fmt: skip
    basis = "top-level ids read the way vLLM (the only engine that reads them) reads them"
    assumed = [
        Assumption(
            f"no trainer recorded: of the numberings of vLLM's top-level ids only {', '.join(options[0].who)} "
            f"fits this target ({options[0].wiring})",
            "the writer used a numbering eaglewire does not know",
        )
    ] if len(options) == 1 else []  # fmt: skip
    return _result(options, basis, best=vllm.taps, undecided=undecided, ids=list(top), assumptions=assumed)
