"""The draft model's settings as an engine release builds them; runs INSIDE an engine venv (no eaglewire there).

    python draft_probe.py REQUEST.json RESULT.json

REQUEST: {"engine": "vllm", "cases": [{"name": ..., "engine_args": {EngineArgs keyword arguments}}]}.
RESULT: per case, what the release's own code made of the launch:

- `config`: its engine config (EngineArgs.create_engine_config): the target's and the draft's quantization, dtype
  and context length, the draft's tensor parallel size; or the engine's error.
- `built`: the draft model as the release's loader builds it. The V1 proposer's own `load_model` runs (on a proposer
  holding only the engine config); every linear layer its model code makes is recorded with the quantization
  config the code passed it and the tensor parallel size of the config it is built under, until the first
  projection of the draft's decoder layer (`STOP`), where the build stops (no weights are made or read). A release
  whose proposer does not load that way (or a bare one) is asked through the loader entry the proposer calls,
  `get_model(vllm_config=..., model_config=draft)`; `entry` names which ran.

What is answered: vLLM runs on `CpuPlatform()` (capture_probe.setup) with every quantization method allowed
(`supported_quantization = []`, what the CUDA platform allows) and no device capability (the capability checks
of quantization methods are skipped, as for a GPU that has it); the tensor parallel group is one rank (a stand-in:
the build makes no collective call before it stops).
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from types import SimpleNamespace
from typing import Any

from capture_probe import CompiledOp, engine_error, setup, triton_cpu_stand_in

# the first projection of a decoder layer (attention): the draft's own layer, whose quantization is the question
STOP = ("qkv_proj", "q_proj", "q_a_proj", "fused_qkv_a_proj", "q_b_proj", "kv_a_proj_with_mqa")
ANSWERED = ["vllm.platforms.current_platform = CpuPlatform()", "supported_quantization = [] (every method)",
            "tensor parallel group: one rank (stand-in)", "the registry inspects model classes in this process",
            "V0 or V1: EngineArgs._is_v1_supported_oracle (releases before 0.10) asked as on a CUDA GPU of capability "
    ">= 8.0",
    "GPTQ/AWQ are not taken over by the CPU build's IPEX kernels (IPEXConfig.override_quantization_method)",
    "V0 draft build: vLLM's compiled ops (torch.ops._C) are handles the build binds but never calls",
    "0.34.0+: the x86 CPU platform's triton-cpu requirement answered as met (HAS_TRITON; the config is a GPU's)"]  # fmt: skip


class _Stop(Exception):
    """The draft's decoder layer was reached: the build stops there."""


def _error(exc: BaseException) -> dict:
    return engine_error(exc, "vllm")


def _quant(config: Any) -> dict | None:
    if config is None:
        return None
    name = config.get_name() if hasattr(config, "get_name") else None
    return {"class": type(config).__name__, "name": name}


def _model(mc: Any) -> dict:
    hf = mc.hf_config
    return {"quantization": mc.quantization, "dtype": str(mc.dtype).replace("torch.", ""),
            "max_model_len": mc.max_model_len, "model_type": getattr(hf, "model_type", None),
            "max_position_embeddings": getattr(hf, "max_position_embeddings", None),
            "architectures": list(getattr(hf, "architectures", None) or [])}  # fmt: skip


def _tp_stand_in() -> None:
    from vllm.distributed import parallel_state as ps

    one = SimpleNamespace(world_size=1, rank_in_group=0, rank=0, is_first_rank=True, is_last_rank=True,
                          local_rank=0, ranks=[0])  # fmt: skip
    for name in ("_TP", "_PP", "_EP", "_DP"):
        if getattr(ps, name, None) is None:
            setattr(ps, name, one)


def _spy(built: list[dict], stop: bool = True):
    """Wrap LinearBase.__init__: record each linear's prefix, the quantization config passed, the TP size of the
    config it is built under; stop at the draft's first decoder projection (unless `stop` is False)."""
    from vllm.config import get_current_vllm_config
    from vllm.model_executor.layers.linear import LinearBase

    original = LinearBase.__init__
    signature = inspect.signature(original)

    def init(self, *args, **kwargs):
        bound = signature.bind_partial(self, *args, **kwargs).arguments
        prefix = bound.get("prefix", "") or ""
        try:
            tp = get_current_vllm_config().parallel_config.tensor_parallel_size
        except Exception:  # no current config in this release's build path
            tp = None
        built.append({"prefix": prefix, "layer": type(self).__name__, "quant_config": _quant(bound.get("quant_config")),
                      "built_under_tensor_parallel_size": tp})  # fmt: skip
        if stop and prefix.rsplit(".", 1)[-1] in STOP:
            raise _Stop
        return original(self, *args, **kwargs)

    LinearBase.__init__ = init
    return lambda: setattr(LinearBase, "__init__", original)


