"""The draft model's settings as an SGLang release builds them; runs INSIDE an engine venv (no eaglewire there).

    python draft_probe_sglang.py REQUEST.json RESULT.json

REQUEST: {"engine": "sglang", "cases": [{"name": ..., "server_args": {ServerArgs keyword arguments}, "env": {...}}]}.
RESULT: per case, what the release's own code made of the launch:

- `server_args`: the release's `ServerArgs(...)` (its own post-init: where 0.5.7+ copies `--quantization` into
  `speculative_draft_model_quantization`), the fields the draft's settings read; or the engine's error.
- `target` / `draft`: the model config each `TpModelWorker` builds (the release's own worker code, run up to the
  `ModelRunner` it hands the config to, where the probe stops: no weights, no device): quantization, dtype, context
  length, the `max_position_embeddings` left in the config (its rotary table), architectures; or the engine's error
  (the draft's context-length refusal is one). The draft worker gets the target's context length the way the
  release's EAGLE worker passes it (`context_length=` to the worker, 0.5.15+, or `server_args.context_length = ...`
  before it, 0.4.5-0.5.14): which form the release's worker source holds is recorded (`context_passed`).
- `quant_config`: what the release's loader (`model_loader/loader.py _get_quantization_config`) passes to the draft
  model class with that config: its layers are built for that method (`None`: in its own dtype).

What is answered: the device is `cpu` (SGLang's CPU backend), and SGLang's `get_device_capability` and
`get_device_memory_capacity` answer as on an H100 (on a CPU most releases answer None, which the quantization
registry's checks and ServerArgs' memory-sized defaults then compare: a TypeError no GPU user meets); nothing else is
stood in.
"""

from __future__ import annotations

import inspect
import json
import os
import sys
from typing import Any

from capture_probe import H100_CAPABILITY as GPU_CAPABILITY
from capture_probe import H100_MIB as GPU_MEMORY_MB
from capture_probe import engine_error, publish, setup

ANSWERED = ["ServerArgs(device='cpu')", "device capability answered as 9.0 (a Hopper GPU: the quantization "
            "registry's capability checks run as there)", f"device memory answered as {GPU_MEMORY_MB} MB (an H100)",
            "TpModelWorker runs up to ModelRunner (the probe stops there)",
            "tensor parallel group: one rank (stand-in), for the loader's quantization config"]  # fmt: skip
# the EAGLE worker's own line giving the draft worker the target's context length, by form
CONTEXT_FORMS = {"keyword": ("context_length=target_worker.model_runner.model_config.context_len",
                             "context_length=target_model_config.context_len",  # 0.5.17 draft_worker_common.py:89
                             '"context_length": target_model_config.context_len'),
                 "server_args": ("server_args.context_length = target_worker.model_runner.model_config.context_len",)}  # fmt: skip
WORKERS = ("sglang.srt.speculative.eagle_worker_v2", "sglang.srt.speculative.draft_worker_common",
           "sglang.srt.speculative.eagle_worker")  # fmt: skip


class _Stop(Exception):
    """The worker handed its model config to the ModelRunner: the probe stops there."""

    def __init__(self, model_config: Any) -> None:
        super().__init__("stop")
        self.model_config = model_config


def _error(exc: BaseException) -> dict:
    return engine_error(exc, "sglang")


def _model(mc: Any) -> dict:
    hf = mc.hf_config
    text = getattr(mc, "hf_text_config", hf)
    return {"quantization": mc.quantization, "dtype": str(mc.dtype).replace("torch.", ""),
            "context_len": mc.context_len, "model_type": getattr(hf, "model_type", None),
            "max_position_embeddings": getattr(text, "max_position_embeddings", None),
            "architectures": list(getattr(hf, "architectures", None) or [])}  # fmt: skip


def _spy_runner() -> None:
    """ModelRunner, wherever the worker takes it from, stops the build with the config it was given."""
    import sglang.srt.managers.tp_worker as tp_worker
    import sglang.srt.model_executor.model_runner as model_runner

    def runner(*args, **kwargs):
        raise _Stop(kwargs.get("model_config", args[0] if args else None))

    model_runner.ModelRunner = runner
    if hasattr(tp_worker, "ModelRunner"):
        tp_worker.ModelRunner = runner


def _worker(server_args: Any, draft: bool, context: int | None, form: str | None) -> Any:
    """The model config the release's TpModelWorker builds (target, or draft as the EAGLE worker asks)."""
    from sglang.srt.managers.tp_worker import TpModelWorker

    params = inspect.signature(TpModelWorker.__init__).parameters
    given = {"server_args": server_args, "gpu_id": 0, "tp_rank": 0, "dp_rank": None, "nccl_port": 0,
             "moe_ep_rank": 0, "pp_rank": 0, "attn_cp_rank": 0, "moe_dp_rank": 0, "is_draft_worker": draft}  # fmt: skip
    kwargs = {k: v for k, v in given.items() if k in params}
    for name, p in params.items():  # a required argument this list does not know: its neutral value
        if name != "self" and name not in kwargs and p.default is inspect.Parameter.empty:
            kwargs[name] = 0
    if draft and context is not None:
        if form == "keyword" and "context_length" in params:
            kwargs["context_length"] = context
        else:
            server_args.context_length = context
    worker = TpModelWorker.__new__(TpModelWorker)
    try:
        TpModelWorker.__init__(worker, **kwargs)
    except _Stop as stop:
        return stop.model_config
    raise RuntimeError("TpModelWorker did not reach its ModelRunner")


