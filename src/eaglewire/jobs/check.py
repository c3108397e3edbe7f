"""The static wiring check: which taps each engine will feed a drafter, against the taps it was trained on.

Configs only, no weights needed beyond the drafter's own (shapes are checked when present). For every engine
row the verdict is one of: "ok" (every fact behind it known: the engine version read at source, the target
family in the engine's table, the training taps recorded or given), "mismatch" (fed other taps than trained),
"fails" (the engine crashes or drops a state), or "unverified" (a fact is missing: the report names it and the
flag that supplies it), with the exact config value that fixes a mismatch or the reason no value can.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from pathlib import Path

from eaglewire import conventions as conv
from eaglewire.conventions import registries
from eaglewire.errors import InputError
from eaglewire.formats import DrafterCheckpoint, read_drafter, write_drafter
from eaglewire.formats.checkpoint import PROVENANCE_KEY
from eaglewire.formats.trained import TrainedTaps, target_from_provenance, trained_taps
from eaglewire.formats.vocab import VocabReport, vocab_report
from eaglewire.jobs.structure import findings_for
from eaglewire.taps import Wiring
from eaglewire.targets import TargetInfo, read_target


@dataclass
class Finding:
    severity: str  # "problem" | "warning" | "info"
    code: str
    message: str
    engine: str | None = None


@dataclass
class EngineVerdict:
    engine: str  # row label
    row_key: str
    exact_version: bool
    reads: str  # the config file the engine reads
    served: conv.Resolution
    status: str  # "ok" | "mismatch" | "fails" | "unverified"
    fix: conv.ConfigFix | None = None
    findings: list[Finding] = field(default_factory=list)
    unknowns: list[str] = field(default_factory=list)  # what is not known, each with what would settle it
    verified_version: bool = True  # the engine version lies where the row was read at source

    @property
    def problem(self) -> bool:
        return self.status in ("mismatch", "fails") or any(f.severity == "problem" for f in self.findings)


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
        seen = [u for v in self.verdicts for u in v.unknowns]
        return list(dict.fromkeys(([self.trained.unknown] if self.trained.unknown else []) + seen))

    def to_dict(self) -> dict:
        def verdict(v: EngineVerdict) -> dict:
            s = v.served
            return {
                "engine": v.engine,
                "row": v.row_key,
                "exact_version_row": v.exact_version,
                "reads": v.reads,
                "source_key": s.source_key or "(default)",
                "ids": list(s.ids) if s.ids is not None else None,
                "served_taps": str(s.taps) if s.taps else None,
                "failure": s.failure,
                "status": v.status,
                "fix": None
                if v.fix is None
                else {
                    "key": v.fix.key,
                    "value": v.fix.value,
                    "expressible": v.fix.expressible,
                    "reason": v.fix.reason,
                    "notes": v.fix.notes,
                },
                "findings": [asdict(f) for f in v.findings],
                "unknowns": v.unknowns,
                "verified_version": v.verified_version,
                "source": v.served.row.source,
            }

        return {
            "drafter": self.drafter,
            "format": self.format,
            "target": self.target.identity() | {"source": self.target.source},
            "trained": {
                "taps": str(self.trained.wiring) if self.trained.wiring else None,
                "basis": self.trained.basis,
                "confidence": self.trained.confidence,
                "ids": self.trained.ids,
                "key": self.trained.key,
                "known": self.trained.known,
                "unknown": self.trained.unknown,
                "candidates": self.trained.candidates,
            },
            "engines": [verdict(v) for v in self.verdicts],
            "findings": [asdict(f) for f in self.findings],
            "vocab": None
            if self.vocab is None
            else {"ok": self.vocab.ok, "findings": [asdict(f) for f in self.vocab.findings]},
            "config_files": self.config_files,
            "status": self.verdict,
            "unknowns": self.unknowns,
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
        Finding(sev, code, msg, spec.framework)
        for sev, code, msg in findings_for(ckpt, target, spec, row, served)
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
    sg = conv.resolve(conv.rows_for(conv.parse_spec("sglang"), target.family)[0].row, ckpt.config, L)
    vl = conv.resolve(conv.rows_for(conv.parse_spec("vllm"), target.family)[0].row, ckpt.config, L)
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
) -> CheckReport:
    ckpt = drafter if isinstance(drafter, DrafterCheckpoint) else read_drafter(drafter, weights="lazy")
    if isinstance(target, TargetInfo):
        tinfo = target
    elif target is not None:
        tinfo = read_target(target)
    else:
        tinfo = target_from_provenance(ckpt)
        if tinfo is None:
            raise InputError(f"{ckpt.where()}: no provenance names the target; pass --target CONFIG_OR_DIR")
    trained = trained_taps(ckpt, tinfo, trained_on, trained_with)
    verdicts: list[EngineVerdict] = []
    for text in engines:
        spec = conv.parse_spec(text)
        matches = [
            m
            for m in conv.rows_for(spec, tinfo.family, tinfo.architecture, tinfo.model_type)
            if m.row.role == "serve"
        ]
        if not matches:
            raise InputError(f"--engine {text}: not a serving engine (use sglang==X or vllm==X)")
        refused = (
            None
            if _eagle1_head(ckpt)
            else registries.refusal(spec.framework, spec.version, tinfo.architecture, tinfo.model_type)
        )
        for m in matches:
            v = (
                _verdict(ckpt, tinfo, spec, m, trained)
                if refused is None
                else _refused(spec, m, tinfo, refused)
            )
            # an architecture the table does not list, served by capture code whose taps are known
            if m.basis and m.model_known:
                v.findings.append(Finding("info", "engine-registry", m.basis, spec.framework))
            verdicts.append(v)
    vrep = None
    if ckpt.arch is not None and ckpt.has_weights:
        vrep = vocab_report(
            ckpt.tensors.get("d2t"), ckpt.tensors.get("t2d"), ckpt.arch.vocab_size, ckpt.arch.draft_vocab_size
        )
    findings = general_findings(ckpt, tinfo)
    if vrep is not None:
        findings += [Finding(f.severity, f.code, f.message) for f in vrep.findings]
    files = {"config.json": "SGLang and vLLM read this file"}
    for name in ckpt.configs:
        if name != "config.json":
            files[name] = "no engine reads this file (a training record)"
    return CheckReport(
        str(ckpt.path or drafter), ckpt.format, tinfo, trained, verdicts, findings, vrep, files
    )


def _eagle1_head(ckpt: DrafterCheckpoint) -> bool:
    """An EAGLE-1-style head (no aux hidden states): the engine's EAGLE-3 interface does not apply to it."""
    ec = ckpt.config.get("eagle_config")
    return (
        isinstance(ec, dict) and ec.get("use_aux_hidden_state") is False and not ckpt.tensors.get("fc.weight")
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


def _row_unknowns(spec: conv.EngineSpec, m: conv.RowMatch, target: TargetInfo) -> list[str]:
    """What is not known about how this engine version serves this target."""
    out = []
    read = ", ".join(m.row.checked)
    if not m.exact:
        out.append(
            f"no convention row covers {spec}: assumed from the nearest ({m.row.label}, read at {read}); "
            f"a newer eaglewire table, or `eaglewire test --engine {spec}` on the target, settles it"
        )
    elif not m.verified:
        out.append(
            f"{spec} was not read at source: assumed from row {m.row.key} (read at {read}); a newer eaglewire "
            f"table, or `eaglewire test --engine {spec}` on the target, settles it"
        )
    if not m.model_known:
        said = f" ({m.basis})" if m.basis else ""
        out.append(
            f"target architecture {target.architecture} is not in eaglewire's table for {spec.framework}{said}: "
            f"its generic capture ({m.model}) is assumed; `eaglewire test --search` on the target settles it"
        )
    return out


def _verdict(
    ckpt: DrafterCheckpoint, tinfo: TargetInfo, spec: conv.EngineSpec, m: conv.RowMatch, trained: TrainedTaps
) -> EngineVerdict:
    L = tinfo.num_layers
    served = conv.resolve(m.row, ckpt.config, L)
    findings = engine_findings(ckpt, tinfo, spec, m.row, served)
    unknowns = _row_unknowns(spec, m, tinfo)
    if not trained.known:
        unknowns.append(trained.unknown or f"training taps: {trained.basis}")
    row_known = not m.assumed
    ec = ckpt.config.get("eagle_config")
    if isinstance(ec, dict) and ec.get("use_aux_hidden_state") is False and not ckpt.tensors.get("fc.weight"):
        # an EAGLE-1-style head: no taps to compare, only whether this engine version honours the flag
        served = conv.Resolution(
            m.row, L, None, None, None, notes=["no aux hidden states: fed the final state"]
        )
        problem = any(f.severity == "problem" for f in findings)
        status = "fails" if problem else "ok" if row_known else "unverified"
        version = spec.version or conv.NEWEST.get(spec.framework)
        name = f"{spec.framework}=={version}" + (f" {m.row.runner}" if m.row.runner else "")
        return EngineVerdict(name, m.row.key, m.exact, "config.json", served, status, None, findings,
                             _row_unknowns(spec, m, tinfo), m.verified)  # fmt: skip
    if served.failure:
        status = "fails" if row_known else "unverified"
    elif trained.wiring is None:
        status = "unverified"
    else:
        same = served.taps is not None and served.taps.same_set(trained.wiring)
        status = ("ok" if same else "mismatch") if (row_known and trained.known) else "unverified"
        if status == "unverified" and not same:
            unknowns.append(
                f"if those facts hold, {spec} feeds {served.taps} where training used {trained.wiring}"
            )
    reported = [f.message for f in findings if f.severity == "unverified"]
    if reported and status == "ok":
        status = "unverified"
        unknowns += reported
    fix = None
    if status in ("mismatch", "fails") and trained.wiring is not None:
        fix = conv.config_value_for(m.row, trained.wiring, L)
    version = spec.version or conv.NEWEST.get(spec.framework)
    name = f"{spec.framework}=={version}" + (f" {m.row.runner}" if m.row.runner else "")
    return EngineVerdict(
        name, m.row.key, m.exact, "config.json", served, status, fix, findings, unknowns, m.verified
    )


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
        f = v.fix
        if f is not None and f.expressible and f.key is not None:
            out = with_key(out, f.key, list(f.value or []))
    return dict(out)


def write_fixed(ckpt: DrafterCheckpoint, report: CheckReport, out: Path) -> Path:
    """A copy of the drafter with the fixed config.json (the input is never modified)."""
    cfg = fixed_config(report, ckpt.config)
    if report.trained.wiring is not None and ckpt.provenance is None:
        cfg.setdefault(
            PROVENANCE_KEY,
            {
                "provenance": {
                    "taps": str(report.trained.wiring),
                    "written_by": "eaglewire check --fix-into",
                    "taps_basis": report.trained.basis,
                    "taps_known": report.trained.known,
                }
            },
        )
    extra = {k: v for k, v in ckpt.configs.items() if k != "config.json"}
    return write_drafter(ckpt, out, ckpt.format, None, config=cfg, extra_files=extra)


def check_job(
    drafter: Path | str,
    target: Path | str | None,
    engines: list[str],
    trained_on: Wiring | None = None,
    trained_with: str | None = None,
    fix_into: Path | None = None,
) -> CheckReport:
    """`eaglewire check`: the verdict per engine and, with `fix_into`, a fixed copy of the drafter."""
    if trained_on and trained_with:
        raise InputError("--trained-on and --trained-with are alternatives: give one")
    ckpt = read_drafter(drafter, weights="lazy" if fix_into is None else True)
    rep = check(ckpt, target, engines, trained_on, trained_with)
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
        + (f" ({v.served.failure})" if v.served.failure else "")
        for v in after.verdicts
        if before.get(v.engine) == "ok" and v.status != "ok"
    ]
    return res
