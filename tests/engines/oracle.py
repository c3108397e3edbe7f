"""The engines' own code as the oracle of `lint`: run both on the same commands, compare field by field.

`compare_engine` runs the generated commands through the engine installed in an engine venv (enginecode, one
subprocess for all commands) and through `eaglewire.jobs.lint`, and returns the agreement per effective field
and on start-or-refuse, plus every difference. A refusal counts as decided by the engine's argument code unless
it is an artefact of the CPU test venv (a module that only a GPU install has).
"""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from eaglewire.enginecode import COMPARED, engine_error, field_differences, run_engine
from eaglewire.errors import InputError
from eaglewire.jobs.lint import lint
from eaglewire.rules.gpus import GPUS

# The flag (or config key) each compared field comes from: the rules that changed it are named in a difference.
FIELD_FLAGS = {
    "algorithm": "--speculative-algorithm", "num_steps": "--speculative-num-steps",
    "topk": "--speculative-eagle-topk", "num_draft_tokens": "--speculative-num-draft-tokens",
    "draft_model": "--speculative-draft-model-path", "max_running_requests": "--max-running-requests",
    "method": "--speculative-config.method", "num_speculative_tokens": "--speculative-config.num_speculative_tokens",
    "draft_tensor_parallel_size": "--speculative-config.draft_tensor_parallel_size",
}  # fmt: skip
# What the CPU venv lacks that a GPU host has: a refusal for these reasons is not the engine's argument code.
CPU_ARTEFACTS = ("sgl_kernel", "flashinfer", "vllm._C", "triton", "deep_gemm", "flash_attn")
# Optional packages of the serving host that the test venv does not install: lint warns, the host decides.
HOST_PACKAGES = ("Arctic Inference",)


def _artefact(error: dict | None) -> str | None:
    """Why a refusal is not the engine's argument code deciding, or None when it is."""
    if not error or error.get("type") not in ("ModuleNotFoundError", "ImportError"):
        return None
    text = f"{error.get('type')}: {error.get('message')}"
    if any(a in text for a in CPU_ARTEFACTS):
        return "not decided: the CPU test venv lacks a GPU-only module"
    if any(a in text for a in HOST_PACKAGES):
        return "not decided: an optional package of the serving host (lint warns that it is needed)"
    return None


def compare_engine(
    engine: str,
    commands: list[list[str]],
    python: str,
    gpu: str,
    models: Path | None = None,
    lint_version: str | None = None,
) -> dict:
    """Agreement of `lint --json` with the engine's own resolution on `commands` (full argv, paths filled).

    `lint_version` lints with another version's rows (None: the installed engine's version), e.g. to ask whether
    the newest rows still hold for a newer release."""
    profile = GPUS[gpu]
    run = run_engine(engine, commands, profile, python)
    if run.error:
        return {"engine": engine, "python": python, "gpu": gpu, "error": run.error}
    compared = COMPARED[engine]
    agree: Counter = Counter()
    total: Counter = Counter()
    differences: list[dict] = []
    undecided: list[dict] = []  # refusals the argument code does not decide (environment of the test venv)
    refused_later: Counter = (
        Counter()
    )  # accepted by the argument code, refused by lint at load or first decode
    decided = 0
    for argv, result in zip(commands, run.results, strict=True):
        shown = [a.replace(str(models), "{models}") for a in argv] if models else argv
        try:
            report = lint(argv, engine_version=lint_version or run.version, gpu=gpu)
            lint_starts, effective, lint_error = report.starts_args, report.effective, None
            later = {r: s for r, s in report.failing.items() if s != "args"}
        except InputError as exc:
            lint_starts, effective, lint_error, later = None, None, str(exc), {}
        engine_starts = bool(result["starts"])
        error = engine_error(result)
        cause = _artefact(error)
        if cause is not None:
            undecided.append({"argv": shown, "engine": error, "eaglewire": lint_starts, "cause": cause})
            continue
        decided += 1
        total["starts"] += 1
        if lint_error is not None:
            differences.append(
                {"argv": shown, "field": "exit 2", "engine": engine_starts, "eaglewire": lint_error}
            )
        elif lint_starts == engine_starts:
            agree["starts"] += 1
            for name, stage in later.items():
                refused_later[f"{name} ({stage})"] += 1
        else:
            rules = [r for r, stage in report.failing.items() if stage == "args"] or [
                "no row refuses this (a rule is missing)"
            ]
            differences.append({"argv": shown, "field": "starts", "engine": error or True, "eaglewire": lint_starts,
                                "rules": rules})  # fmt: skip
        if not engine_starts or effective is None:
            continue
        differing = {
            name: (mine, theirs)
            for name, mine, theirs in field_differences(engine, effective, result["fields"])
        }
        for ours in compared:
            total[ours] += 1
            if ours not in differing:
                agree[ours] += 1
                continue
            mine, expected = differing[ours]
            rules = sorted({c.rule for c in report.changes if c.flag == FIELD_FLAGS[ours]}) or [
                f"no row sets {ours} here (a rule is missing)"
            ]
            differences.append(
                {"argv": shown, "field": ours, "engine": expected, "eaglewire": mine, "rules": rules}
            )
    fields = {
        name: {"agree": agree[name], "compared": total[name],
               "rate": round(agree[name] / total[name], 4) if total[name] else None}
        for name in ["starts", *compared]
    }  # fmt: skip
    return {
        "engine": engine, "version": run.version, "gpu": gpu, "python": python, "commands": len(commands),
        "decided_by_argument_code": decided, "answered": run.answered, "fields": fields,
        "refused_after_argument_code": dict(refused_later), "not_decided": undecided, "differences": differences,
    }  # fmt: skip