def _context_form() -> str | None:
    """How the release's EAGLE worker gives the draft the target's context length (its source, as shipped)."""
    import importlib.util

    for name in WORKERS:
        try:  # the file as shipped, not imported (some releases' workers import CUDA-only modules)
            with open(importlib.util.find_spec(name).origin) as f:
                source = " ".join(f.read().split())
        except Exception:
            continue
        for form, lines in CONTEXT_FORMS.items():
            if any(line in source.replace("( ", "(").replace(" )", ")") for line in lines):
                return form
    return None


def _tp_stand_in() -> None:
    """The tensor-parallel groups the loader's quantization config asks about (block FP8 at 0.4.6.post3-0.5.2): one
    rank, as a stand-in (the probe builds no layer and makes no collective call); set only where unset."""
    from types import SimpleNamespace

    from sglang.srt.distributed import parallel_state as ps

    one = SimpleNamespace(world_size=1, rank_in_group=0, rank=0, local_rank=0, ranks=[0], is_first_rank=True,
                          is_last_rank=True)  # fmt: skip
    for name in ("_TP", "_PP", "_ATTN_TP", "_MOE_EP", "_MOE_TP"):
        if hasattr(ps, name) and getattr(ps, name) is None:
            setattr(ps, name, one)


def _quant_config(model_config: Any) -> dict | None:
    from sglang.srt.configs.load_config import LoadConfig
    from sglang.srt.model_loader import loader

    def packed() -> dict:
        """What the release's loader passes (DefaultModelLoader.load_model): the model class's mapping."""
        from sglang.srt.model_loader.utils import get_model_architecture

        return getattr(get_model_architecture(model_config)[0], "packed_modules_mapping", {})

    _tp_stand_in()
    given = {
        "model_config": lambda: model_config,
        "load_config": LoadConfig,
        "packed_modules_mapping": packed,
    }
    params = inspect.signature(loader._get_quantization_config).parameters
    config = loader._get_quantization_config(
        **{n: given[n]() for n, p in params.items() if p.default is inspect.Parameter.empty}
    )
    if config is None:
        return None
    return {
        "class": type(config).__name__,
        "name": config.get_name() if hasattr(config, "get_name") else None,
    }


def _case(case: dict, form: str | None) -> dict:
    from sglang.srt.server_args import ServerArgs

    out: dict[str, Any] = {
        "name": case["name"],
        "server_args": None,
        "target": None,
        "draft": None,
        "error": None,
    }
    saved = dict(os.environ)
    os.environ.update(case.get("env") or {})
    try:
        try:
            sa = ServerArgs(**case["server_args"])
        except Exception as exc:
            out["error"] = {"stage": "server_args"} | _error(exc)
            return out
        out["server_args"] = {k: getattr(sa, k, "absent") for k in (
            "quantization", "speculative_draft_model_quantization", "speculative_draft_model_path", "dtype",
            "context_length", "speculative_algorithm", "speculative_num_steps", "speculative_eagle_topk",
            "speculative_num_draft_tokens")}  # fmt: skip
        try:
            out["published"] = publish(sa)
            if out["published"]:  # 0.5.17+: the resolved speculative settings live in the published context
                from sglang.srt.runtime_context import get_spec

                spec = get_spec()
                for key in ("speculative_num_steps", "speculative_eagle_topk", "speculative_num_draft_tokens",
                            "speculative_draft_model_quantization"):  # fmt: skip
                    if out["server_args"].get(key) is None and hasattr(spec, key):
                        out["server_args"][key] = getattr(spec, key)
            target = _worker(sa, False, None, form)
        except Exception as exc:
            out["error"] = {"stage": "target"} | _error(exc)
            return out
        out["target"] = _model(target)
        try:
            draft = _worker(sa, True, target.context_len, form)
        except Exception as exc:
            out["error"] = {"stage": "draft"} | _error(exc)
            return out
        out["draft"] = _model(draft)
        try:
            out["draft"]["quant_config"] = _quant_config(draft)
        except Exception as exc:
            out["draft"]["quant_config_error"] = _error(exc)
        return out
    finally:
        os.environ.clear()
        os.environ.update(saved)


def answer_as_a_gpu() -> None:
    """SGLang's device capability and memory answered as an H100's (GPU_CAPABILITY, GPU_MEMORY_MB), set before any
    module imports them by name. Shared with weights_probe_sglang.py."""
    import importlib

    for name in ("sglang.srt.utils", "sglang.srt.utils.common"):
        try:
            module = importlib.import_module(name)
            module.get_device_capability = lambda *a, **k: GPU_CAPABILITY
            module.get_device_memory_capacity = lambda *a, **k: GPU_MEMORY_MB
        except (ImportError, AttributeError):
            pass


def main(request_path: str, result_path: str) -> int:
    with open(request_path) as f:
        request = json.load(f)
    assert request["engine"] == "sglang", "this probe answers for SGLang"
    setup("sglang")

    import sglang

    answer_as_a_gpu()
    _spy_runner()
    form = _context_form()
    results = [_case(case, form) for case in request["cases"]]
    with open(result_path + ".tmp", "w") as f:
        json.dump({"engine": "sglang", "version": sglang.__version__, "answered": ANSWERED,
                   "context_passed": form, "results": results}, f)  # fmt: skip
    os.replace(result_path + ".tmp", result_path)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2]))
