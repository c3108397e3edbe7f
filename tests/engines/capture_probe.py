"""Call the engines' own capture functions on id lists; runs INSIDE an engine venv (no eaglewire there).

    python capture_probe.py REQUEST.json RESULT.json

REQUEST: {"engine": "sglang" | "vllm", "cases": [{"arch": ..., "num_layers": L, "config": {drafter config}}]}.
RESULT: per case, the layer indices the engine's code returns (`captured`) and which reader/default it used.

What runs is the engine's code; what is stood in is only the model object the method is bound to (no weights):
- SGLang: `<Arch>.set_eagle3_layers_to_capture(self, ids)` from `sglang.srt.models.<module>`, bound to a stand-in
  with `pp_group.is_last_rank`, `config.num_hidden_layers` and a `model` holding L layers (an inner
  `<...>Model.set_eagle3_layers_to_capture` of the same module, e.g. Qwen3MoeModel, is bound and run too). The ids
  come from the draft config the way `model_runner_components/spec_aux_hidden_state.py:184-196` reads them:
  `eagle_config["eagle_aux_hidden_state_layer_ids"]`, any error meaning None.
- vLLM: `GPUModelRunner._get_eagle3_aux_layers_from_config` (V1 runner) and
  `v1/worker/gpu/spec_decode/eagle/eagle3_utils.get_eagle3_aux_layers_from_config` (MRV2) on a speculative
  config whose draft hf_config is a transformers `PretrainedConfig` of the drafter config; when they return
  nothing, `SupportsEagle3.get_eagle3_default_aux_hidden_state_layers` of the model class (models/interfaces.py),
  then `EagleModelMixin._set_aux_hidden_state_layers` (sorted, unique).
"""

from __future__ import annotations

import importlib
import inspect
import json
import logging
import os
import sys
from types import SimpleNamespace
from typing import Any

SGLANG_MODULES = {
    "LlamaForCausalLM": "llama", "MistralForCausalLM": "mistral", "Qwen2ForCausalLM": "qwen2",
    "Qwen3ForCausalLM": "qwen3", "Qwen3MoeForCausalLM": "qwen3_moe", "DeepseekV2ForCausalLM": "deepseek_v2",
    "DeepseekV3ForCausalLM": "deepseek_v2", "DeepseekV32ForCausalLM": "deepseek_v2",
    "KimiK25ForConditionalGeneration": "kimi_k25",
}  # fmt: skip


def _stand_in_model(num_layers: int, module: Any, arch: str) -> SimpleNamespace:
    """The inner model (`model` attribute): L layers; its own set_eagle3_layers_to_capture when the module's inner
    model class has one (e.g. Qwen3MoeModel, inherited from Qwen2MoeModel), bound and run for real."""
    model = SimpleNamespace(layers=[SimpleNamespace() for _ in range(num_layers)], layers_to_capture=[])
    inner = getattr(module, arch.replace("ForCausalLM", "Model"), None)
    method = getattr(inner, "set_eagle3_layers_to_capture", None) if inspect.isclass(inner) else None
    if method is not None:
        model.set_eagle3_layers_to_capture = method.__get__(model)
    return model


def _sglang_case(case: dict) -> dict:
    arch, num_layers, config = case["arch"], case["num_layers"], case["config"]
    module = importlib.import_module(f"sglang.srt.models.{SGLANG_MODULES[arch]}")
    cls = getattr(module, arch)
    try:  # spec_aux_hidden_state.py:187-196
        ids = config["eagle_config"]["eagle_aux_hidden_state_layer_ids"]
    except Exception:
        ids = None
    text = SimpleNamespace(num_hidden_layers=num_layers)
    stand_in = SimpleNamespace(pp_group=SimpleNamespace(is_last_rank=True), config=text,
                               model=_stand_in_model(num_layers, module, arch))  # fmt: skip
    if (
        arch == "KimiK25ForConditionalGeneration"
    ):  # kimi_k25.py:928-939 delegates to its DeepSeek-V3 text model
        from sglang.srt.models.deepseek_v2 import DeepseekV3ForCausalLM

        language = SimpleNamespace(pp_group=stand_in.pp_group, config=text, model=stand_in.model)
        language.set_eagle3_layers_to_capture = DeepseekV3ForCausalLM.set_eagle3_layers_to_capture.__get__(
            language
        )
        stand_in.language_model = language
    out: dict[str, Any] = {"ids": ids, "function": f"{cls.__module__}.{arch}.set_eagle3_layers_to_capture"}
    try:
        cls.set_eagle3_layers_to_capture(stand_in, None if ids is None else list(ids))
        out["captured"] = list(stand_in.model.layers_to_capture)
    except Exception as exc:
        out["error"] = f"{type(exc).__name__}: {exc}"
    return out


def _vllm_case(case: dict) -> dict:
    from transformers import PretrainedConfig
    from vllm.model_executor.models.interfaces import EagleModelMixin, SupportsEagle3
    from vllm.v1.worker.gpu.spec_decode.eagle.eagle3_utils import get_eagle3_aux_layers_from_config
    from vllm.v1.worker.gpu_model_runner import GPUModelRunner

    arch, num_layers, config = case["arch"], case["num_layers"], case["config"]
    hf_config = PretrainedConfig(**config)
    spec = SimpleNamespace(draft_model_config=SimpleNamespace(hf_config=hf_config))
    readers = {
        "v1": lambda: GPUModelRunner._get_eagle3_aux_layers_from_config(
            SimpleNamespace(speculative_config=spec)
        ),
        "mrv2": lambda: get_eagle3_aux_layers_from_config(spec),
    }
    from vllm.model_executor.models.registry import (
        _VLLM_MODELS,  # the registry vLLM resolves architectures with
    )

    module_name, cls_name = _VLLM_MODELS[arch]
    prefix = "" if "." in module_name else "vllm.model_executor.models."
    cls = getattr(importlib.import_module(prefix + module_name), cls_name)
    default_fn = getattr(cls, "get_eagle3_default_aux_hidden_state_layers", None)
    out: dict[str, Any] = {}
    for runner, read in readers.items():
        entry: dict[str, Any] = {}
        try:
            layers = read()
            entry["from_config"] = None if layers is None else list(layers)
            if not layers:
                stand_in = SimpleNamespace(model=SimpleNamespace(layers=[None] * num_layers))
                layers = (default_fn or SupportsEagle3.get_eagle3_default_aux_hidden_state_layers)(stand_in)
            holder = SimpleNamespace(_cache_aux_pp_layout=lambda: None)
            EagleModelMixin._set_aux_hidden_state_layers(holder, tuple(layers))
            entry["captured"] = list(holder.aux_hidden_state_layers)
        except Exception as exc:
            entry["error"] = f"{type(exc).__name__}: {exc}"
        out[runner] = entry
    return out


def main(request_path: str, result_path: str) -> int:
    with open(request_path) as f:
        request = json.load(f)
    logging.disable(logging.WARNING)
    engine = request["engine"]
    one = _sglang_case if engine == "sglang" else _vllm_case
    if engine == "vllm":
        from vllm import platforms
        from vllm.platforms.cpu import CpuPlatform

        platforms.current_platform = CpuPlatform()
    version = importlib.import_module(engine).__version__
    results = [one(case) for case in request["cases"]]
    with open(result_path + ".tmp", "w") as f:
        json.dump({"engine": engine, "version": version, "results": results}, f)
    os.replace(result_path + ".tmp", result_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
