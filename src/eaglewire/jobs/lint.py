"""The lint engine: parse the command, resolve the engine version, replay every rule that covers it in order,
then build fixes, apply them to the command and lint again until it is clean."""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from packaging.version import Version

from eaglewire.engines.parse import parse_launch, sglang_given
from eaglewire.engines.sglang import flags as sglang
from eaglewire.engines.sglang.args import FAMILY_ROWS_READ, SGLANG, SGLANG_FAMILIES
from eaglewire.engines.sglang.sizes import auto_for
from eaglewire.engines.versions import NEWEST, resolve_version
from eaglewire.engines.vllm import flags as vllm
from eaglewire.engines.vllm.args import DOTTED_KEYS_READ_FROM, SHORT_FLAGS_FROM, VL_LEGACY, VL_SHORT, VLLM
from eaglewire.engines.vllm.config import vllm_key_known
from eaglewire.errors import InputError
from eaglewire.jsonio import read_json_object
from eaglewire.rules.context import drafter_kind, local_config, target_archs
from eaglewire.rules.flags import FlagRule, State
from eaglewire.rules.gpus import GPU_GENERATIONS, GPUS, UNKNOWN, GpuProfile, detect_local, resolve_gpu
from eaglewire.rules.launch import Edit, LaunchCommand, LintReport, Settings, as_float, as_int
from eaglewire.rules.parsers import AMBIGUOUS
from eaglewire.rules.row import Spec, match

RULES: tuple[FlagRule, ...] = (*sglang.RULES, *vllm.RULES)


def rules_for(engine: str, version: str | Version | None = None) -> list[FlagRule]:
    """The rows that apply to one engine version (newest encoded when None), in the engine's order."""
    v = Version(str(version)) if version is not None else Version(NEWEST[engine])
    return match(RULES, Spec(engine, v))


# --------------------------------------------------------------------------------------------------------------
# Lint


def _settings_sglang(values: dict[str, Any]) -> Settings:
    n, k, d = values["num_steps"], values["topk"], values["num_draft_tokens"]
    proposed = d - 1 if isinstance(d, int) else None
    max_accept = None
    if isinstance(n, int):
        max_accept = (min(n, proposed) if proposed is not None else n) + 1
    return Settings(
        values["algorithm"],
        n,
        k,
        d,
        proposed,
        max_accept,
        draft_model=values["draft_model"],
        max_running_requests=values["max_running_requests"],
    )


def _settings_vllm(spec: dict, tree: tuple[int, int] | None) -> Settings:
    k = spec.get("num_speculative_tokens")
    k = k if isinstance(k, int) and not isinstance(k, bool) else None
    method = spec.get("method")
    model = spec.get("model")
    dtp = spec.get("draft_tensor_parallel_size")
    if tree is not None:
        return Settings(method, tree[1], None, tree[0] + 1, tree[0], tree[1] + 1, k, method, model,
                        draft_tensor_parallel_size=dtp)  # fmt: skip
    if k is None:
        return Settings(method, num_speculative_tokens=None, method=method, draft_model=model,
                        draft_tensor_parallel_size=dtp)  # fmt: skip
    return Settings(method, k, 1, k + 1, k, k + 1, k, method, model, draft_tensor_parallel_size=dtp)


@dataclass
class _Outcome:
    report: LintReport
    st: State


def _load_drafter(
    drafter_config: dict | str | Path | None, draft_path: str | None
) -> tuple[dict | None, str | None]:
    if isinstance(drafter_config, dict):
        return drafter_config, "the given drafter config"
    if drafter_config is not None:
        p = Path(drafter_config).expanduser()
        file = p / "config.json" if p.is_dir() else p
        if not file.is_file():
            raise InputError(
                f"{drafter_config}: drafter config not found (a directory with config.json, or the file)"
            )
        return read_json_object(file, "drafter config"), str(file)
    return local_config(draft_path)


def _vllm_inputs(cmd: LaunchCommand, version: Version) -> tuple[dict, dict]:
    """(what vLLM parses, what the user meant): --spec-* and removed legacy flags merged in where they apply."""
    spec = dict(cmd.speculative_config or {})
    for key in ("num_speculative_tokens", "draft_tensor_parallel_size"):
        if spec.get(key) is not None:  # pydantic's lax mode takes "3" and 3.0 for an int field
            spec[key] = as_int(f"--speculative-config.{key}", spec[key])
    intended = dict(spec)
    for o in cmd.options:
        if o.flag in VL_SHORT:
            key = VL_SHORT[o.flag]
            if key in spec:
                continue  # conflict: vllm.short_flags_conflict
            value = as_int(o.given_as, o.value) if o.flag == "--spec-tokens" else o.value
            intended[key] = value
            if version >= Version(SHORT_FLAGS_FROM):
                spec[key] = value
        elif o.flag in VL_LEGACY:
            key, kind = VL_LEGACY[o.flag]
            value: Any = o.value
            if kind == "switch":
                value = True
            elif kind == "int":
                value = as_int(o.given_as, o.value)
            elif kind == "float":
                value = as_float(o.given_as, o.value)
            intended.setdefault(key, value)
            if vllm_key_known(key, version):
                spec.setdefault(key, value)  # best effort: lint what the user meant, the flag itself fails
    return spec, intended