def _build(config: Any) -> dict:
    """The draft as the release's proposer builds it: the linears its code made, up to its first decoder
    projection."""
    import torch

    spec = config.speculative_config
    draft = spec.draft_model_config
    out: dict[str, Any] = {"entry": None, "linears": [], "error": None}
    restore = _spy(out["linears"])
    try:
        try:
            from vllm.v1.spec_decode.eagle import EagleProposer
        except ImportError:
            EagleProposer = None
        if not hasattr(EagleProposer, "load_model"):
            EagleProposer = None
        attempts = []
        if EagleProposer is not None:
            proposer = EagleProposer.__new__(EagleProposer)
            attrs = {"vllm_config": config, "speculative_config": spec, "draft_model_config": draft,
                     "method": spec.method, "device": torch.device("cpu"), "dtype": config.model_config.dtype,
                     "runner": None, "num_speculative_tokens": spec.num_speculative_tokens}  # fmt: skip
            for key, value in attrs.items():
                setattr(proposer, key, value)
            attempts.append(("EagleProposer.load_model", lambda: proposer.load_model(target_model=None)))
        from vllm.model_executor.model_loader import get_model

        attempts.append(("get_model(vllm_config, model_config=draft)",
                         lambda: get_model(vllm_config=config, model_config=draft)))  # fmt: skip
        out["attempts"] = []
        for entry, call in attempts:
            del out["linears"][:]
            try:
                call()
            except _Stop:
                out["entry"], out["error"] = entry, None
                break
            except Exception as exc:
                out["entry"], out["error"] = entry, _error(exc)
                if out["linears"]:  # the release's code ran into the draft's layers: its answer stands
                    break
                out["attempts"].append({"entry": entry, "error": out["error"]})
            else:
                out["entry"] = entry
                break
    finally:
        restore()
    if EagleProposer is not None:  # how the proposer builds its draft
        source = inspect.getsource(EagleProposer.load_model)
        out["proposer_builds_with"] = [
            " ".join(line.split()) for line in source.splitlines() if "get_model(" in line or "_cls(" in line
        ]
    out["decoder_projection"] = next(
        (x for x in out["linears"] if x["prefix"].rsplit(".", 1)[-1] in STOP), None
    )
    return out


def _initialize():
    try:  # 0.9.0+
        from vllm.model_executor.model_loader.utils import initialize_model
    except ImportError:  # 0.8.5
        from vllm.model_executor.model_loader.loader import _initialize_model as initialize_model
    return initialize_model


class _CompiledOps:
    """vLLM's compiled ops (`torch.ops._C`), which layers bind when built (0.8.5's SiluAndMul): the release's own
    library does not load beside this torch, and the build calls none of them, so each is a handle that raises if
    called. An op the release uses only where it exists (`hasattr(torch.ops._C, NAME)` anywhere in the package:
    0.34.0 registers fakes for scaled_fp4_quant and the CPU's MoE kernels at import) is absent, as in a build without
    that kernel."""

    def __init__(self) -> None:
        import importlib.util
        import pathlib
        import re

        spec = importlib.util.find_spec("vllm")
        root = pathlib.Path(spec.origin).parent if spec is not None and spec.origin else None
        found: set[str] = set()
        for path in root.rglob("*.py") if root is not None else ():
            text = path.read_text(errors="replace")
            if "hasattr(torch.ops._C," in text:
                found.update(re.findall(r'hasattr\(torch\.ops\._C,\s*"(\w+)"\)', text))
        self._optional = frozenset(found)

    def __getattr__(self, name: str):
        if name.startswith("__") or name.startswith("_optional") or name in self._optional:
            raise AttributeError(name)
        return CompiledOp(name)


def _build_v0(config: Any, head_weights: dict | None) -> dict:
    """The draft as the V0 engine's spec-decode worker builds it (spec_decode_worker.create_spec_worker: the engine
    config with the draft's model config, its quantization config and parallel config), the whole model (it is
    small), then the EAGLE-3 head's fc weight (`head_weights`: name -> shape, zeros) handed to the model's own
    load_weights, as its loader would: the release's answer to an EAGLE-3 checkpoint, or its error."""
    import copy

    import torch
    from vllm.config import VllmConfig, set_current_vllm_config

    spec = config.speculative_config
    draft = copy.deepcopy(config)
    draft.model_config = spec.draft_model_config
    draft.quant_config = VllmConfig._get_quantization_config(draft.model_config, config.load_config)
    draft.parallel_config = spec.draft_parallel_config
    out: dict[str, Any] = {"entry": "V0 spec_decode_worker.create_spec_worker: initialize_model(draft config)",
                           "linears": [], "error": None}  # fmt: skip
    built: list[dict] = []
    restore = _spy(built, stop=False)
    ops = torch.ops.__dict__.get("_C")
    torch.ops._C = _CompiledOps()
    try:
        with set_current_vllm_config(draft), torch.device("cpu"):
            model = _initialize()(vllm_config=draft)
    except Exception as exc:
        out["error"] = _error(exc)
        return out
    finally:
        restore()
        if ops is None:
            torch.ops.__dict__.pop("_C", None)
        else:
            torch.ops._C = ops
    out["linears"] = built
    out["model_class"] = type(model).__name__
    fc = getattr(model, "fc", None)
    out["fc"] = None if fc is None else {"in_features": fc.in_features, "out_features": fc.out_features}
    out["decoder_projection"] = next((x for x in built if x["prefix"].rsplit(".", 1)[-1] in STOP), None)
    if head_weights:
        weights = [(name, torch.zeros(shape, dtype=model.fc.weight.dtype if fc is not None else torch.float32))
                   for name, shape in head_weights.items()]  # fmt: skip
        try:
            model.load_weights(iter(weights))
            out["head_load"] = {"loaded": True, "error": None}
        except Exception as exc:
            out["head_load"] = {"loaded": False, "error": _error(exc)}
    return out


