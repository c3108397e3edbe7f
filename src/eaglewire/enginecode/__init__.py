"""Run an installed engine's own argument resolution on launch commands, beside eaglewire's table.

Why: the lint rules are a hand encoding of SGLang's and vLLM's code; where the engine itself is importable (on the
serving host, or in the test venvs of `make test-engines`), its own answer settles any doubt. The engine runs in
a subprocess of the given Python (`probe.py`, which never imports eaglewire), so its imports and the GPU answers
stay out of this process; nothing here imports torch or the engine.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from eaglewire.engines.parse import parse_launch
from eaglewire.errors import InputError
from eaglewire.rules.gpus import GpuProfile
from eaglewire.rules.launch import LaunchCommand, LintReport, Settings

PROBE = Path(__file__).with_name("probe.py")
# eaglewire's effective setting -> the engine's own field (probe.py SG_FIELDS / VL_FIELDS).
COMPARED = {
    "sglang": {
        "algorithm": "speculative_algorithm", "num_steps": "speculative_num_steps",
        "topk": "speculative_eagle_topk", "num_draft_tokens": "speculative_num_draft_tokens",
        "draft_model": "speculative_draft_model_path", "max_running_requests": "max_running_requests",
    },
    "vllm": {
        "method": "method", "num_speculative_tokens": "num_speculative_tokens", "draft_model": "model",
        "draft_tensor_parallel_size": "draft_tensor_parallel_size",
    },
}  # fmt: skip


@dataclass
class EngineRun:
    """What the engine's own code said about each command; `error` set when it could not be run at all."""

    engine: str
    python: str
    version: str | None = None
    gpu: dict | None = None
    answered: list[str] = field(default_factory=list)
    results: list[dict] = field(default_factory=list)
    error: str | None = None

    def to_dict(self) -> dict:
        return asdict(self)


def engine_argv(cmd: LaunchCommand) -> list[str]:
    """The arguments the engine's parser sees: after the program; SGLang gets the model as --model-path."""
    tokens = list(cmd.argv)
    start = len(cmd.env) + sum(1 for t in tokens[: len(cmd.env) + 3] if t in ("env", "nohup", "exec"))
    if cmd.entry:
        start = tokens.index(cmd.entry[0], start) + len(cmd.entry)
    rest = tokens[start:]
    if cmd.engine == "sglang" and cmd.model is not None and not cmd.model_option:
        rest = ["--model-path", *rest]
    return rest


def run_engine(
    engine: str,
    commands: list[list[str]],
    gpu: GpuProfile | None,
    python: str | None = None,
    timeout: float = 3600.0,
) -> EngineRun:
    """Run `commands` (full launch commands) through the engine installed in `python` (default: this one).

    `gpu` None asks the real GPU (a GPU host); a profile answers the GPU queries as that GPU.
    """
    python = python or sys.executable
    run = EngineRun(engine, python, gpu=gpu.probe_request() if gpu is not None else None)
    request = {
        "engine": engine,
        "gpu": run.gpu,
        "commands": [
            {"argv": engine_argv(cmd), "env": cmd.env} for cmd in (parse_launch(c, engine) for c in commands)
        ],
    }
    with tempfile.TemporaryDirectory(prefix="eaglewire-engine-") as tmp:
        req, res = Path(tmp) / "request.json", Path(tmp) / "result.json"
        req.write_text(json.dumps(request))
        try:
            proc = subprocess.run(
                [python, str(PROBE), str(req), str(res)],
                capture_output=True, text=True, timeout=timeout,
                env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
            )  # fmt: skip
        except FileNotFoundError:
            raise InputError(f"--engine-python {python}: no such interpreter") from None
        except subprocess.TimeoutExpired:
            run.error = f"{engine}'s argument code did not finish within {timeout:.0f} s"
            return run
        if not res.is_file():
            tail = (proc.stderr or proc.stdout or "").strip().splitlines()[-1:] or ["no output"]
            run.error = f"{engine} probe failed in {python}: {tail[0]}"
            return run
        data: dict[str, Any] = json.loads(res.read_text())
    run.version, run.error = data.get("version"), data.get("error")
    run.answered, run.results = data.get("answered", []), data.get("results", [])
    return run


def _same(a: Any, b: Any) -> bool:
    norm = [v.upper() if isinstance(v, str) and v.isalpha() else v for v in (a, b)]
    return norm[0] == norm[1]


def field_differences(engine: str, effective: Settings, fields: dict) -> list[tuple[str, Any, Any]]:
    """(setting, eaglewire's value, the engine's value) for every compared setting that differs."""
    return [
        (ours, getattr(effective, ours, None), fields.get(theirs))
        for ours, theirs in COMPARED[engine].items()
        if not _same(getattr(effective, ours, None), fields.get(theirs))
    ]


def engine_error(result: dict) -> dict | None:
    """The refusal the engine's argument code raised (vLLM: the speculative config's own error first)."""
    return result.get("error") or result.get("spec_error")


@dataclass
class EngineCheck:
    """`lint --engine-code`: the installed engine's own resolution of one command, beside eaglewire's table."""

    engine: str
    version: str | None
    python: str
    gpu_answered: str | None  # the GPU profile answered, or None (the real GPU was asked)
    starts: bool | None = None
    error: dict | None = None
    fields: dict = field(default_factory=dict)
    differences: list[dict] = field(default_factory=list)
    verdict: str = ""
    unavailable: str | None = None  # why the engine could not be run (not installed, ...)

    @property
    def agrees(self) -> bool:
        return self.unavailable is None and not self.differences

    def to_dict(self) -> dict:
        return {**asdict(self), "agrees": self.agrees}


def engine_check(
    argv: list[str], report: LintReport, gpu: GpuProfile | None, python: str | None
) -> EngineCheck:
    """Run the engine's own argument code on `argv` and compare it with `report` (what eaglewire's table says)."""
    run = run_engine(report.engine, [argv], gpu, python)
    check = EngineCheck(report.engine, run.version, run.python, gpu.key if gpu is not None else None)
    if run.error or not run.results:
        check.unavailable = run.error or "the engine returned no result"
        check.verdict = f"{report.engine}'s own code not run: {check.unavailable}"
        return check
    result = run.results[0]
    check.starts, check.error, check.fields = bool(result["starts"]), engine_error(result), result["fields"]
    if check.starts != report.starts_args:
        check.differences.append(
            {"setting": "starts", "eaglewire": report.starts_args, "engine": check.starts}
        )
    if check.starts:
        check.differences += [
            {"setting": name, "eaglewire": ours, "engine": theirs}
            for name, ours, theirs in field_differences(report.engine, report.effective, check.fields)
        ]
    check.verdict = (
        f"{report.engine} {run.version}'s own argument code agrees with eaglewire's table"
        if not check.differences
        else f"eaglewire's table is out of date for {report.engine} {run.version}: "
        + "; ".join(
            f"{d['setting']} {d['eaglewire']} (eaglewire) vs {d['engine']} (engine)"
            for d in check.differences
        )
    )
    return check