def _evaluate(
    cmd: LaunchCommand,
    version_text: str | None,
    target_arch: str | None,
    drafter_config: dict | str | Path | None,
    gpu: GpuProfile,
) -> _Outcome:
    version, defaulted, notes = resolve_version(cmd.engine, version_text)
    model_config, _ = local_config(cmd.model)
    served_speculators = bool(model_config and model_config.get("speculators_config") is not None)
    text_arch = None
    if target_arch is None and model_config is not None and not served_speculators:
        target_arch, text_arch = target_archs(model_config)
    no_spec = False
    if cmd.engine == SGLANG:
        given = sglang_given(cmd)
        no_spec = given["algorithm"] is None and not any(
            o.flag.startswith("--speculative-") for o in cmd.options
        )
        values: dict[str, Any] = dict(given)
        draft_path = given["draft_model"]
    else:
        spec, intended = _vllm_inputs(cmd, version)
        no_spec = not intended and not served_speculators
        tp = cmd.get("--tensor-parallel-size")
        values = {"spec": spec, "target_tp": as_int("--tensor-parallel-size", tp) if tp is not None else 1}
        given = {"spec": intended}
        draft_path = spec.get("model")
    if no_spec:
        flag = "--speculative-algorithm" if cmd.engine == SGLANG else "--speculative-config"
        notes.append(f"no speculative decoding in this command ({flag} is not set): nothing to lint")
    drafter, drafter_source = _load_drafter(drafter_config, draft_path)
    kind = drafter_kind(drafter) if drafter is not None else None
    if kind is None and drafter is None and draft_path and "eagle3" in str(draft_path).lower():
        kind, drafter_source = "eagle3", f"{draft_path}, by its name"
    st = State(
        cmd,
        version,
        target_arch,
        text_arch,
        kind,
        drafter_source,
        drafter,
        given,
        values,
        notes=notes,
        gpu=gpu,
        target_config=model_config if not served_speculators else None,
    )
    if no_spec:  # SGLang still resolves the attention backend (which can refuse); vLLM has nothing to check
        st.halted, st.family = cmd.engine == VLLM, "none"
    elif cmd.engine == SGLANG and given["algorithm"] is not None:
        # The handler family (the same dispatch in every version read); sglang.algorithm_family refuses unknowns.
        st.family = SGLANG_FAMILIES.get(given["algorithm"].upper(), "eagle")
        if st.family != "eagle" and version < Version(FAMILY_ROWS_READ):
            notes.append(f"{given['algorithm']}: its own rows were read in sglang {FAMILY_ROWS_READ} only; for {version} only "
                         "the rows common to every algorithm are replayed")  # fmt: skip
    if cmd.engine == VLLM:
        st.spec_intended = dict(given["spec"])
    else:
        st.auto = auto_for(version).choose(target_arch)
    applied: list[str] = []
    for rule in match(RULES, Spec(cmd.engine, version)):
        applied.append(rule.name)
        if (rule.always or not st.halted) and rule.applies_to(st.family):
            rule.apply(rule, st)
    if cmd.engine == SGLANG:
        given_settings, effective = _settings_sglang(given), _settings_sglang(st.v)
    else:
        given_settings = _settings_vllm(given["spec"], None)
        effective = _settings_vllm(st.v["spec"], st.v.get("tree"))
        if any(o.key is not None for o in cmd.options) and version < Version(DOTTED_KEYS_READ_FROM):
            st.notes.append(
                f"dotted --speculative-config.KEY arguments were checked in vLLM {DOTTED_KEYS_READ_FROM}+ only"
            )
    fixes = [fix for i, make in st.fix_for.items() if (fix := make(st, st.changes[i])) is not None]
    report = LintReport(
        engine=cmd.engine,
        version=str(version),
        version_defaulted=defaulted,
        argv=list(cmd.argv),
        target_arch=target_arch,
        drafter_kind=st.drafter_kind,
        given=given_settings,
        effective=effective,
        changes=list(st.changes),
        fixes=fixes,
        fixed_argv=None,
        starts=not st.fails,
        notes=st.notes,
        rules_applied=applied,
        failing=dict(st.failing),
        gpu=gpu.key,
        gpu_dependent=list(dict.fromkeys(st.gpu_dependent)),
        unread=(
            f"{cmd.engine} {version} is newer than the newest release eaglewire read ({NEWEST[cmd.engine]}): its "
            "launch rules may have changed (`lint --engine-code` with that release installed runs its own argument "
            "code on this command)"
            if version > Version(NEWEST[cmd.engine])
            else None
        ),
    )
    return _Outcome(report, st)