GPU_ANSWERS = {"is_cuda": lambda: True, "is_cpu": lambda: False, "supports_v1": lambda *a, **k: True,
               "has_device_capability": lambda *a, **k: True, "device_name": "cuda"}  # fmt: skip


def _oracle_as_on_a_gpu() -> None:
    """Releases before 0.10 choose the V0 or the V1 engine per launch (EngineArgs._is_v1_supported_oracle), and
    on a CPU platform that choice is V0 whatever the launch: the oracle is asked as on a CUDA GPU of compute
    capability 8.0 or more, the host the record answers for; the platform is itself again when it returns."""
    from vllm import platforms
    from vllm.engine.arg_utils import EngineArgs

    original = getattr(EngineArgs, "_is_v1_supported_oracle", None)
    if original is None:
        return

    from vllm.engine import arg_utils

    def oracle(self, *args, **kwargs):
        # the platform object the oracle's module bound at import (0.8.5: `from vllm.platforms import
        # current_platform`), and the one set since
        found = (platforms.current_platform, getattr(arg_utils, "current_platform", None))
        seen = list({id(p): p for p in found if p is not None}.values())
        for platform in seen:
            for name, value in GPU_ANSWERS.items():
                setattr(platform, name, value)
        try:
            return original(self, *args, **kwargs)
        finally:
            for platform in seen:
                for name in GPU_ANSWERS:
                    platform.__dict__.pop(name, None)

    EngineArgs._is_v1_supported_oracle = oracle


def _vllm_case(case: dict) -> dict:
    from vllm.engine.arg_utils import EngineArgs

    out: dict[str, Any] = {"name": case["name"], "config": None, "built": None, "error": None}
    # releases before 0.10 set VLLM_USE_V1 while building a config: each case decides (its `env`, as launched)
    os.environ.pop("VLLM_USE_V1", None)
    os.environ.update(case.get("env") or {})
    try:
        config = EngineArgs(**case["engine_args"]).create_engine_config()
    except Exception as exc:
        out["error"] = _error(exc)
        return out
    spec = config.speculative_config
    out["config"] = {"target": _model(config.model_config) | {"quant_config": _quant(config.quant_config),
                                                                 "tensor_parallel_size": config.parallel_config.tensor_parallel_size}}  # fmt: skip
    if spec is None:
        return out
    out["config"]["method"] = spec.method
    try:
        from vllm import envs

        out["config"]["v1"] = bool(envs.VLLM_USE_V1)
    except Exception:
        out["config"]["v1"] = None
    out["config"]["draft"] = _model(spec.draft_model_config) | {
        "tensor_parallel_size": spec.draft_parallel_config.tensor_parallel_size
    }
    if out["config"]["v1"] is False:  # V0's spec-decode worker builds this draft with a config of its own
        out["built"] = _build_v0(config, case.get("head_weights"))
    else:
        out["built"] = _build(config)
    return out


def main(request_path: str, result_path: str) -> int:
    with open(request_path) as f:
        request = json.load(f)
    assert request["engine"] == "vllm", "the draft probe answers for vLLM"
    setup("vllm")
    from vllm import platforms

    platforms.current_platform.supported_quantization = []
    try:  # the CPU build's own GPTQ/AWQ kernels (IPEX) take those checkpoints over on a CPU only: not on a GPU
        from vllm.model_executor.layers.quantization.ipex_quant import IPEXConfig

        IPEXConfig.override_quantization_method = classmethod(lambda cls, *args, **kwargs: None)
    except ImportError:
        pass
    platforms.current_platform.get_device_capability = lambda *a, **k: None
    _tp_stand_in()
    _oracle_as_on_a_gpu()
    triton_cpu_stand_in()
    inspect_in_process()
    write_result(result_path, ANSWERED, [_vllm_case(case) for case in request["cases"]])
    return 0


def inspect_in_process() -> None:
    """The registry inspects a model class in a fresh interpreter, which has none of setup()'s shims: the same
    inspection, in this process."""
    from vllm.model_executor.models import registry

    if hasattr(registry, "_run_in_subprocess"):
        registry._run_in_subprocess = lambda fn: fn()


def write_result(result_path: str, answered: list[str], results: Any) -> None:
    """The probe's result file, written whole or not at all."""
    import vllm

    with open(result_path + ".tmp", "w") as f:
        json.dump(
            {"engine": "vllm", "version": vllm.__version__, "answered": answered, "results": results}, f
        )
    os.replace(result_path + ".tmp", result_path)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
