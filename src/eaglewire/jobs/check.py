"""The static wiring check: which taps each engine will feed a drafter, against the taps it was trained on.

Configs only, no weights needed beyond the drafter's own (shapes are checked when present). The verdict per
engine is worked out under every candidate for what is not known: the trainer and its version
(`formats/trained.py`), and for vLLM the model runner, which the platform picks (`engines/runners.py`).
When every candidate gives the same verdict it is decided: "ok", "mismatch" (fed other taps than trained) or
"fails" (the engine crashes, drops a state, or mis-loads the checkpoint), with `assumptions` naming what was
assumed and the known exception that would break it. "unverified" only where the candidates disagree, a known
exception class applies, or a fact has no candidates (an engine version nobody read, a family not in the
table): the report says what settles it. `strict` turns every assumption into "unverified". A mismatch comes
with the exact config value that fixes it, or the reason no value can.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from eaglewire.engines import registries, runners, table
from eaglewire.engines.runners import check_choice
from eaglewire.engines.serving import serving_failure
from eaglewire.engines.structure import config_check
from eaglewire.errors import InputError
from eaglewire.formats import DrafterCheckpoint, read_drafter, write_drafter
from eaglewire.formats.checkpoint import PROVENANCE_KEY
from eaglewire.formats.trained import Assumption, TrainedTaps, target_from_provenance, trained_taps
from eaglewire.formats.vocab import VocabReport, checkpoint_vocab_report
from eaglewire.jobs.coverage import (
    GenericRun,
    evidence,
    executed_at,
    generic_not_run,
    generic_run,
    inside_loop,
)
from eaglewire.jobs.structure import findings_for
from eaglewire.jsonio import str_list
from eaglewire.rules import taps as conv
from eaglewire.rules.row import LEVELS
from eaglewire.rules.serving import STAGES, ServingFailure
from eaglewire.taps import Wiring
from eaglewire.targets import GENERIC, TargetInfo, read_target


@dataclass
class Finding:
    severity: str  # "problem" | "warning" | "info"
    code: str
    message: str
    engine: str | None = None
    # what an engine row's finding rests on (rules.structure.StructureRule.evidence); None for the others
    evidence: dict[str, str] | None = None

    def to_dict(self) -> dict:
        return {k: v for k, v in asdict(self).items() if k != "evidence" or v is not None}


SETTLE_RUNNER = "pass --platform cpu|cuda or --runner " + "|".join(runners.RUNNERS)
SETTLE_PLATFORM = "pass --platform cpu|cuda"
STRICT_SETTLE = (
    "give the fact (--trained-on or --trained-with, --platform or --runner), or measure it with `eaglewire doctor` "
    "on the target"
)


@dataclass
class Alternative:
    """Another row the same engine version runs the target with (vLLM's other model runner; SGLang's row on a CPU,
    where its CUDA graphs are not taken): when it does, what it feeds, and the verdict there."""

    engine: str  # e.g. "vllm==0.33.0 v1"
    row_key: str
    when: str
    served: conv.Resolution
    status: str
    findings: list[Finding] = field(default_factory=list)
    fix: conv.ConfigFix | None = None


@dataclass
class EngineVerdict:
    engine: str  # label: framework==version, and the runner of the row (vLLM)
    row_key: str
    exact_version: bool
    reads: str  # the config file the engine reads
    served: conv.Resolution
    status: str  # "ok" | "mismatch" | "fails" | "unverified"
    fix: conv.ConfigFix | None = None
    findings: list[Finding] = field(default_factory=list)
    unknowns: list[str] = field(default_factory=list)  # what is not known, each with what would settle it
    verified_version: bool = True  # the engine version lies where the row was read at source
    assumptions: list[str] = field(default_factory=list)  # what a decided verdict assumed, and what breaks it
    runner: str | None = None  # which runner, and why (vLLM)
    alternatives: list[Alternative] = field(default_factory=list)
    outcomes: dict[str, str] = field(
        default_factory=dict
    )  # each training-taps option -> the verdict under it
    evidence: dict[str, str] = field(
        default_factory=dict
    )  # level and basis of the served-taps fact (coverage)

    @property
    def problem(self) -> bool:
        return self.status in ("mismatch", "fails") or any(f.severity == "problem" for f in self.findings)

    def to_dict(self) -> dict:
        s = self.served
        return {
            "engine": self.engine,
            "row": self.row_key,
            "exact_version_row": self.exact_version,
            "reads": self.reads,
            "source_key": s.source_key or "(default)",
            "ids": list(s.ids) if s.ids is not None else None,
            "served_taps": str(s.taps) if s.taps else None,
            "failure": s.failure,
            "failure_stage": s.stage,
            "status": self.status,
            "fix": _fix_dict(self.fix),
            "findings": [f.to_dict() for f in self.findings],
            "unknowns": self.unknowns,
            "assumptions": self.assumptions,
            "runner": self.runner,
            "outcomes": self.outcomes,
            "alternatives": [
                {
                    "engine": a.engine,
                    "row": a.row_key,
                    "when": a.when,
                    "served_taps": str(a.served.taps) if a.served.taps else None,
                    "failure": a.served.failure,
                    "status": a.status,
                    "fix": _fix_dict(a.fix),
                }
                for a in self.alternatives
            ],
            "verified_version": self.verified_version,
            "source": self.served.row.source,
            "evidence": self.evidence,
        }


def _fix_dict(fix: conv.ConfigFix | None) -> dict | None:
    if fix is None:
        return None
    return {"key": fix.key, "value": fix.value, "expressible": fix.expressible, "reason": fix.reason,
            "notes": fix.notes}  # fmt: skip


@dataclass
class CheckReport:
    drafter: str
    format: str
    target: TargetInfo
    trained: TrainedTaps
    verdicts: list[EngineVerdict]
    findings: list[Finding]
    vocab: VocabReport | None
    config_files: dict[str, str]  # file -> who reads it
    fixed_copy: Path | None = None  # where `--fix-into` wrote the fixed drafter
    strict: bool = False  # every assumption counted as unverified

    @property
    def has_problem(self) -> bool:
        return any(v.problem for v in self.verdicts) or any(f.severity == "problem" for f in self.findings)

    @property
    def unverified(self) -> bool:
        """No problem found, but not every fact is known: not `ok`."""
        return not self.has_problem and any(v.status == "unverified" for v in self.verdicts)

    @property
    def verdict(self) -> str:
        return "problem" if self.has_problem else "unverified" if self.unverified else "ok"

    @property
    def unknowns(self) -> list[str]:
        """What keeps a verdict `unverified`, each with what settles it."""
        return list(dict.fromkeys(u for v in self.verdicts for u in v.unknowns))

    @property
    def assumptions(self) -> list[str]:
        """What the decided verdicts assumed, each with the known exception that would break it (the training
        assumptions once, an engine's own with its name)."""
        common = {str(a) for a in self.trained.assumptions}
        return list(
            dict.fromkeys(
                a if a in common else f"[{v.engine}] {a}" for v in self.verdicts for a in v.assumptions
            )
        )

    def to_dict(self) -> dict:
        return {
            "drafter": self.drafter,
            "format": self.format,
            "target": self.target.identity() | {"source": self.target.source},
            "trained": self.trained.to_dict(),
            "engines": [v.to_dict() for v in self.verdicts],
            "findings": [f.to_dict() for f in self.findings],
            "vocab": None
            if self.vocab is None
            else {"ok": self.vocab.ok, "findings": [asdict(f) for f in self.vocab.findings]},
            "config_files": self.config_files,
            "status": self.verdict,
            "unknowns": self.unknowns,
            "assumptions": self.assumptions,
            "strict": self.strict,
        } | ({"fixed_copy": str(self.fixed_copy)} if self.fixed_copy is not None else {})


def engine_findings(
    ckpt: DrafterCheckpoint,
    target: TargetInfo,
    spec: conv.EngineSpec,
    row: conv.Convention,
    served: conv.Resolution,
) -> list[Finding]:
    """What else about this engine version silently changes the drafter's numbers or stops it loading
    (`structure.RULES`, one rule per behaviour and version range)."""
    return [
        Finding(sev, code, msg, spec.framework, evidence)
        for sev, code, msg, evidence in findings_for(ckpt, target, spec, row, served)
    ]


def _id_lists_disagree(ckpt: DrafterCheckpoint, target: TargetInfo) -> Finding | None:
    """An EAGLE-format config with both lists: SGLang reads the nested one (+1), vLLM the top-level one (raw).
    Written by one hand they name the same taps; when they do not, at most one engine is fed the training taps."""
    if ckpt.format != "eagle":
        return None
    nested = conv.get_path(ckpt.config, "eagle_config.eagle_aux_hidden_state_layer_ids")
    top = conv.get_path(ckpt.config, "eagle_aux_hidden_state_layer_ids")
    if not (isinstance(nested, list) and nested and isinstance(top, list) and top):
        return None
    L = target.num_layers
    sg = conv.resolve(table.rows_for(table.parse_spec("sglang"), target.family)[0].row, ckpt.config, L)
    vl = conv.resolve(table.rows_for(table.parse_spec("vllm"), target.family)[0].row, ckpt.config, L)
    if sg.taps is not None and vl.taps is not None and sg.taps != vl.taps:
        return Finding(
            "warning",
            "id-lists-disagree",
            f"eagle_config ids {nested} feed SGLang {sg.taps}, the top-level ids {top} feed vLLM {vl.taps}: at most "
            "one of them is what the drafter was trained on",
        )
    return None


def general_findings(ckpt: DrafterCheckpoint, target: TargetInfo) -> list[Finding]:
    out: list[Finding] = []
    disagree = _id_lists_disagree(ckpt, target)
    if disagree is not None:
        out.append(disagree)
    arch = ckpt.arch
    if arch is not None:
        if arch.vocab_size != target.vocab_size:
            out.append(
                Finding(
                    "problem",
                    "vocab-size",
                    f"drafter vocab_size {arch.vocab_size} != target vocab "
                    f"{target.vocab_size}: it was built for another tokenizer",
                )
            )
        if arch.target_hidden_size != target.hidden_size:
            out.append(
                Finding(
                    "problem",
                    "target-hidden",
                    f"drafter target_hidden_size {arch.target_hidden_size} != "
                    f"target hidden_size {target.hidden_size}",
                )
            )
    prov = ckpt.provenance.target if ckpt.provenance else None
    if isinstance(prov, dict) and target.source != "provenance":
        for key in ("num_layers", "hidden_size", "vocab_size"):
            if prov.get(key) is not None and prov[key] != getattr(target, key):
                out.append(
                    Finding(
                        "problem",
                        "target-identity",
                        f"drafter was trained on a target with {key}={prov[key]}, this target has "
                        f"{getattr(target, key)}",
                    )
                )
        if (
            prov.get("tokenizer_sha256")
            and target.tokenizer_sha256
            and prov["tokenizer_sha256"] != target.tokenizer_sha256
        ):
            out.append(
                Finding(
                    "problem",
                    "tokenizer",
                    "drafter was trained with another tokenizer (tokenizer.json hash differs)",
                )
            )
    if not ckpt.has_weights:
        out.append(
            Finding(
                "info",
                "config-only",
                "no weights in the folder: configs checked alone (fc width and vocab maps not verified)",
            )
        )
    for note in ckpt.notes:
        out.append(Finding("info", "note", note))
    return out


def check(
    drafter: Path | str | DrafterCheckpoint,
    target: Path | str | TargetInfo | None,
    engines: list[str],
    trained_on: Wiring | None = None,
    trained_with: str | None = None,
    *,
    platform: str | None = None,
    runner: str | None = None,
    strict: bool = False,
) -> CheckReport:
    """The verdict per engine (`--engine` specs), worked out under every candidate fact (module docstring)."""
    ckpt = drafter if isinstance(drafter, DrafterCheckpoint) else read_drafter(drafter, weights="lazy")
    if isinstance(target, TargetInfo):
        tinfo = target
    elif target is not None:
        tinfo = read_target(target)
    else:
        tinfo = target_from_provenance(ckpt)
        if tinfo is None:
            raise InputError(f"{ckpt.where()}: no provenance names the target; pass --target CONFIG_OR_DIR")
    check_choice(platform, runner)
    trained = trained_taps(ckpt, tinfo, trained_on, trained_with)
    if _eagle1_head(ckpt) and trained_on is None:  # trained on the final state: no aux states, no taps
        trained = TrainedTaps(None, EAGLE1_TRAINED, "high", known=True, final_state=True)
    verdicts: list[EngineVerdict] = []
    for text in engines:
        spec = table.parse_spec(text)
        if spec.framework not in table.ENGINES:
            raise InputError(f"--engine {text}: not a serving engine (use sglang==X or vllm==X)")
        choices = runners.select_rows(
            spec, tinfo.family, platform, runner if spec.framework == "vllm" else None,
            architecture=tinfo.architecture, model_type=tinfo.model_type,
        )  # fmt: skip
        if not choices:
            raise InputError(f"--engine {text}: no convention row for a {tinfo.family} target")
        eagle1 = _eagle1_head(ckpt)
        refused = (
            None
            if eagle1
            else registries.refusal(spec.framework, spec.version, tinfo.architecture, tinfo.model_type)
        )
        version = spec.version or table.NEWEST.get(spec.framework)
        cannot = on_cpu = None
        if refused is None and version is not None and not eagle1:
            archs = tuple(str_list(ckpt.config, "architectures", ckpt.where()))
            quant = tinfo.quantization
            cannot = serving_failure(
                spec.framework, version, platform, tinfo.family, tinfo.config, archs, quant
            )
            if platform is None:  # the verdict assumes a GPU: what the CPU build does instead, where known
                on_cpu = serving_failure(
                    spec.framework, version, "cpu", tinfo.family, tinfo.config, archs, quant
                )
                on_cpu = on_cpu if on_cpu is not None and on_cpu.platform == "cpu" else None
        for choice in choices:
            choice = choice if refused is not None else _fitted(choice, spec, tinfo, ckpt)
            m = choice.match
            if refused is not None:
                v = _refused(spec, m, tinfo, refused)
            else:
                v = _verdict(ckpt, tinfo, spec, choice, trained, strict, platform)
                if cannot is not None and _earlier(cannot.stage, v.served):  # what the engine meets first
                    v = _config_refusal(v, cannot, str(version)) or _cannot_serve(
                        spec, m, tinfo, cannot, str(version)
                    )
            if on_cpu is not None and v.status != "fails":
                said = (f"platform not given: not the CPU, where {spec.framework} {version} cannot serve this pair "
                        f"(fails at {on_cpu.stage}: `{on_cpu.words}`; {on_cpu.evidence(str(version))}); --platform "
                        "settles it")  # fmt: skip
                if strict and v.status != "unverified":
                    v.status = "unverified"
                    v.unknowns.append(f"--strict: assumed {said}; {STRICT_SETTLE}")
                elif not strict:
                    v.assumptions.append(said)
            # an architecture the table does not list, served by capture code whose taps are known
            if m.basis and m.model_known:
                v.findings.append(Finding("info", "engine-registry", m.basis, spec.framework))
            v.evidence = (
                evidence(
                    spec.framework,
                    str(version),
                    tinfo.family,
                    platform,
                    v.verified_version and m.exact,
                    _settling(_generic(spec, m, tinfo, platform), v.served, tinfo),
                    tinfo.architecture,
                    m.row.key,
                )
                if version is not None
                else {
                    "level": "read",
                    "basis": f"read at source ({spec.framework} {', '.join(m.row.checked)})",
                }
            )
            v.evidence = _decided_by(v) or v.evidence
            verdicts.append(v)
    vrep = None
    if ckpt.arch is not None and ckpt.has_weights:
        vrep = checkpoint_vocab_report(ckpt)
    findings = general_findings(ckpt, tinfo)
    if vrep is not None:
        findings += [Finding(f.severity, f.code, f.message) for f in vrep.findings]
    files = {"config.json": "SGLang and vLLM read this file"}
    for name in ckpt.configs:
        if name != "config.json":
            files[name] = "no engine reads this file (a training record)"
    return CheckReport(
        str(ckpt.path or drafter), ckpt.format, tinfo, trained, verdicts, findings, vrep, files, strict=strict
    )


# what an EAGLE-1-style head (use_aux_hidden_state false, no fc) is fed: the served-taps column's words
FINAL_STATE_FED = "the final state"
EAGLE1_TRAINED = (
    "eagle_config.use_aux_hidden_state false and no fc: an EAGLE-1-style head, trained on the final state"
)
AUX_FED = "aux states (flag ignored)"


def _eagle1_head(ckpt: DrafterCheckpoint) -> bool:
    """An EAGLE-1-style head (no aux hidden states): the engine's EAGLE-3 interface does not apply to it."""
    ec = ckpt.config.get("eagle_config")
    return (
        isinstance(ec, dict)
        and ec.get("use_aux_hidden_state") is False
        and ckpt.tensors.get("fc.weight") is None
    )


def _refused(
    spec: conv.EngineSpec, m: conv.RowMatch, tinfo: TargetInfo, refused: registries.Served
) -> EngineVerdict:
    """The engine's own registry refuses EAGLE-3 for this architecture at this release: `fails`, whatever the
    drafter says (the release was read; the message names its supported list and the wheel's source)."""
    failure = f"{refused.reason} [{refused.source}]"
    row = replace(
        m.row, source=f"{spec.framework} {refused.version} {refused.source}"
    )  # the fact's own source
    served = conv.Resolution(row, tinfo.num_layers, None, None, None, failure=failure)
    name = f"{spec.framework}=={refused.version}" + (f" {m.row.runner}" if m.row.runner else "")
    return EngineVerdict(name, m.row.key, m.exact, "config.json", served, "fails", None, [], [], True)


def _earlier(stage: str, served: conv.Resolution) -> bool:
    """A serving failure at `stage` comes before the served taps' own failure (none: it always does; the same
    stage: the taps' failure is what the engine met, e.g. the fc width at the first request)."""
    if served.failure is None:
        return True
    own = served.stage if served.stage in STAGES else STAGES[-1]
    return STAGES.index(stage) < STAGES.index(own)


def _decided_by(v: EngineVerdict) -> dict[str, str] | None:
    """The evidence of a verdict that fails by a structure row, whatever the taps: the row's own, not the capture
    record's (the MRV2 runner ignoring use_aux_hidden_state is read at source even where the taps of that release
    were observed). Of several such rows, each decides alone: the strongest evidence is the verdict's."""
    if v.status != "fails":
        return None
    rows = [f for f in v.findings if f.severity == "problem" and f.evidence is not None]
    if v.served.failure is not None:  # the verdict fails at the capture or launch unless a row put it there
        rows = [f for f in rows if f.message == v.served.failure]
    if not rows:
        return None
    f = min(rows, key=lambda f: LEVELS.index(f.evidence["level"]))
    taps = f"; the taps: {v.evidence['basis']}" if v.evidence else ""
    return {
        "level": f.evidence["level"],
        "basis": f"{f.code}, which decides it: {f.evidence['basis']}{taps}",
        "decided_by": f.code,
    }


def _config_refusal(v: EngineVerdict, cannot: ServingFailure, version: str) -> EngineVerdict | None:
    """The verdict failing at load by the drafter's own config (a structure row the engine meets when it builds its
    speculative config: CONFIG_CHECK), which comes before any platform failure at load: that failure is the one the
    engine names; the platform's is added, as what the drafter meets once its config is fixed. None otherwise."""
    first = next((f for f in v.findings if config_check(f.code, version) and f.severity == "problem"), None)
    if first is None or cannot.stage != "load" or v.served.failure is not None:
        return None
    v.served = replace(v.served, taps=None, failure=first.message, stage="load")
    v.findings.append(
        Finding("problem", "platform", f"once the drafter loads: {cannot.failure(version)}", v.engine)
    )
    return v


def _cannot_serve(
    spec: conv.EngineSpec, m: conv.RowMatch, tinfo: TargetInfo, row: ServingFailure, version: str
) -> EngineVerdict:
    """The release, on this platform, cannot serve an EAGLE-3 drafter beside this target at all (a running engine
    showed it, or the release's source where no run did: engines/<engine>/serving.py): `fails` at the engine's
    stage, whatever the ids say."""
    tap_row = replace(m.row, source=f"{row.source}; {row.evidence(version)}")
    served = conv.Resolution(tap_row, tinfo.num_layers, None, None, None, failure=row.failure(version),
                             stage=row.stage)  # fmt: skip
    name = f"{spec.framework}=={version}" + (f" {m.row.runner}" if m.row.runner else "")
    return EngineVerdict(name, m.row.key, m.exact, "config.json", served, "fails", None, [], [], True)


def _settling(run: GenericRun | None, served: conv.Resolution, target: TargetInfo) -> GenericRun | None:
    """The model-code run of a target the table does not list, where it decides what these served ids get: the row
    serving them is one its every case fits (`_fitted`), or the run settles the generic row's answer."""
    if run is None:
        return None
    key, L = served.row.key, target.num_layers
    fitted = key in run.fits or (key in run.fits_inside and inside_loop(served.ids, L))
    taps = tuple(served.taps.indices) if served.taps is not None else None
    return run if fitted or run.settles(served.ids, L, taps) else None


def _fitted(
    choice: runners.RowChoice, spec: conv.EngineSpec, tinfo: TargetInfo, ckpt: DrafterCheckpoint
) -> runners.RowChoice:
    """The launch's row, and those of its alternatives (the other runner), fitted (`_fitted_match`)."""
    alts = tuple(replace(a, match=_fitted_match(a.match, spec, tinfo, ckpt)) for a in choice.alternatives)
    return replace(choice, match=_fitted_match(choice.match, spec, tinfo, ckpt), alternatives=alts)


def _fitted_match(
    m: conv.RowMatch, spec: conv.EngineSpec, tinfo: TargetInfo, ckpt: DrafterCheckpoint
) -> conv.RowMatch:
    """A target the table does not list whose model-code run captured otherwise than the generic capture, but as
    the table's rows for some listed families say in every case (engines/fitted.py), or in every case asking for
    no edge of the loop where the drafter asks for none: served by those rows where they all give this drafter the
    same answer (taps, or a failure), else by the generic row (its verdict then names the record)."""
    run = _generic(spec, m, tinfo)
    if run is None:
        return m
    keys = run.fits
    if not keys and inside_loop(conv.resolve(m.row, ckpt.config, tinfo.num_layers).ids, tinfo.num_layers):
        keys = run.fits_inside  # the drafter asks for no edge, where the decoder may differ from every row
    rows = [r for r in table.ROWS if r.key in keys]
    if not rows or len({_answer(conv.resolve(r, ckpt.config, tinfo.num_layers)) for r in rows}) != 1:
        return m
    # they answer alike: the one named most like the architecture is the one the verdict shows (Qwen2-MoE: qwen2's)
    name = tinfo.architecture.lower()
    return replace(m, row=max(rows, key=lambda r: max(_shared(name, x.replace("_", "")) for x in r.models)))


def _shared(a: str, b: str) -> int:
    """How many leading characters two names share."""
    return next((i for i, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))


def _answer(served: conv.Resolution) -> tuple:
    """What a row gives a drafter, for comparing rows: its taps, or that it fails."""
    return (str(served.taps) if served.taps is not None else None, served.failure is None)


def _row_unknowns(
    spec: conv.EngineSpec,
    m: conv.RowMatch,
    target: TargetInfo,
    run: GenericRun | None = None,
    served: conv.Resolution | None = None,
) -> list[str]:
    """What is not known about how this engine version serves this target (`run`: a target the table does not
    list, its capture run by the release's model-code record, which may decide what the `served` ids get)."""
    out = []
    read = ", ".join(m.row.checked)
    decided = served is not None and _settling(run, served, target) is not None
    if not m.exact:
        out.append(
            f"no convention row covers {spec}: assumed from the nearest ({m.row.label}, read at {read}); "
            f"a newer eaglewire table, or `eaglewire test --engine {spec}` on the target, settles it"
        )
    elif (
        not m.verified
        and not decided
        and not (spec.version and executed_at(spec.framework, str(spec.version), target.family, m.row.runner))
    ):  # a release nobody read whose own code, executed, agrees with the row (or decides) is not assumed
        out.append(
            f"{spec} was not read at source: assumed from row {m.row.key} (read at {read}); a newer eaglewire "
            f"table, or `eaglewire test --engine {spec}` on the target, settles it"
        )
    if (not m.model_known or run is not None) and not decided:
        said = f" ({m.basis})" if m.basis else ""
        how = "read" if m.model_known else "assumed"
        edges = (
            ", each at an edge of the loop (an id outside 1..L-1, or h0 or h_L captured), as this drafter's "
            "ids ask for"
            if run and run.edges_only
            else ""
        )
        seen = (f", but the release's own code, executed, captured otherwise in {run.claims - run.agree} of "
                f"{run.claims} cases{edges} ({run.record})" if run and run.forward_ran else
                f" (its model-code record ran only its capture request, which failed for {run.claims} id lists; no "
                f"forward ran, so nothing says what its loop captures: {run.record})" if run else "")  # fmt: skip
        # the release's model-code record tried it and says why it could not
        tried = (
            run is None
            and spec.version
            and generic_not_run(spec.framework, str(spec.version), target.architecture, m.row.runner)
        )
        if tried:
            seen = f" (its model-code record could not run it: {tried[0]} [{tried[1]}])"
        out.append(
            f"target architecture {target.architecture} is not in eaglewire's table for {spec.framework}{said}: "
            f"its generic capture ({m.model}) is {how}{seen}; `eaglewire test --search` on the target settles it"
        )
    return out


def _generic(
    spec: conv.EngineSpec, m: conv.RowMatch, target: TargetInfo, platform: str | None = None
) -> GenericRun | None:
    """For an architecture the table does not list: the release's own capture code, executed for it (a
    model-code record), which settles the generic capture the row assumes or read (vLLM's shared mixin), or shows
    it captures nothing or otherwise; on a CPU, the CPU platform's own class where the record ran one."""
    if target.family != GENERIC and m.model_known:
        return None
    version = spec.version or table.NEWEST.get(spec.framework)
    if not version:
        return None
    return generic_run(spec.framework, str(version), target.architecture, m.row.runner, platform)


def _captures_nothing(run: GenericRun, tinfo: TargetInfo) -> tuple[str, str]:
    """(the failure, why no config value fixes it) where the release's decoder for the target never captures."""
    said = f"{run.engine} {run.release}"
    return (f"{said} serves {tinfo.architecture} with a decoder that never captures an aux hidden state (its "
            f"forward returned none for any id list its capture request took): the drafter's fc gets none of its inputs [model code, "
            f"executed: {run.record}]",
            f"no config value helps: {said}'s decoder for {tinfo.architecture} captures no aux hidden state, "
            "whatever ids it is given")  # fmt: skip


def _fails_whatever_ids(run: GenericRun, tinfo: TargetInfo) -> tuple[str, str]:
    """(the failure, why no config value fixes it) where the release's own code fails for the target whatever
    the ids (`GenericRun.refused`)."""
    said = f"{run.engine} {run.release}"
    where = ("loading the target's config.json," if run.refused_loading
             else "building the target, as it loads," if run.refused_building
             else "its capture request, as the target loads," if run.refused_at_load else "its own code")  # fmt: skip
    return (f"{said} fails for {tinfo.architecture} in {where} for every id list asked: {_one_line(run.refused)} "
            f"[model code, executed: {run.record}]",
            f"no config value helps: {said} fails for {tinfo.architecture} whatever ids the drafter asks for")  # fmt: skip


def _one_line(error: str, limit: int = 300) -> str:
    """An engine's error on one line, its message cut after the last sentence that ends within `limit` characters
    (transformers' refusals run to a paragraph of advice); where it was raised is kept."""
    text = " ".join(error.split())
    head, sep, tail = text.partition(" (raised in ")
    if len(head) > limit:
        cut = head.rfind(". ", 0, limit)
        head = head[: cut + 1] if cut > 0 else head[:limit] + "..."
    return head + sep + tail


def _nothing_stage(spec: conv.EngineSpec, platform: str | None) -> str | None:
    """Where a decoder that captures nothing stops the engine: vLLM's profile run unpacks (hidden states, aux
    states) from the target's output (gpu_model_runner.py `_dummy_run`, :5851 @0.32.0), at warm-up on a GPU; the
    CPU build makes that run only when it compiles (cpu_model_runner.py `warming_up_model`), so under
    --enforce-eager the first request is where it stops (seen: vLLM 0.32.0's CPU build, MiMo): no one stage there."""
    return "warm-up" if spec.framework == "vllm" and platform != "cpu" else None


@dataclass
class _Reading:
    """One row's answer: what it feeds, what else it does, and the verdict under each training-taps option."""

    served: conv.Resolution
    findings: list[Finding]
    status: str
    unknowns: list[str]
    assumptions: list[str]
    outcomes: dict[str, str]
    no_value: str | None = None  # why no config value can fix it (the release's decoder captures nothing)


def _taps_status(served: conv.Resolution, wiring: Wiring) -> str:
    return "ok" if served.taps is not None and served.taps.same_set(wiring) else "mismatch"


def _read_row(
    ckpt: DrafterCheckpoint,
    tinfo: TargetInfo,
    spec: conv.EngineSpec,
    m: conv.RowMatch,
    trained: TrainedTaps,
    platform: str | None = None,
) -> _Reading:
    """The verdict of one row under every training-taps option (before runner and --strict)."""
    L = tinfo.num_layers
    served = conv.resolve(m.row, ckpt.config, L)
    run = _generic(spec, m, tinfo, platform)
    failure, no_value, stage = None, None, None
    if run is not None and run.captures_nothing:
        (failure, no_value), stage = _captures_nothing(run, tinfo), _nothing_stage(spec, platform)
    elif run is not None and run.refused and not run.holds:
        (failure, no_value), stage = _fails_whatever_ids(run, tinfo), "load" if run.refused_at_load else None
    if failure is not None and served.failure is None:
        served = replace(served, taps=None, stage=stage, failure=failure)
    findings = engine_findings(ckpt, tinfo, spec, m.row, served)
    unknowns = _row_unknowns(spec, m, tinfo, run, served)
    if _eagle1_head(ckpt):
        # an EAGLE-1-style head: no taps to compare, only whether this engine version honours the flag
        ignored = any(f.code == "aux-disabled" and f.severity == "problem" for f in findings)
        served = conv.Resolution(m.row, L, None, None, None, notes=[AUX_FED if ignored else FINAL_STATE_FED])
        problem = any(f.severity == "problem" for f in findings)
        status = "unverified" if unknowns else "fails" if problem else "ok"
        return _Reading(served, findings, status, unknowns, [], {})
    width = next((f for f in findings if f.code == "fc-width" and f.severity == "problem"), None)
    if width is not None and not served.failure:  # fed the taps, but not as many as the fc takes: it crashes
        served = replace(served, failure=width.message, stage=m.row.width_stage)
    label = _label(spec, m.row)
    outcomes = {str(o.wiring): _taps_status(served, o.wiring) for o in trained.options}
    engine_fails = served.failure is not None or any(f.severity == "problem" for f in findings)
    reported = [f.message for f in findings if f.severity == "unverified"]
    assumptions: list[str] = []
    if unknowns:
        status = "unverified"
        if (
            trained.wiring is not None
            and served.taps is not None
            and not served.taps.same_set(trained.wiring)
        ):
            unknowns.append(
                f"if those facts hold, {label} feeds {served.taps} where training used {trained.wiring}"
            )
    elif engine_fails:
        status = "fails"  # whatever the drafter was trained on
        outcomes = {k: "fails" for k in outcomes}
    elif reported and not _taps_mismatch(trained, outcomes):
        # an unknown of the engine's structure rows; a taps mismatch under every candidate is decided without it
        status = "unverified"
        unknowns = [
            u if "doctor" in u else f"{u}; `eaglewire doctor` on the target measures it" for u in reported
        ]
    elif trained.blocked or not outcomes:
        status = "unverified"
        unknowns.append(trained.unknown or f"training taps: {trained.basis}")
        unknowns += [f"if trained on {w}, {label} gives {st}" for w, st in outcomes.items()]
    elif len(set(outcomes.values())) == 1:
        status = next(iter(outcomes.values()))
        assumptions = [str(a) for a in trained.assumptions]
    else:
        status = "unverified"
        spread = "; ".join(f"trained on {w}: {st}" for w, st in outcomes.items())
        unknowns += [trained.unknown or "", f"on {label} the candidates give different verdicts ({spread})"]
    return _Reading(served, findings, status, unknowns, assumptions, outcomes, no_value)


def _taps_mismatch(trained: TrainedTaps, outcomes: dict[str, str]) -> bool:
    """The served taps differ from training under every candidate for the training taps."""
    return not trained.blocked and bool(outcomes) and set(outcomes.values()) == {"mismatch"}


def _fix(row: conv.Convention, reading: _Reading, trained: TrainedTaps, L: int) -> conv.ConfigFix | None:
    """The config value that makes this row feed the training taps, where it feeds others (or fails)."""
    served, w = reading.served, trained.wiring
    if reading.status not in ("mismatch", "fails") or not trained.known or w is None:
        return None
    if served.failure is None and served.taps is not None and served.taps.same_set(w):
        return None  # the taps are right: what fails is elsewhere (the findings say what)
    if reading.no_value:  # the release's own decoder never captures: no id list is served
        return conv.ConfigFix(row, w, None, None, reason=reading.no_value)
    if row.rule is conv.Rule.UNSUPPORTED and row.refused_fix:  # the fix is a launch, not a value
        return conv.ConfigFix(row, w, None, None, reason=row.refused_fix)
    if row.rule is conv.Rule.UNSUPPORTED:  # no value helps: the fix is a release (the verdict says why)
        first = table.first_serving(row)
        later = (f"{row.framework} {first} is the first release whose capture serves it" if first
                 else f"no {row.framework} release read captures for it")  # fmt: skip
        return conv.ConfigFix(
            row, w, None, None, reason=f"no config value: this release refuses the target; {later}"
        )
    return conv.config_value_for(row, w, L)


def _label(spec: conv.EngineSpec, row: conv.Convention) -> str:
    version = spec.version or table.NEWEST.get(spec.framework)
    where = f" on {row.platform}" if row.platform == "cpu" else ""  # a row of the CPU platform's own class
    return f"{spec.framework}=={version}" + (f" {row.runner}" if row.runner else "") + where


def _verdict(
    ckpt: DrafterCheckpoint,
    tinfo: TargetInfo,
    spec: conv.EngineSpec,
    choice: runners.RowChoice,
    trained: TrainedTaps,
    strict: bool = False,
    platform: str | None = None,
) -> EngineVerdict:
    L = tinfo.num_layers
    m = choice.match
    main = _read_row(ckpt, tinfo, spec, m, trained, platform)
    status, unknowns, assumptions = main.status, list(main.unknowns), list(main.assumptions)
    alternatives = []
    for alt in choice.alternatives:
        r = _read_row(ckpt, tinfo, spec, alt.match, trained, platform)
        fix = _fix(alt.match.row, r, trained, L)
        alternatives.append(Alternative(_label(spec, alt.match.row), alt.match.row.key, alt.when, r.served,
                                        r.status, r.findings, fix))  # fmt: skip
    differ = [a for a in alternatives if a.status != status]
    if differ and status != "unverified":
        others = " or ".join(
            f"{a.when}: "
            + (
                f"vLLM then runs {(a.served.row.runner or '').upper()}, which "
                if a.served.row.runner
                else "it "
            )
            + (f"feeds {a.served.taps}" if a.served.taps else "fails")
            + f" ({a.status})"
            for a in differ
        )
        fact = (f"vLLM runs {choice.why}" + (f" ({choice.assumed})" if choice.assumed else "") if choice.why
                else choice.assumed or "")  # fmt: skip
        settle = SETTLE_RUNNER if choice.why else SETTLE_PLATFORM
        assumptions.insert(0, str(Assumption(fact, f"{others}; {settle} settles it")))
    if strict and assumptions and status != "unverified":
        status = "unverified"
        unknowns += [f"--strict: assumed {a}; {STRICT_SETTLE}" for a in assumptions]
        assumptions = []
    return EngineVerdict(
        _label(spec, m.row), m.row.key, m.exact, "config.json", main.served, status,
        _fix(m.row, main, trained, L), main.findings,
        unknowns, m.verified, assumptions, choice.why or None, alternatives, main.outcomes,
    )  # fmt: skip


def with_key(config: dict, key: str, value) -> dict:
    """A copy of `config` with dotted `key` (e.g. eagle_config.eagle_aux_hidden_state_layer_ids) set; the
    dicts along the path are copied, so `config` is left as it was."""
    out = dict(config)
    node = out
    *parents, last = key.split(".")
    for p in parents:
        node[p] = dict(node.get(p) or {})
        node = node[p]
    node[last] = value
    return out


def fixed_config(report: CheckReport, config: dict) -> dict:
    """config.json with every expressible fix applied (SGLang's key and vLLM's key can live side by side)."""
    out = config
    for v in report.verdicts:
        for f in (v.fix, *(a.fix for a in v.alternatives)):
            if f is not None and f.expressible and f.key is not None:
                out = with_key(out, f.key, list(f.value or []))
    return dict(out)


def write_fixed(ckpt: DrafterCheckpoint, report: CheckReport, out: Path) -> Path:
    """A copy of the drafter with the fixed config.json (the input is never modified)."""
    cfg = fixed_config(report, ckpt.config)
    if ckpt.config_layers is not None and ckpt.arch is not None:  # the layer count the weights hold
        key = (
            "transformer_layer_config.num_hidden_layers"
            if ckpt.format == "speculators"
            else "num_hidden_layers"
        )
        cfg = with_key(cfg, key, ckpt.arch.num_layers)
    prov = (cfg.get(PROVENANCE_KEY) or {}).get("provenance") or {}
    if report.trained.wiring is not None and not prov.get("taps"):
        # the copy records the taps the fix was made for (recorded, given or inferred), so checking it needs no flag
        prov = dict(prov) | {
            "taps": str(report.trained.wiring),
            "taps_basis": report.trained.basis,
            "taps_known": report.trained.known,
            "fixed_by": "eaglewire check --fix-into",
        }
        prov.setdefault("written_by", "eaglewire check --fix-into")
        if report.trained.assumptions:
            prov["taps_assumptions"] = [str(a) for a in report.trained.assumptions]
        cfg[PROVENANCE_KEY] = dict(cfg.get(PROVENANCE_KEY) or {}) | {"provenance": prov}
    extra = {k: v for k, v in ckpt.configs.items() if k != "config.json"}
    return write_drafter(ckpt, out, ckpt.format, None, config=cfg, extra_files=extra)


def check_job(
    drafter: Path | str,
    target: Path | str | None,
    engines: list[str],
    trained_on: Wiring | None = None,
    trained_with: str | None = None,
    fix_into: Path | None = None,
    *,
    platform: str | None = None,
    runner: str | None = None,
    strict: bool = False,
) -> CheckReport:
    """`eaglewire check`: the verdict per engine and, with `fix_into`, a fixed copy of the drafter."""
    if trained_on and trained_with:
        raise InputError("--trained-on and --trained-with are alternatives: give one")
    ckpt = read_drafter(drafter, weights="lazy" if fix_into is None else True)
    rep = check(
        ckpt, target, engines, trained_on, trained_with, platform=platform, runner=runner, strict=strict
    )
    if fix_into is not None:
        rep.fixed_copy = write_fixed(ckpt, rep, fix_into)
    return rep


def convert_job(
    src: Path | str,
    dst: Path | str,
    to: str,
    target: Path | str | None = None,
    trained_on: Wiring | None = None,
):
    """`eaglewire convert`, then the static check of source and copy: every engine the source was right for must
    be right for the copy, and the result says so where it is not (a destination that cannot express it)."""
    from eaglewire.formats.convert import convert

    res = convert(src, dst, to, target, trained_on)
    source = read_drafter(src, weights="lazy")
    tinfo = read_target(target) if target is not None else target_from_provenance(source)
    engines = ["sglang", "vllm"]
    before = {v.engine: v.status for v in check(source, tinfo, engines, trained_on).verdicts}
    after = check(dst, tinfo, engines, trained_on)
    res.notes += [
        f"the converted copy is {v.status} for {v.engine} where the source was ok"
        + (f" ({_why(v)})" if _why(v) else "")
        for v in after.verdicts
        if before.get(v.engine) == "ok" and v.status != "ok"
    ]
    return res


def _why(v: EngineVerdict) -> str | None:
    """The engine's failure, or the first problem it has with the checkpoint."""
    return v.served.failure or next((f.message for f in v.findings if f.severity == "problem"), None)
