"""Which embedding and lm_head an SGLang release's EAGLE worker gives the draft; runs INSIDE an engine venv.

    python weights_probe_sglang.py REQUEST.json RESULT.json

REQUEST: {"target": DIR, "drafters": {name: DIR}}. RESULT: per drafter, after the release's own code has built
and loaded the draft and shared the target's weights with it, whether the draft's `embed_tokens` weight and its
`lm_head` are the target's, its embedding module's (a tied head), or its own; or the release's error.

What runs is the release's: its `ServerArgs` for an EAGLE-3 launch, its `TpModelWorker` building the draft's model
config as the EAGLE worker asks (draft_probe_sglang._worker, up to the ModelRunner), its loader (`get_model`: the
draft class its registry routes the checkpoint to, built and loaded from the checkpoint), then its EAGLE worker's
sharing code: the worker method that calls the draft's `set_embed` (`init_lm_head`, 0.5.x's v2 worker), run on a
worker holding the draft and the target; where the release writes that code inline in the worker's `__init__`
(0.4.5-0.5.x's `EAGLEWorker`), the statements from `embed, head = ...get_embed_and_head()` through the `if` that
calls `set_embed`, taken from its source and run as they stand. The target is an instance of the release's own
target class (made without __init__) holding the zoo target's embedding and lm_head, so its own
`get_embed_and_head` answers. What is answered besides: the device is `cpu`, one rank (the engine's own process
groups, gloo), the speculative algorithm EAGLE3, no hot-token map; SGLang's CPU engine (SGLANG_USE_CPU_ENGINE=1) on
a CPU answered as one with AMX tiles, so the release builds its own CPU layers (only built and loaded: no kernel
runs).
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import os
import sys
import textwrap
from types import SimpleNamespace
from typing import Any

from capture_probe import _bare, _sglang_groups, engine_error, publish, setup
from draft_probe_sglang import ANSWERED as SETTINGS_ANSWERED
from draft_probe_sglang import WORKERS, _context_form, _spy_runner, _worker, answer_as_a_gpu

ANSWERED = ["ServerArgs(device='cpu', speculative_algorithm='EAGLE3', dtype='bfloat16')",
            "TpModelWorker runs up to ModelRunner (the draft's model config, as the EAGLE worker asks it)",
            "process groups: one rank (the engine's own, gloo)",
            "SGLANG_USE_CPU_ENGINE=1; the CPU answered as one with AMX tiles (no kernel runs)",
            SETTINGS_ANSWERED[1], SETTINGS_ANSWERED[2],
            "torch.cuda.empty_cache and synchronize (what set_embed calls after the swap, 0.4.x): no-ops",
            "the target: the release's LlamaForCausalLM made without __init__, holding the zoo target's "
            "embed_tokens and lm_head", "no hot-token map (the drafter's own d2t, where it has one, is its own)"]  # fmt: skip


def _target(path: str, dtype) -> Any:
    """The release's own Llama target class, holding only the target checkpoint's embedding and lm_head."""
    import torch
    from safetensors.torch import load_file
    from sglang.srt.models.llama import LlamaForCausalLM

    tensors = load_file(os.path.join(path, "model.safetensors"))
    inner = torch.nn.Module()
    inner.embed_tokens = torch.nn.Embedding.from_pretrained(tensors["model.embed_tokens.weight"].to(dtype))
    head = torch.nn.Linear(1, 1, bias=False)
    head.weight = torch.nn.Parameter(tensors["lm_head.weight"].to(dtype), requires_grad=False)
    return _bare(LlamaForCausalLM, model=inner, lm_head=head)


def _sharing_code() -> tuple[type | None, ast.FunctionDef, str, dict]:
    """(worker class, its function that calls `set_embed`, the module's name, the module's namespace): the first of
    the release's EAGLE worker modules that holds one. A module that does not import on a CPU (a CUDA-only import)
    is read as shipped, for lines inline in `__init__` only: its class is then None and its namespace empty (those
    lines read only `self`)."""
    import importlib.util

    for name in WORKERS:
        try:
            module = importlib.import_module(name)
            source, namespace = inspect.getsource(module), vars(module)
        except Exception:
            module, namespace = None, {}
            try:
                with open(importlib.util.find_spec(name).origin) as f:
                    source = f.read()
            except Exception:
                continue
        tree = ast.parse(source)
        for cls in (n for n in tree.body if isinstance(n, ast.ClassDef)):
            for fn in (n for n in cls.body if isinstance(n, ast.FunctionDef)):
                calls = [
                    c for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Attribute)
                ]
                if any(c.func.attr == "set_embed" for c in calls):
                    if module is None and fn.name != "__init__":
                        break  # a method of a worker that does not import here cannot run: the next worker
                    return getattr(module, cls.name, None), fn, name, namespace
    raise RuntimeError("no EAGLE worker of this release calls set_embed")


def _share(draft, target, target_config, server_args) -> str:
    """Run the release's sharing code on a worker holding the draft and the target (its runner: the model, the
    model config its worker built, a default load config); what ran."""
    from sglang.srt.configs.load_config import LoadConfig
    from sglang.srt.speculative.spec_info import SpeculativeAlgorithm

    cls, fn, module_name, namespace = _sharing_code()
    worker = object.__new__(cls) if cls is not None else SimpleNamespace()
    runner = SimpleNamespace(model=draft)
    for key, value in {"draft_runner": runner, "draft_model_runner": runner, "model_runner": runner, "hot_token_id": None,
                       "target_worker": SimpleNamespace(model_runner=SimpleNamespace(
                           model=target, model_config=target_config, load_config=LoadConfig())),
                       "speculative_algorithm": SpeculativeAlgorithm.EAGLE3, "server_args": server_args,
                       "device": "cpu"}.items():  # fmt: skip
        try:
            setattr(worker, key, value)
        except AttributeError:  # a property of the class: its own answer stands
            pass
    if fn.name != "__init__":
        if cls is None:
            raise RuntimeError(f"{module_name} does not import here: its {fn.name} cannot run")
        getattr(cls, fn.name)(worker)
        return f"{module_name}.{cls.__name__}.{fn.name}"
    # inline in __init__: from `embed, head = ...get_embed_and_head()` through the `if` that calls set_embed
    body = fn.body
    start = next(i for i, s in enumerate(body) if "get_embed_and_head" in ast.unparse(s))
    end = next(i for i, s in enumerate(body) if i >= start and "set_embed" in ast.unparse(s))
    code = textwrap.dedent("\n".join(ast.unparse(s) for s in body[start : end + 1]))
    exec(code, dict(namespace) | {"self": worker, "server_args": server_args})
    owner = cls.__name__ if cls is not None else "(read as shipped)"
    return f"{module_name}.{owner}.__init__ (its lines {body[start].lineno}-{body[end].end_lineno})"


def _vllm_fallbacks() -> list[str]:
    """On a CPU, older releases' layer modules fall back to vLLM's activation and norm classes ("sgl-kernel is not
    available on Non-NV platforms. Fallback to other kernel libraries": layers/activation.py, layernorm.py), which
    the vLLM in this venv builds only inside a vLLM engine. Where SGLang's modules bound one, it is stood in by a
    class with its contract: a norm keeps its weight (the checkpoint's norm weights load into it), an activation
    holds nothing. No kernel runs here; on CUDA the release builds its own. What was stood in."""
    import torch
    from capture_probe import _contract_norm

    class Activation(torch.nn.Module):
        def __init__(self, *args, **kwargs):
            super().__init__()

        def forward(self, x):
            return x

    try:
        importlib.import_module(
            "sglang.srt.models.registry"
        )  # every model file, as the loader's registry does
    except Exception:
        pass
    done = set()
    for name, module in list(sys.modules.items()):
        if not name.startswith("sglang.") or module is None:
            continue
        for key, value in list(vars(module).items()):
            if (
                isinstance(value, type)
                and issubclass(value, torch.nn.Module)
                and value.__module__.startswith("vllm.")
            ):
                setattr(module, key, _contract_norm() if "Norm" in key else Activation)
                done.add(f"{value.__module__}.{key}")
    return sorted(done)


def _case(target_path: str, drafter: str, form: str | None) -> dict:
    import torch
    from sglang.srt.configs.device_config import DeviceConfig
    from sglang.srt.configs.load_config import LoadConfig
    from sglang.srt.model_loader import get_model
    from sglang.srt.server_args import ServerArgs

    out: dict[str, Any] = {"embedding": None, "lm_head": None, "error": None}
    stage = "server_args"
    try:
        sa = ServerArgs(model_path=target_path, speculative_algorithm="EAGLE3", speculative_draft_model_path=drafter,
                        device="cpu", dtype="bfloat16", skip_tokenizer_init=True, speculative_num_steps=3,
                        speculative_eagle_topk=1, speculative_num_draft_tokens=4)  # fmt: skip
        if publish(sa) is None:  # before the runtime context (0.5.17): the scheduler's global server args
            from sglang.srt import server_args as module

            if hasattr(module, "set_global_server_args_for_scheduler"):
                module.set_global_server_args_for_scheduler(sa)
        stage = "draft config"
        target_config = _worker(sa, False, None, form)
        draft_config = _worker(sa, True, target_config.context_len, form)
        _sglang_groups(sa)
        stage = "load"
        params = inspect.signature(DeviceConfig).parameters
        device = DeviceConfig(device="cpu") if "device" in params else DeviceConfig()
        draft = get_model(model_config=draft_config, load_config=LoadConfig(), device_config=device)
        stage = "share"
        target = _target(target_path, draft_config.dtype)
        out["shared_by"] = _share(draft, target, target_config, sa)
    except Exception as exc:
        out["error"] = {"stage": stage} | engine_error(exc, "sglang")
        return out
    embed = draft.model.embed_tokens.weight
    out["embedding"] = "target" if embed is target.model.embed_tokens.weight else "own"
    head = getattr(draft, "lm_head", None)
    if head is not None and head is draft.model.embed_tokens:
        out["lm_head"] = "embedding"
    elif head is not None and getattr(head, "weight", None) is target.lm_head.weight:
        out["lm_head"] = "target"
    else:
        out["lm_head"] = "own"
    del torch
    return out


def main(request_path: str, result_path: str) -> int:
    with open(request_path) as f:
        request = json.load(f)
    os.environ["SGLANG_USE_CPU_ENGINE"] = "1"  # SGLang's CPU engine (srt/utils/common.py is_cpu)
    setup("sglang")
    import torch

    # the CPU answers as the kind SGLang's CPU engine supports (AMX tiles: its own CPU layers, not the fallback to
    # vLLM's): only layers are built and loaded here, no kernel runs
    torch._C._cpu._is_amx_tile_supported = lambda: True
    # the device calls a draft's set_embed makes after the swap (0.4.x: torch.cuda.empty_cache, synchronize): no-ops
    # on a CPU, as the release's later code makes them (current_platform.empty_cache)
    torch.cuda.empty_cache = lambda *a, **k: None
    torch.cuda.synchronize = lambda *a, **k: None
    import sglang

    answer_as_a_gpu()
    _spy_runner()
    form = _context_form()
    stood_in = _vllm_fallbacks()
    answered = ANSWERED + ([f"vLLM classes SGLang falls back to on a CPU, stood in: {', '.join(stood_in)}"]
                           if stood_in else [])  # fmt: skip
    results = {name: _case(request["target"], path, form) for name, path in request["drafters"].items()}
    with open(result_path + ".tmp", "w") as f:
        json.dump(
            {"engine": "sglang", "version": sglang.__version__, "answered": answered, "results": results}, f
        )
    os.replace(result_path + ".tmp", result_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