# --------------------------------------------------------------------------------------------------------------
# Applying fixes to argv


def _apply_edits(st: State, edits: Sequence[Edit]) -> list[str]:
    """The command with `edits` applied: a flag is replaced in place (its last occurrence), removed, or appended.

    vLLM config keys: every --speculative-config (JSON or dotted), --spec-* and removed legacy flag is replaced by
    one --speculative-config holding what the user meant, with the key edits applied.
    """
    cmd = st.cmd
    slots: list[list[str]] = [[t] for t in cmd.argv]
    drop: set[int] = set()
    tail: list[str] = []
    spec_flags = {"--speculative-config", *VL_SHORT, *VL_LEGACY}
    key_edits = [e for e in edits if e.key is not None]
    flag_edits = [e for e in edits if e.key is None]
    rebuild = cmd.engine == VLLM and (bool(key_edits) or any(e.flag in spec_flags for e in flag_edits))
    for edit in flag_edits:
        if rebuild and edit.flag in spec_flags:
            continue
        found = [o for o in cmd.options if o.flag == edit.flag]
        for o in found if edit.remove else found[:-1]:
            drop.update(range(o.start, o.stop))
        if edit.remove:
            continue
        if found:
            last = found[-1]
            drop.update(range(last.start + 1, last.stop))
            # the user's spelling, unless the release's parser refuses it (an ambiguous prefix): then in full
            spelled = edit.flag if last.resolution == AMBIGUOUS else last.given_as
            slots[last.start] = [f"{spelled}={edit.value}"] if last.inline else [spelled, str(edit.value)]
        else:
            tail += [edit.flag] if edit.value is None else [edit.flag, str(edit.value)]  # None: a switch
    if rebuild:
        spec = dict(st.given["spec"])
        for edit in key_edits:
            if edit.remove:
                spec.pop(str(edit.key), None)
            else:
                spec[str(edit.key)] = edit.value
        bearing = [o for o in cmd.options if o.flag in spec_flags]
        for o in bearing:
            drop.update(range(o.start, o.stop))
        text = ["--speculative-config", json.dumps(spec)]
        if bearing:
            drop.discard(bearing[0].start)
            slots[bearing[0].start] = text
        else:
            tail += text
    return [token for i, slot in enumerate(slots) if i not in drop for token in slot] + tail


def _fixed_argv(
    outcome: _Outcome,
    version: str | None,
    target_arch: str | None,
    drafter_config: dict | str | Path | None,
    gpu: GpuProfile,
) -> list[str] | None:
    """Apply every fix and lint again, until no problem is left (4 rounds at most). None when a fix needs a value
    only the user knows (a drafter path)."""
    current = outcome
    for _ in range(4):
        report = current.report
        if len(report.fixes) < len(report.problems) or not all(f.mechanical for f in report.fixes):
            return None
        argv = _apply_edits(current.st, [e for f in report.fixes for e in f.edits])
        current = _evaluate(
            parse_launch(argv, current.st.cmd.engine, version), version, target_arch, drafter_config, gpu
        )
        if not current.report.has_problem:
            return argv
    return None


def _verdicts_by_gpu(
    argv: list[str],
    engine: str | None,
    version: str | None,
    target_arch: str | None,
    drafter_config: dict | str | Path | None,
) -> list[str]:
    """For an unknown GPU: the verdict on each GPU generation the rules tell apart, when they differ."""
    found: dict[str, str] = {}
    for key in GPU_GENERATIONS:
        rep = _evaluate(
            parse_launch(argv, engine, version), version, target_arch, drafter_config, GPUS[key]
        ).report
        refused = [r for r, stage in rep.failing.items() if stage == "args"]
        found[key] = f"refused at startup ({', '.join(refused)})" if refused else "starts"
    if len(set(found.values())) == 1:
        return [
            f"every GPU generation: {next(iter(found.values()))} (backend choice differs, verdict does not)"
        ]
    return [f"{key}: {verdict}" for key, verdict in found.items()]


