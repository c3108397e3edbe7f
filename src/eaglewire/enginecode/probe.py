"""Run an installed engine's own argument resolution on launch commands; runs INSIDE the engine's Python.

    python probe.py REQUEST.json RESULT.json

This file is a script, not part of the eaglewire package import graph: it imports only the engine (and torch,
through it) and the standard library, so it runs in an engine venv that has no eaglewire. The request names the
engine, the GPU to answer for (or null: ask the real GPU), and the commands (argv after the program, env). The
result holds, per command, whether the engine's argument code accepts it, the error it raises (type, message,
and the engine file:line that raised it) and the effective speculative fields.

What is answered when a GPU profile is given (docs/engine-oracle.md): after every engine module is imported (so
import-time code takes its CPU path), torch.cuda.is_available / is_initialized / device_count /
get_device_capability / get_device_name / get_device_properties / mem_get_info / current_device,
torch.version.cuda, SGLang's nvidia-smi memory probe `get_nvgpu_memory_capacity` and its `has_flashinfer` fact
(flashinfer ships with SGLang on a GPU host); SGLang's lru_cache'd probes are cleared. SGLang's platform object stays the
base one resolved at import (its CUDA platform needs sgl_kernel); the probes behind `get_platform()` read torch. vLLM runs on its CpuPlatform (its speculative config does not ask the GPU).
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import io
import json
import logging
import os
import sys
import traceback
from types import SimpleNamespace
from typing import Any

SG_FIELDS = (
    "speculative_algorithm", "speculative_draft_model_path", "speculative_num_steps", "speculative_eagle_topk",
    "speculative_num_draft_tokens", "speculative_adaptive", "max_running_requests", "attention_backend",
    "decode_attention_backend", "prefill_attention_backend", "page_size", "disable_overlap_schedule",
    "enable_mixed_chunk", "tp_size", "dp_size", "enable_dp_attention", "device",
    "speculative_draft_model_quantization", "quantization", "context_length",
)  # fmt: skip
VL_FIELDS = (
    "method", "model", "num_speculative_tokens", "draft_tensor_parallel_size", "prompt_lookup_min",
    "prompt_lookup_max", "quantization", "revision", "disable_padded_drafter_batch",
)  # fmt: skip


def _where(exc: BaseException, package: str) -> str | None:
    """The innermost frame of the engine package that raised: file (relative to the package) and line."""
    found = None
    for frame in traceback.extract_tb(exc.__traceback__):
        marker = f"/{package}/"
        if marker in frame.filename:
            found = f"{package}/{frame.filename.split(marker, 1)[1]}:{frame.lineno}"
    return found


def _error(exc: BaseException, package: str) -> dict:
    return {
        "type": type(exc).__name__,
        "message": " ".join(str(exc).split())[:400],
        "where": _where(exc, package),
    }


def _plain(value: Any) -> Any:
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    return str(value)


@contextlib.contextmanager
def _env(env: dict[str, str]):
    saved = {k: os.environ.get(k) for k in env}
    os.environ.update(env)
    try:
        yield
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def answer_gpu(gpu: dict) -> list[str]:
    """Make torch report the GPU in `gpu` (name, capability, memory_mib, count, cuda). Returns what was answered."""
    import torch

    props = SimpleNamespace(
        name=gpu["name"], major=gpu["capability"][0], minor=gpu["capability"][1],
        total_memory=gpu["memory_mib"] * 1024 * 1024, multi_processor_count=gpu.get("sms", 132),
        gcnArchName="", uuid="GPU-00000000", L2_cache_size=50 * 1024 * 1024,
    )  # fmt: skip
    count = gpu.get("count", 8)
    answers = {
        "is_available": lambda: True,
        "is_initialized": lambda: True,
        "device_count": lambda: count,
        "get_device_capability": lambda device=None: tuple(gpu["capability"]),
        "get_device_name": lambda device=None: gpu["name"],
        "get_device_properties": lambda device=None: props,
        "mem_get_info": lambda device=None: (props.total_memory, props.total_memory),
        "current_device": lambda: 0,
    }
    for name, fn in answers.items():
        setattr(torch.cuda, name, fn)
    torch.version.cuda = gpu.get("cuda", "12.9")
    return [f"torch.cuda.{n}" for n in answers] + ["torch.version.cuda"]


# ---- SGLang ----------------------------------------------------------------------------------------------------


SG_PREIMPORT = (
    "sglang.srt.server_args", "sglang.srt.arg_groups", "sglang.srt.speculative.spec_info",
    "sglang.srt.speculative.adaptive_spec_params", "sglang.srt.kernel_plugins.nvidia.binding",
    "sglang.srt.kernel_plugins.amd.binding", "sglang.srt.model_loader", "sglang.srt.configs.model_config",
)  # fmt: skip


def _sglang_setup(gpu: dict | None) -> tuple[str, list[str]]:
    """Import every module the resolution pipeline imports lazily, then answer the GPU."""
    import importlib
    import pkgutil

    import sglang

    for name in SG_PREIMPORT:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:  # a module of another release: nothing to pre-import
            if exc.name is None or not name.startswith(exc.name):
                raise
            continue
        for info in pkgutil.walk_packages(getattr(module, "__path__", []), name + "."):
            with contextlib.suppress(Exception):
                importlib.import_module(info.name)
    answered: list[str] = []
    if gpu is not None:
        answered = answer_gpu(gpu)
        from sglang.srt.utils import common

        common.get_nvgpu_memory_capacity = lambda: float(gpu["memory_mib"])
        common.is_flashinfer_available = lambda: True
        answered += ["sglang get_nvgpu_memory_capacity", "sglang has_flashinfer (is_flashinfer_available)"]
        for module in list(sys.modules.values()):
            if module is None or not getattr(module, "__name__", "").startswith("sglang"):
                continue
            for value in list(vars(module).values()):
                if type(value) is functools._lru_cache_wrapper:  # never getattr: lazy proxies import
                    value.cache_clear()
    return sglang.__version__, answered


def _sglang_one(argv: list[str]) -> dict:
    from sglang.srt.arg_groups.overrides import resolved_view
    from sglang.srt.server_args import prepare_server_args

    out: dict[str, Any] = {"starts": False, "error": None, "fields": {}}
    try:
        with contextlib.redirect_stdout(io.StringIO()):
            args = prepare_server_args(argv)
    except SystemExit as exc:  # argparse
        out["error"] = {"type": "SystemExit", "message": f"argparse exit {exc.code}", "where": "argparse"}
        return out
    except Exception as exc:
        out["error"] = _error(exc, "sglang")
        return out
    try:
        args.resolve_once()
        out["starts"] = True
    except Exception as exc:
        out["error"] = _error(exc, "sglang")
    try:
        view = resolved_view(args)
        out["fields"] = {f: _plain(getattr(view, f, None)) for f in SG_FIELDS}
    except Exception as exc:  # a partial record: report what the raw record holds
        out["fields"] = {f: _plain(getattr(args, f, None)) for f in SG_FIELDS}
        out["fields_note"] = f"resolved_view failed: {type(exc).__name__}"
    return out


# ---- vLLM ------------------------------------------------------------------------------------------------------


def _vllm_setup(gpu: dict | None) -> tuple[str, list[str]]:
    import vllm
    from vllm import platforms

    answered = []
    if gpu is not None or platforms.current_platform.is_unspecified():
        from vllm.platforms.cpu import CpuPlatform

        platforms.current_platform = CpuPlatform()
        answered.append("vllm.platforms.current_platform = CpuPlatform()")
        # 0.34.0+ refuses an x86 CPU without triton-cpu (platforms/cpu.py:242-243): a stand-in for a GPU host's
        # config, so the requirement is answered as met
        if "requires Triton (triton-cpu)" in inspect.getsource(CpuPlatform.check_and_update_config):
            import vllm.triton_utils as triton_utils

            triton_utils.HAS_TRITON = True
            answered.append("the x86 CPU platform's triton-cpu requirement answered as met (HAS_TRITON)")
    return vllm.__version__, answered


def _vllm_one(argv: list[str]) -> dict:
    from vllm.engine.arg_utils import AsyncEngineArgs, EngineArgs
    from vllm.entrypoints.cli.serve import ServeSubcommand
    from vllm.utils.argparse_utils import FlexibleArgumentParser

    out: dict[str, Any] = {"starts": False, "error": None, "spec_error": None, "fields": {}}
    parser = FlexibleArgumentParser()
    ServeSubcommand().subparser_init(parser.add_subparsers(dest="subparser"))
    try:
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            args = parser.parse_args(["serve", *argv])
    except SystemExit as exc:
        out["error"] = {"type": "SystemExit", "message": f"argparse exit {exc.code}", "where": "argparse"}
        return out
    if getattr(args, "model_tag", None):
        args.model = args.model_tag
    built: dict[str, Any] = {}
    original = EngineArgs.create_speculative_config

    def spy(self, *a, **k):  # the real function; only its result or error is kept
        try:
            built["config"] = original(self, *a, **k)
        except Exception as exc:
            built["error"] = exc
            raise
        return built["config"]

    EngineArgs.create_speculative_config = spy
    try:
        AsyncEngineArgs.from_cli_args(args).create_engine_config()
        out["starts"] = True
    except Exception as exc:
        out["error"] = _error(exc, "vllm")
    finally:
        EngineArgs.create_speculative_config = original
    if "error" in built:
        out["spec_error"] = _error(built["error"], "vllm")
    config = built.get("config")
    if config is not None:
        out["fields"] = {f: _plain(getattr(config, f, None)) for f in VL_FIELDS}
    out["spec_built"] = "config" in built or "error" in built
    return out


ENGINES = {"sglang": (_sglang_setup, _sglang_one), "vllm": (_vllm_setup, _vllm_one)}


def main(request_path: str, result_path: str) -> int:
    with open(request_path) as f:
        request = json.load(f)
    engine = request["engine"]
    setup, one = ENGINES[engine]
    logging.disable(logging.WARNING)
    result: dict[str, Any] = {"engine": engine, "gpu": request.get("gpu"), "results": []}
    try:
        version, answered = setup(request.get("gpu"))
    except ImportError as exc:
        result["error"] = f"{engine} is not importable in {sys.executable}: {exc}"
    else:
        result["version"], result["answered"] = version, answered
        for command in request["commands"]:
            with _env(command.get("env") or {}):
                result["results"].append(one(list(command["argv"])))
    tmp = result_path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(result, f)
    os.replace(tmp, result_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
