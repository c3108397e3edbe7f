"""Which embedding and lm_head a vLLM release's EAGLE proposer gives the draft; runs INSIDE an engine venv.

    python weights_probe.py REQUEST.json RESULT.json

REQUEST: {"target": DIR, "drafters": {name: DIR}}. RESULT: per drafter, after the release's own
`EagleProposer.load_model(target)`, or Model Runner V2's `load_eagle_model(target, config)` where the V1 runner is
gone (0.34.0 on; `entry` names which ran): the draft built and its checkpoint loaded by the release's loader, then
the sharing code, whether the draft's `embed_tokens` and `lm_head` are the target's modules or its own; or
the release's error.

The target is a stand-in holding only what the proposer reads of it: `model.embed_tokens` and `lm_head`, with the
target checkpoint's own weights (an unquantized single-rank target, as the tier's). What is answered besides:
vLLM runs on `CpuPlatform()` as a V1 engine (VLLM_USE_V1=1) in bfloat16 (0.8.5 refuses float32 on V1), one rank
(draft_probe's stand-in groups), the accelerator calls a CPU model runner makes are no-ops (the CPU runner's own
`_set_torch_accelerator_to_noop` where the release has it), and compiled ops the release's library cannot provide
beside this torch are handles that are bound but never called (draft_probe._CompiledOps).
"""

from __future__ import annotations

import importlib
import inspect
import json
import os
import sys
from typing import Any

from capture_probe import engine_error, setup, triton_cpu_stand_in
from draft_probe import (
    _CompiledOps,
    _oracle_as_on_a_gpu,
    _tp_stand_in,
    inspect_in_process,
    write_result,
)

ANSWERED = ["vllm.platforms.current_platform = CpuPlatform(), VLLM_USE_V1=1, dtype bfloat16",
            "tensor parallel group: one rank (stand-in)",
            "V0 or V1 (releases before 0.10): EngineArgs._is_v1_supported_oracle asked as on a CUDA GPU",
            "the target: its embed_tokens and lm_head weights only (a stand-in module)",
            "torch.accelerator calls: no-ops, as vLLM's CPU model runner makes them; host buffers not pinned",
            "vLLM's compiled ops, where its library does not load: handles bound, never called"]  # fmt: skip


def _noop_accelerator() -> None:
    import torch

    try:
        from vllm.v1.worker.cpu_model_runner import _set_torch_accelerator_to_noop

        _set_torch_accelerator_to_noop()
        return
    except ImportError:
        pass
    accel = getattr(torch, "accelerator", None)
    if accel is not None:
        accel.empty_cache = lambda *a, **k: None
        accel.synchronize = lambda *a, **k: None


def _no_pinned_memory() -> None:
    """Host buffers without pinned memory, as on a CPU: 0.2x-0.3x compute `PIN_MEMORY` once at import (with the
    platform of the moment) and bind it by name and as a default; a CPU has no allocator for it."""
    for name in ("vllm.utils.torch_utils", "vllm.utils"):
        try:
            importlib.import_module(name)
        except ImportError:
            pass
    for name, module in list(sys.modules.items()):
        if name.startswith("vllm") and getattr(module, "PIN_MEMORY", None) is True:
            module.PIN_MEMORY = False
    try:
        from vllm.v1.utils import CpuGpuBuffer
    except ImportError:
        return
    defaults = CpuGpuBuffer.__init__.__kwdefaults__ or {}
    if "pin_memory" in defaults:
        defaults["pin_memory"] = False


def _target(path: str, dtype) -> Any:
    import torch
    from safetensors.torch import load_file
    from torch import nn

    tensors = load_file(os.path.join(path, "model.safetensors"))
    target, inner = nn.Module(), nn.Module()
    target.model = inner
    inner.embed_tokens = nn.Embedding.from_pretrained(tensors["model.embed_tokens.weight"].to(dtype))
    target.lm_head = nn.Linear(1, 1, bias=False)
    target.lm_head.weight = nn.Parameter(tensors["lm_head.weight"].to(dtype), requires_grad=False)
    target.config = None
    del torch
    return target


def _load(config: Any, stand_in: Any) -> tuple[Any, str]:
    """The draft as the release's EAGLE code loads it beside the target: the V1 proposer's `load_model`, or where the
    release has no V1 runner (0.34.0 on) Model Runner V2's `load_eagle_model`, which its EagleSpeculator calls."""
    import torch

    try:
        from vllm.v1.spec_decode.eagle import EagleProposer
    except ImportError:
        from vllm.v1.worker.gpu.spec_decode.eagle.utils import load_eagle_model

        return load_eagle_model(stand_in, config), "mrv2 load_eagle_model"
    params = inspect.signature(EagleProposer.__init__).parameters
    kwargs = {"runner": None} if "runner" in params else {}
    proposer = EagleProposer(config, torch.device("cpu"), **kwargs)
    proposer.load_model(stand_in)
    return proposer.model, "v1 EagleProposer.load_model"


def _case(target: str, drafter: str) -> dict:
    from vllm.config import set_current_vllm_config
    from vllm.engine.arg_utils import EngineArgs

    out: dict[str, Any] = {"embedding": None, "lm_head": None, "error": None}
    try:
        args = EngineArgs(model=target, skip_tokenizer_init=True, max_model_len=1024, enforce_eager=True,
                          load_format="auto", dtype="bfloat16",
                          speculative_config={"method": "eagle3", "model": drafter, "num_speculative_tokens": 3})  # fmt: skip
        config = args.create_engine_config()
        stand_in = _target(target, config.model_config.dtype)
        with set_current_vllm_config(config):
            model, out["entry"] = _load(config, stand_in)
    except Exception as exc:
        out["error"] = engine_error(exc, "vllm")
        return out
    out["embedding"] = "target" if model.model.embed_tokens is stand_in.model.embed_tokens else "own"
    out["lm_head"] = "target" if getattr(model, "lm_head", None) is stand_in.lm_head else "own"
    return out


def main(request_path: str, result_path: str) -> int:
    with open(request_path) as f:
        request = json.load(f)
    os.environ["VLLM_USE_V1"] = "1"
    setup("vllm")
    _tp_stand_in()
    _oracle_as_on_a_gpu()  # before 0.10 a CPU platform is V0 whatever the launch: the V1 engine is the question
    _noop_accelerator()
    _no_pinned_memory()
    triton_cpu_stand_in()
    import torch

    try:  # the release's compiled library, where it loads beside this torch; else stand-in handles
        importlib.import_module("vllm._C")
    except Exception:
        torch.ops._C = _CompiledOps()
    inspect_in_process()
    results = {name: _case(request["target"], path) for name, path in request["drafters"].items()}
    write_result(result_path, ANSWERED, results)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