def lint(
    argv: list[str],
    *,
    engine: str | None = None,
    engine_version: str | None = None,
    target_arch: str | None = None,
    drafter_config: dict | str | Path | None = None,
    gpu: str | GpuProfile | None = None,
) -> LintReport:
    """Replay the engine's rules on a launch command: effective settings, silent changes, fixes, fixed command.

    `engine_version` None assumes the newest version encoded (the report says so). `target_arch` None reads
    `architectures[0]` from the model's config.json when the model is a local directory. `drafter_config` (a dict,
    or a directory / config.json path) tells EAGLE-3 drafters apart; None reads the draft model's config.json when
    it is local. `gpu` (a key of `flags.gpus.GPUS`, "local", or a profile) feeds the engine's per-GPU backend and
    page-size choices; None is "unknown": the report then lists the rules whose verdict depends on the GPU.
    Raises `InputError` (one line, naming the flag) on malformed input.
    """
    profile = gpu if isinstance(gpu, GpuProfile) else resolve_gpu(gpu or UNKNOWN)
    outcome = _evaluate(
        parse_launch(argv, engine, engine_version), engine_version, target_arch, drafter_config, profile
    )
    report = outcome.report
    if not profile.known and outcome.st.gpu_dependent:
        report.gpu_dependent = _verdicts_by_gpu(argv, engine, engine_version, target_arch, drafter_config)
    if report.has_problem:
        report.fixed_argv = _fixed_argv(outcome, engine_version, target_arch, drafter_config, profile)
        if report.fixed_argv is None:
            report.notes.append("no fixed command: a fix needs a value only you know (see fixes)")
    report.evidence = lint_evidence(report)
    return report


def lint_job(
    command: list[str] | None,
    engine: str | None = None,
    *,
    target_arch: str | None = None,
    gpu: str = "local",
    engine_code: bool = False,
    engine_python: str | None = None,
) -> LintReport:
    """`eaglewire lint`: `lint` on the launch command, `engine` given as `sglang` or `sglang==0.5.23`; with
    `engine_code` (or an `engine_python`) the installed engine's own argument resolution joins the report, answered
    for the GPU here when `gpu` is "local" and this host has one, else for the named GPU (h200 when unknown)."""
    if not command:
        raise InputError(
            "give the launch command after --, e.g. eaglewire lint -- python -m sglang.launch_server ..."
        )
    name, version = ([*engine.split("==", 1), None])[:2] if engine else (None, None)
    profile = resolve_gpu(gpu)
    argv = list(command)
    rep = lint(argv, engine=name, engine_version=version, target_arch=target_arch, gpu=profile)
    if engine_code or engine_python:
        from eaglewire.enginecode import engine_check

        on_gpu_host = gpu.strip().lower() == "local" and detect_local().known
        answer = None if on_gpu_host else profile if profile.known else resolve_gpu("h200")
        rep.engine_code = engine_check(argv, rep, answer, engine_python).to_dict()
    rep.evidence = lint_evidence(rep)
    return rep


def lint_evidence(rep: LintReport) -> dict[str, str]:
    """What the lint verdict rests on, strongest first: the installed engine's own argument code run on this very
    command (`model-code`); the rules that fired, every one seen in a running engine (`engine`) or in a record of
    the release's own code executed (`model-code`, where one of them rests on such a record); else the rules
    read at source (`read`: at this release, or at the nearest releases read for flags whose rows cover it), or
    `none` where no release of the engine was read for flags."""
    code = rep.engine_code
    if code is not None and not code.get("unavailable"):
        return {"level": "model-code", "basis": f"model code: {rep.engine} {code.get('version')}'s own argument "
                "code, run on this command"}  # fmt: skip
    version = Version(rep.version)
    rows = match(RULES, Spec(rep.engine, version))
    # the verdict rests on the problems where there are any, else on every row that fired
    deciding = {c.rule for c in (rep.problems or rep.changes)}
    fired = [r for r in rows if r.name in deciding]
    if fired and all(r.observed for r in fired):  # the weakest of the fired rows' records
        level = "engine" if all(r.level == "engine" for r in fired) else "model-code"
        said = sorted({f"model code of {rep.engine} {rep.version}, executed: {r.observed.removeprefix('model-code:').strip()}"
                       if r.level == "model-code" else f"observed: {r.observed}" for r in fired})  # fmt: skip
        return {"level": level, "basis": "; ".join(said)}
    read = sorted({Version(v) for r in rows for v in r.checked})
    if version in read:
        return {"level": "read", "basis": f"read at source ({rep.engine} {rep.version}: flag rules)"}
    near = " and ".join(
        str(v) for v in [v for v in read if v < version][-1:] + [v for v in read if v > version][:1]
    )
    return {"level": "read" if read else "none",
            "basis": f"read at source ({rep.engine} {near or 'none'}: the releases read for flag rules that cover "
                     f"{rep.version}); `lint --engine-code` runs the installed engine's own argument code"}  # fmt: skip


def lint_verdict(rep: LintReport) -> str:
    """The report's verdict, or "problem" when the installed engine's own resolution disagrees with the rules."""
    code = rep.engine_code
    return "problem" if code is not None and not code["agrees"] and not code["unavailable"] else rep.verdict
