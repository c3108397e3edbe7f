"""Call the engines' own capture code on id lists; runs INSIDE an engine venv (no eaglewire there).

    python capture_probe.py REQUEST.json RESULT.json

REQUEST: {"engine": "sglang" | "vllm", "cases": [{"arch": ..., "num_layers": L, "config": {drafter config}}]}; a case
may name the target's `model_type` (a family without an architecture of its own: Kimi-K2).
RESULT: per case, which inner model class holds the forward loop (`inner`), the layer indices the engine's code left
there for that loop to read, and which ids the engine read from the drafter config; or the engine's error.

What runs is the engine's code, from its entry point down; what is stood in is only the model tree it is called on:
an instance of the real model class (made without __init__, so no weights, kernels or process groups), whose inner
decoder (`model`, or `language_model.model` for a wrapper) is an instance of the real inner class holding L empty
layers. The real classes' methods (wrapper delegation, `set_eagle3_layers_to_capture`, `set_aux_hidden_state_layers`,
the defaults) run unchanged. The inner class of each architecture is the one its __init__ builds (checked below: its
name must appear in the source of the outer classes).

For the decoder's forward loop, the decoder also keeps what its own __init__ would: the target's config, and the
plain values its `self.x = ...` lines compute from it (in the `if` branches the config takes), evaluated from the
release's source (`_init_attributes`). A family a case names by model_type (Kimi-K2) gets that config; one
transformers does not know comes as the checkpoint's remote code (`REMOTE_CONFIG`). What a launch decides is a plain one-GPU launch's: every process group the engine asserts is
initialized is one rank (`one_rank_groups`), layout flags are off (`ONE_GPU`), and SGLang's server arguments are a
default `ServerArgs` for the target, set where the release reads them (`_sglang_launch`).

Where a release captures inside the decoder layer instead of in its loop (SGLang's layer communicator,
`prepare_attn_and_capture_last_layer_outputs`, from 0.5.4.post2 for Qwen3-MoE, 0.5.9 Qwen3-Next, 0.5.14 DeepSeek and
MiniMax-M2; its layer boundaries, `attn_boundary.prepare(capture=...)`, for most families from 0.5.21), the stand-in
layers cannot answer: the decoder is then built by its own __init__, its layers real (norms, communicator,
boundaries) with the attention, MLP and MoE blocks stood in (`_real_decoder`), on the engine's own process groups
for one rank (`_sglang_groups`) and a real ForwardBatch of one prefill. Each layer's blocks add exactly 1 to the
residual stream, so the state a capture took reads as the k of its tap h_k (`_real_forward_taps`).

Every launch builds the target before its runner's capture request, so each target's real decoder is also built
once per record, its layers real and every other module class of the model files stood in (`_standing_in`; SGLang
`_builds_real`, vLLM `_vllm_builds_real` with the release's default `VllmConfig`): where the release's own call hands
one of its own classes an argument that class does not take, every case fails at load (`_build_failure`).

- SGLang: `attention_backend_setup.configure_aux_hidden_state_capture` (what ModelRunner calls, :40-61), with the ids
  read from the draft config the way `model_runner_components/spec_aux_hidden_state.py:184-196` reads them:
  `eagle_config["eagle_aux_hidden_state_layer_ids"]`, any error meaning None. The target's config is what SGLang's
  own loader (`utils/hf_transformers/config.py:get_config`) makes of a config.json with L layers. The pipeline group
  is stated as last rank through the engine's own `get_parallel().override(pp_group=...)` (runtime_context.py:430).
- vLLM: the V1 runner's `GPUModelRunner._setup_eagle3_aux_hidden_state_outputs` (gpu_model_runner.py:5169-5188) and
  MRV2's `eagle3_utils.set_eagle3_aux_hidden_state_layers` (eagle3_utils.py:25-40), on a speculative config whose
  draft hf_config is a transformers `PretrainedConfig` of the drafter config. Architectures resolve through vLLM's
  registry; a package that picks its implementation by platform (vllm/models/deepseek_v32, deepseek_v4,
  deepseek_v41) is taken at its CUDA branch (`_cuda_branch`: `nvidia/`), the one a GPU server runs. vLLM runs on
  `CpuPlatform()`.
  torchvision and mistral_common are not in the CPU venv: placeholders from stubs/ (import-time names only) let the
  multimodal model files import; real packages win when installed.
"""

from __future__ import annotations

import ast
import contextlib
import functools
import importlib
import importlib.util
import inspect
import json
import linecache
import logging
import os
import sys
import tempfile
import types
from pathlib import Path
from types import SimpleNamespace
from typing import Any

try:  # beside this file: the probe runs as a script there; eaglewire's tests import it as `engines.`
    import modeling_backend
except ImportError:
    from engines import modeling_backend

# architecture -> (module, inner decoder class, wrapper's text class or None, the config the outer class keeps)
# ("top": the loaded config, "text": its text_config, as the outer __init__ does). Modules are the registry's
# (each file's EntryClass); a None inner class: the model has no EAGLE-3 entry point, nothing is built.
SGLANG: dict[str, tuple[str, str | None, str | None, str]] = {
    "LlamaForCausalLM": ("llama", "llama.LlamaModel", None, "top"),
    "MistralForCausalLM": ("mistral", "llama.LlamaModel", None, "top"),
    "Mistral3ForConditionalGeneration": ("mistral", None, None, "top"),
    "Llama4ForCausalLM": ("llama4", "llama4.Llama4Model", None, "top"),
    "Llama4ForConditionalGeneration": ("mllama4", "llama4.Llama4Model", "llama4.Llama4ForCausalLM", "top"),
    "Qwen2ForCausalLM": ("qwen2", "qwen2.Qwen2Model", None, "top"),
    "Qwen2_5_VLForConditionalGeneration": ("qwen2_5_vl", "qwen2.Qwen2Model", None, "top"),
    "Qwen2VLForConditionalGeneration": ("qwen2_vl", "qwen2.Qwen2Model", None, "top"),
    "Qwen3ForCausalLM": ("qwen3", "qwen3.Qwen3Model", None, "top"),
    "Qwen3MoeForCausalLM": ("qwen3_moe", "qwen3_moe.Qwen3MoeModel", None, "top"),
    "Qwen3NextForCausalLM": ("qwen3_next", "qwen3_next.Qwen3NextModel", None, "top"),
    "Qwen3VLForConditionalGeneration": ("qwen3_vl", "qwen3_vl.Qwen3LLMModel", None, "top"),
    "Qwen3VLMoeForConditionalGeneration": ("qwen3_vl_moe", "qwen3_vl_moe.Qwen3MoeLLMModel", None, "text"),
    "GptOssForCausalLM": ("gpt_oss", "gpt_oss.GptOssModel", None, "top"),
    "DeepseekV2ForCausalLM": ("deepseek_v2", "deepseek_v2.DeepseekV2Model", None, "top"),
    "DeepseekV3ForCausalLM": ("deepseek_v2", "deepseek_v2.DeepseekV2Model", None, "top"),
    "DeepseekV32ForCausalLM": ("deepseek_v2", "deepseek_v2.DeepseekV2Model", None, "top"),
    "DeepseekV4ForCausalLM": ("deepseek_v4", None, None, "top"),
    "KimiK25ForConditionalGeneration": ("kimi_k25", "deepseek_v2.DeepseekV2Model",
                                        "deepseek_v2.DeepseekV3ForCausalLM", "top"),
    "Glm4MoeForCausalLM": ("glm4_moe", "glm4_moe.Glm4MoeModel", None, "top"),
    "MiniMaxM2ForCausalLM": ("minimax_m2", "minimax_m2.MiniMaxM2Model", None, "top"),
}  # fmt: skip

# architecture -> (inner decoder class, wrapper's text class or None); modules under vllm.model_executor.models
# unless dotted from vllm. The registry gives the outer class. Mistral3's and Pixtral's text model comes from its
# text_config (init_vllm_registered_model); for a Mistral-format text config that is MistralForCausalLM (pixtral.py's
# own comment there, @0.33.0).
VLLM: dict[str, tuple[str | None, str | None]] = {
    "LlamaForCausalLM": ("llama.LlamaModel", None),
    "MistralForCausalLM": ("mistral.MistralModel", None),
    "Mistral3ForConditionalGeneration": ("mistral.MistralModel", "mistral.MistralForCausalLM"),
    "PixtralForConditionalGeneration": ("mistral.MistralModel", "mistral.MistralForCausalLM"),  # "init MistralFor..."
    "Llama4ForCausalLM": ("llama4.Llama4Model", None),
    "Llama4ForConditionalGeneration": ("llama4.Llama4Model", "llama4.Llama4ForCausalLM"),
    "Qwen2ForCausalLM": ("qwen2.Qwen2Model", None),
    "Qwen2_5_VLForConditionalGeneration": ("qwen2.Qwen2Model", "qwen2.Qwen2ForCausalLM"),
    "Qwen2VLForConditionalGeneration": (None, None),
    "Qwen3ForCausalLM": ("qwen3.Qwen3Model", None),
    "Qwen3MoeForCausalLM": ("qwen3_moe.Qwen3MoeModel", None),
    "Qwen3NextForCausalLM": ("qwen3_next.Qwen3NextModel", None),
    "Qwen3VLForConditionalGeneration": ("qwen3_vl.Qwen3LLMModel", "qwen3_vl.Qwen3LLMForCausalLM"),
    "Qwen3VLMoeForConditionalGeneration": ("qwen3_vl_moe.Qwen3MoeLLMModel", "qwen3_vl_moe.Qwen3MoeLLMForCausalLM"),
    "GptOssForCausalLM": ("gpt_oss.GptOssModel", None),
    "DeepseekV2ForCausalLM": ("deepseek_v2.DeepseekV2Model", None),
    "DeepseekV3ForCausalLM": ("deepseek_v2.DeepseekV2Model", None),
    "DeepseekV32ForCausalLM": ("vllm.models.deepseek_v32.nvidia.model.DeepseekV32Model", None),
    "DeepseekV4ForCausalLM": ("vllm.models.deepseek_v4.nvidia.model.DeepseekV4Model", None),
    "KimiK25ForConditionalGeneration": ("deepseek_v2.DeepseekV2Model", "deepseek_v2.DeepseekV2ForCausalLM"),
    "Glm4MoeForCausalLM": (None, None),
    "MiniMaxM2ForCausalLM": ("minimax_m2.MiniMaxM2Model", None),
}  # fmt: skip
# what a CUDA platform answers the `current_platform.is_X()` tests of a package that picks its implementation by
# platform (vllm/models/deepseek_v32, deepseek_v4, deepseek_v41, minimax_m3 __init__.py); any other test is not decided
CUDA_ANSWERS = {"is_cuda": True, "is_cuda_alike": True, "is_rocm": False, "is_xpu": False, "is_cpu": False,
                "is_tpu": False, "is_out_of_tree": False}  # fmt: skip


class _CudaPlatform:
    """`current_platform` as a GPU server's: its `is_X()` tests answered (`CUDA_ANSWERS`), nothing else."""

    def __init__(self, package: str):
        self.package = package

    def __getattr__(self, name: str):
        if name not in CUDA_ANSWERS:
            raise ProbeError(f"{self.package}/__init__.py picks by `current_platform.{name}`, which the probe "
                             "cannot answer for CUDA")  # fmt: skip
        return lambda: CUDA_ANSWERS[name]


@functools.cache
def _cuda_branch(package: str) -> dict[str, Any]:
    """The names a package's __init__ exports on CUDA, where it picks its implementation by platform: each top-level
    `if` whose test reads `current_platform` is taken the way a GPU server takes it (the probe runs on the CPU
    platform, whose branch is not the one the table describes; `TYPE_CHECKING` is False), every other statement
    runs as written. A test it cannot answer raises: the probe then says which."""
    import ast

    spec = importlib.util.find_spec(package)
    tree = ast.parse(Path(spec.origin).read_text())
    namespace: dict[str, Any] = {"__name__": package, "__package__": package, "__file__": spec.origin,
                                 "__path__": spec.submodule_search_locations}  # fmt: skip

    def run(body: list[ast.stmt]) -> None:
        for stmt in body:  # an `elif` is an `if` in the `else`: the recursion takes it
            if isinstance(stmt, ast.If) and "current_platform" in ast.unparse(stmt.test):
                test = compile(ast.Expression(stmt.test), spec.origin, "eval")
                scope = namespace | {"current_platform": _CudaPlatform(package), "TYPE_CHECKING": False}
                run(stmt.body if eval(test, scope) else stmt.orelse)
            else:
                exec(compile(ast.Module(body=[stmt], type_ignores=[]), spec.origin, "exec"), namespace)

    run(tree.body)
    return namespace


def _class(path: str, package: str) -> type:
    module, _, name = path.rpartition(".")
    if not module.startswith(("vllm.", "sglang.")):
        module = f"{package}.{module}"
    return getattr(importlib.import_module(module), name)


def _bare(cls: type, **attrs: Any):
    """An instance of the real class without its __init__ (no weights, kernels or process groups). A wrapper that is
    no module and hands every attribute to the model its __init__ builds as `self.inner = X(...)` (SGLang's
    Mistral3ForConditionalGeneration over LlavaForConditionalGeneration, 0.4.6.post5-0.5.22) holds a bare X there."""
    import re

    import torch

    obj = cls.__new__(cls)
    if issubclass(cls, torch.nn.Module):
        torch.nn.Module.__init__(obj)
    else:
        source = _class_source(cls)
        built = re.search(r"self\.inner\s*=\s*(\w+)\(", source)
        if built:
            name = built.group(1)
            lazy = re.search(rf"from ([\w.]+) import {name}\b", source)  # imported inside __init__
            module = importlib.import_module(lazy.group(1)) if lazy else sys.modules[cls.__module__]
            object.__setattr__(obj, "inner", _bare(getattr(module, name)))
    for key, value in attrs.items():
        held = getattr(cls, key, None)
        if isinstance(held, property) and held.fset is None:  # `start_layer` read from `self._start_layer`
            key = f"_{key}"
        setattr(obj, key, value)
    return obj


def _decoder(cls: type, num_layers: int):
    """The inner decoder with L stand-in layers (`_tap_layer`), the attributes its capture code reads set as its
    __init__ sets them; a decoder whose layer loop is a module of its own (`_nested_loop`) holds that module, bare,
    with the stand-in layers."""
    import torch

    loop = _nested_loop(cls)
    if loop is not None:
        layers = _decoder(loop, num_layers)
    else:
        layers = torch.nn.ModuleList(_tap_layer(i + 1) for i in range(num_layers))
    return _bare(cls, layers=layers, start_layer=0, end_layer=num_layers, layers_to_capture=[],
                 aux_hidden_state_layers=())  # fmt: skip


@functools.cache
def _nested_loop(cls: type) -> type | None:
    """The module class a decoder builds as its `layers` where that is a loop of its own, which keeps the capture
    list and loops over its own layer list (vLLM's Plamo3Model holds a `Plamo3Decoder`, whose forward makes the
    capture): that class, else None."""
    import re

    import torch

    built = re.search(r"self\.layers\s*=\s*(\w+)\(", _class_source(cls))
    found = getattr(sys.modules[cls.__module__], built.group(1), None) if built else None
    if not (isinstance(found, type) and issubclass(found, torch.nn.Module)) or issubclass(
        found, torch.nn.ModuleList
    ):
        return None
    return found if hasattr(found, "_set_aux_hidden_state_layers") and "forward" in vars(found) else None


def _loop(inner):
    """The module that holds the stand-in layers and the capture list: the decoder, or its loop module."""
    return inner.layers if _nested_loop(type(inner)) is not None else inner


HIDDEN = 8  # the stand-in forward's width: any; each state is a constant
TOKENS = 3  # the stand-in forward's prompt
# a decoder layer's keywords through which its own code (not the decoder's loop) makes the capture
# (vLLM deepseek_v41/nvidia/model.py @0.33.0: `capture_previous_aux`, the layer returns its predecessor's tap)
INSIDE = ("capture_output", "capture_gathered", "captured_last_layer_outputs", "capture_previous_aux")
INSIDE_WORDS = "the release captures inside the decoder layer"  # why the stand-ins make no claim there
# vLLM Kimi-K3 (models/kimi_k3/nvidia/model.py @0.33.0, `attn_res_block_size` set): the state its loop captures after
# a layer is the block's prefix sum, or with VLLM_KIMI_K3_AUX_ATTN_RES_STREAM=1 the attention-residual stream the next
# layer reads (a Triton kernel): which layer it is taken after, stand-in layers show; what it is, they cannot
ATTN_RES_WORDS = ("an attention-residuals decoder: what it captures after a layer is the block's prefix sum, or the "
                  "attention-residual stream under VLLM_KIMI_K3_AUX_ATTN_RES_STREAM=1, not a state stand-in layers "
                  "can tell apart")  # fmt: skip


def _tap_layer(k: int):
    """A stand-in decoder layer whose output is the tap it makes: hidden_states = k, residual = 0, so the decoder's
    own loop, capturing `hidden_states + residual` wherever its code says, captures the constant k for tap h_k
    (the embeddings are h_0 = 0, residual None, as the real loop starts). Where a release captures inside the real
    layer instead (a `capture_output=` argument from SGLang 0.5.22; Qwen3-Next's `captured_last_layer_outputs=` list,
    filled by the layer communicator, at 0.5.9-0.5.10), the stand-in records that it was asked: no claim then."""
    layer = _tap_class()()
    layer.k = k
    return layer


@functools.cache
def _tap_class() -> type:
    import torch

    class TapLayer(torch.nn.Module):
        asked_inside = False  # a release that captures inside the real layer asked a stand-in to
        offered_inside = False
        # what a real layer's __init__ sets on one GPU and its decoder's loop reads (vLLM deepseek_v2.py,
        # qwen3_next.py @0.33.0): no sequence-parallel MoE
        use_sequence_parallel_moe = use_attn_reduce_scatter_for_moe = False
        single = False  # a loop whose layers return the hidden states alone (no residual: Granite's)
        extra = (
            0  # a loop whose layers return more than (hidden, residual): the rest None (GLM-5-Next's mixes)
        )
        streams = 0  # a loop over hyper-connection streams (`_mhc_stand_ins`): how many
        # a loop whose layers apply mhc_post themselves and return the reconstructed streams (`_mhc_stand_ins`)
        layer_post = False
        use_fused_mhc = False  # (the CPU platform's: no TileLang mHC kernels there)
        # no norm of its own the loop reads ahead (Beam's, fused into the previous layer's boundary: beam/nvidia
        # model.py @0.33.0, which passes a norm's weight on only where it is one)
        input_layernorm = None
        ple = None  # no per-layer embeddings (Qwen4-Exp's decoder asks each layer for its own: qwen4_exp.py @0.5.23)

        def forward(self, positions, hidden_states, *args, **kwargs):
            if any(kwargs.get(name) is not None for name in INSIDE):
                TapLayer.asked_inside = True
            if any(name in kwargs for name in INSIDE):
                TapLayer.offered_inside = True  # the loop hands its layers a capture target
            if TapLayer.streams and TapLayer.layer_post:
                # (reconstructed streams, None, None, None): every stream k (its first argument, x, has them)
                return torch.full_like(positions, float(self.k), dtype=torch.float32), None, None, None
            if TapLayer.streams:
                # (x, residual streams, post mix, residual mix): every stream the loop reconstructs is k
                n, tokens = TapLayer.streams, positions.shape[0]  # its first argument has a row per token
                return (torch.full((tokens, HIDDEN), float(self.k)), torch.zeros(tokens, n, HIDDEN),
                        torch.ones(tokens, n, 1), torch.eye(n).expand(tokens, n, n))  # fmt: skip
            # Kimi-Linear's layers: (hidden, prefix_sum, residual); the prefix sum None without AttnRes
            if "prefix_sum" in kwargs:
                return torch.full_like(hidden_states, float(self.k)), None, torch.zeros_like(hidden_states)
            if TapLayer.single:
                return torch.full_like(hidden_states, float(self.k))
            more = (None,) * TapLayer.extra  # a plain layer's: its output is already the summed stream
            return torch.full_like(hidden_states, float(self.k)), torch.zeros_like(hidden_states), *more

    return TapLayer


# what a decoder's __init__ sets from the server's parallel layout, as one GPU sets it (TP = PP = 1, no sequence
# parallelism, no expert-parallel mega-MoE, the whole vocabulary on the rank read through the plain embedding):
# each changes only how states are sharded or which kernel embeds, never which layer's state is captured
# (vLLM deepseek_v2.py, deepseek_v32/nvidia/model.py, qwen3_next.py @0.33.0)
ONE_GPU = {"use_sequence_parallel": False, "is_sequence_parallel": False, "replicated_embed": False,
           "use_native_mega_moe": False, "use_mega_moe": False}  # fmt: skip


# what decoders other than Llama's call their embeddings (GptOss: `embedding`; Bailing and Sarvam: `word_embeddings`)
EMBEDDINGS = ("embedding", "word_embeddings")


def _stand_ins(inner, config=None) -> None:
    """The parts of the decoder around its loop: embeddings (h_0 = 0; under its own name: `EMBEDDINGS`), the final
    norm (hidden + residual), first and last pipeline rank, the config its __init__ keeps (its loop reads
    options from it) and the layout flags of one GPU (`ONE_GPU`); the rotary tables its forward builds for its
    layers (`Aside`: the stand-ins read none); a front module holding the embeddings (`Front`)."""
    import re

    import torch

    class Embed(torch.nn.Module):
        def forward(self, input_ids):
            return torch.zeros(input_ids.shape[0], HIDDEN)

    class Norm(torch.nn.Module):
        def forward(self, hidden_states, residual=None, *args, **kwargs):
            return hidden_states if residual is None else (hidden_states + residual, hidden_states + residual)

    class Aside(torch.nn.Module):  # a positional table only the real layers read (the stand-ins ignore it)
        def forward(self, *args, **kwargs):
            return None

    class Front(torch.nn.Module):  # vLLM Gemma-4's `self_decoder`: the embeddings and per-layer inputs (PLE)
        def embed_input_ids(self, input_ids):
            return torch.zeros(input_ids.shape[0], HIDDEN)

        def get_per_layer_inputs(self, input_ids):
            return None  # no per-layer input: the stand-in layers read none

        def project_per_layer_inputs(self, inputs_embeds, per_layer_inputs):
            return None

    inner.embed_tokens, inner.norm = Embed(), Norm()
    if "self.self_decoder" in _class_source(type(inner)) and not hasattr(inner, "self_decoder"):
        inner.self_decoder = Front()  # a decoder whose embeddings live in a front module of its own
    # rotary tables the decoder builds once and hands its layers (SGLang Gemma-3's `rotary_emb`, `rotary_emb_local`)
    forward = _method_source(type(inner), "forward")
    for name in dict.fromkeys(re.findall(r"self\.(\w*(?:rotary|rope)\w*)\(", forward)):
        if not hasattr(inner, name):
            setattr(inner, name, Aside())
    for name in EMBEDDINGS:  # the decoder's own name for them
        if f"self.{name} =" in _class_source(type(inner)):
            setattr(inner, name, inner.embed_tokens)
    # norms its forward or embedding applies under names of their own (NemotronH's final `norm_f`, MuseGlimmer's
    # `embed_norm` on h_0): the stand-in norm (h_0 = 0 stays 0; the final one sums the stream, read by nothing)
    embed = _method_source(type(inner), "embed_input_ids")
    for name in dict.fromkeys(re.findall(r"self\.(\w*norm\w*)\(", forward + embed)):
        if not hasattr(inner, name):
            setattr(inner, name, Norm())
    # modules its loop hands every layer (InternS2-Mobius's shared `meta_mlp=self.meta_mlp`): the stand-in layers
    # read none of them, so an empty list stands in
    for name in dict.fromkeys(re.findall(r"\w+=self\.(\w+)\s*[,)]", forward)):
        if not hasattr(inner, name) and f"self.{name} = nn.ModuleList(" in _class_source(type(inner)):
            setattr(inner, name, torch.nn.ModuleList())
    inner.pp_group = SimpleNamespace(is_first_rank=True, is_last_rank=True, world_size=1, rank_in_group=0)
    if config is not None:
        if not hasattr(inner, "config"):
            inner.config = config
        _init_attributes(inner, config)
    for name, value in ONE_GPU.items():
        if not hasattr(inner, name):
            setattr(inner, name, value)
    if "self.parallel_config" in forward and not hasattr(inner, "parallel_config"):  # vLLM DeepSeek-V4.1's
        from vllm.config import ParallelConfig

        inner.parallel_config = ParallelConfig()  # one GPU's: no context, pipeline or data parallelism


def _method_source(cls: type, name: str) -> str:
    """The source of a method as the class resolves it (its own or a base class's); "" where there is none."""
    try:
        return inspect.getsource(getattr(cls, name))
    except (AttributeError, OSError, TypeError):
        return ""


@functools.cache
def _class_source(cls: type) -> str:
    """The class's own source (its __init__ may be wrapped by a compile decorator)."""
    try:
        return inspect.getsource(cls)
    except (OSError, TypeError):
        return ""


# what the stand-ins and the capture request already set: never taken from __init__
STOOD_IN = ("layers", "start_layer", "end_layer", "layers_to_capture", "aux_hidden_state_layers", "embed_tokens",
            "embedding", "norm", "pp_group", "config")  # fmt: skip


def _init_attributes(inner, config) -> None:
    """The plain values the decoder's own __init__ keeps (its `self.x = expr` lines, and the local names they use,
    evaluated in its module with the target's config, base classes first; an `if` whose test evaluates takes the
    branch it names): options its loop reads, such as SGLang's `use_dsa = is_deepseek_dsa(config)`,
    `next_full_attention_layer_id` or `enable_a2a_moe`. A line that needs more than the config (the server's
    parallel state, weights) is skipped, as is one that builds a module: the stand-ins stay, and `SERVER_DEFAULTS`
    give what a default launch sets."""
    import ast

    import torch

    def run(body: list, klass: type, namespace: dict) -> None:
        for stmt in body:
            if isinstance(stmt, ast.If):
                try:
                    taken = eval(compile(ast.Expression(stmt.test), klass.__name__, "eval"), namespace)
                except Exception:
                    continue
                run(stmt.body if taken else stmt.orelse, klass, namespace)
                continue
            target = stmt.targets[0] if isinstance(stmt, ast.Assign) and len(stmt.targets) == 1 else (
                stmt.target if isinstance(stmt, ast.AnnAssign) else None)  # fmt: skip
            if target is None or stmt.value is None:
                continue
            own = isinstance(target, ast.Attribute) and isinstance(target.value, ast.Name)
            own = own and target.value.id == "self"
            if not (own or isinstance(target, ast.Name)) or (own and target.attr in STOOD_IN):
                continue
            if _builds_dropout(stmt.value):  # the identity at inference, whatever rate the config gives
                value = torch.nn.Identity()
            else:
                try:
                    value = eval(compile(ast.Expression(stmt.value), klass.__name__, "eval"), namespace)
                except Exception:
                    continue
            # a module the line builds stays stood in; a slice of the stand-in layers is kept (GLM-5-Next's
            # `_active_layers = self.layers[start:end]`, the list its loop runs), as is a dropout
            if isinstance(value, torch.nn.Module) and not (
                _of_stand_ins(value, inner) or _builds_dropout(stmt.value)
            ):
                continue
            if own:
                setattr(inner, target.attr, value)
            else:
                namespace[target.id] = value

    for klass in reversed(type(inner).__mro__):
        if not klass.__module__.startswith(("sglang", "vllm")):
            continue
        init = _init_tree(klass)
        if init is not None:
            run(
                init.body,
                klass,
                dict(vars(sys.modules[klass.__module__])) | {"config": config, "self": inner},
            )
    for name, value in SERVER_DEFAULTS.items():
        if not hasattr(inner, name):
            setattr(inner, name, value)


def _builds_dropout(node) -> bool:
    """Whether an __init__ line's value builds a dropout (`torch.nn.Dropout(config.embedding_dropout)`: Sarvam's, on
    its embeddings), which is the identity in an engine's forward."""
    import ast

    func = node.func if isinstance(node, ast.Call) else None
    name = func.attr if isinstance(func, ast.Attribute) else func.id if isinstance(func, ast.Name) else ""
    return name.endswith("Dropout")


def _of_stand_ins(value, inner) -> bool:
    """Whether a module is a list of the decoder's own stand-in layers (a slice of `inner.layers`)."""
    import torch

    layers = getattr(inner, "layers", None)
    return (isinstance(value, torch.nn.ModuleList) and isinstance(layers, torch.nn.ModuleList)
            and all(any(m is layer for layer in layers) for m in value))  # fmt: skip


@functools.cache
def _init_tree(klass: type):
    """The class's own __init__, parsed (once per class: every case of the family reads it)."""
    import ast
    import textwrap

    try:
        tree = ast.parse(textwrap.dedent(_class_source(klass)))
    except SyntaxError:
        return None
    return next(
        (f for f in tree.body[0].body if isinstance(f, ast.FunctionDef) and f.name == "__init__"), None
    )


# what a default launch gives options a decoder's __init__ reads from the server's arguments (not from the config)
# SGLang qwen3_vl.py @0.5.23: `use_hf_deepstack_order` is on only with --rl-on-policy-target; vLLM gemma4.py
# (0.20+): `fast_prefill_enabled = cache_config.kv_sharing_fast_prefill`, off unless --kv-sharing-fast-prefill
SERVER_DEFAULTS = {"use_hf_deepstack_order": False, "fast_prefill_enabled": False}


def _mhc_stand_ins(inner) -> int:
    """A decoder over manifold-constrained hyper-connection streams (vLLM's DeepSeek-V4: its layers return
    (x, residual streams, post mix, residual mix) and the loop reconstructs a tap as the mean over the streams of
    `mhc_post`): the number of streams its config gives, with the loop's kernels stood in by the release's own torch
    reference for `mhc_post` (kernels/mhc/torch.py) and a mean for `hc_head`, the collapse after the loop (no tap).
    0 for any other decoder."""
    module = sys.modules[type(inner).__module__]
    source = _class_source(type(inner))
    if "layer.use_fused_mhc" in source:
        # the CPU branch (deepseek_v4/cpu/model.py @0.30.0-0.33.0): each layer applies mhc_post itself unless its
        # TileLang kernels are fused in (never on a CPU: layers/mhc.py `_has_tilelang_mhc`), and the loop takes the
        # mean of the streams a layer returns; the collapse after the loop is the model's own `hc_head_op`
        if getattr(module, "HAS_TILELANG_MHC", False):
            raise ProbeError("fused mHC kernels on this platform: the loop's hc_post is not stood in")
        import torch

        _tap_class().layer_post = True  # (`_forward_taps` resets it before each forward)
        inner.hc_head_op = lambda hidden_states, *args, **kwargs: hidden_states.float().mean(dim=-2)
        streams = int(getattr(inner, "hc_mult", 0) or getattr(inner.config, "hc_mult", 0) or 4)
        inner._mtp_hidden_buffer = torch.zeros(TOKENS, streams * HIDDEN)
        return streams
    if "mhc_post" not in source:
        return 0
    try:
        from vllm.model_executor.kernels.mhc.torch import mhc_post_torch
    except ImportError as exc:
        raise ProbeError(f"an mHC decoder without the release's torch reference for mhc_post: {exc}") from exc
    import torch

    for name in list(vars(module)):
        if name.startswith("mhc_post"):
            setattr(module, name, mhc_post_torch)
        elif name.startswith("hc_head"):
            setattr(module, name, lambda hidden_states, *args, **kwargs: hidden_states.float().mean(dim=-2))
    # the config's count (any count would do: every stream the stand-ins give carries the same k)
    streams = int(getattr(inner, "hc_mult", 0) or getattr(inner.config, "hc_mult", 0) or 4)
    # what a launch with a drafter gives its __init__ (`spec_config.use_eagle()`: every release copies the final
    # streams there after the loop, for an MTP head; no tap), one row per token of the probe's forward
    inner._mtp_hidden_buffer = torch.zeros(TOKENS, streams * HIDDEN)
    return streams


def _forward_taps(inner, engine: str = "sglang", config=None) -> dict:
    """Run the decoder's own forward (its loop, with stand-in layers) on three tokens: the taps of the aux states it
    returned (each state's constant), or why it could not run. A forward that needs more of the engine than the
    stand-ins give (a batch's attention metadata, a capture made inside the real layer) makes no claim."""
    import re

    import torch

    _stand_ins(inner, config)
    layer_cls = type(_loop(inner).layers[0])
    layer_cls.asked_inside = layer_cls.offered_inside = layer_cls.layer_post = False
    layer_cls.streams = 0
    if getattr(inner, "use_attn_res", False):
        return {"forward_error": f"{PROBE_FAILED}: {ATTN_RES_WORDS}"}
    ids, positions = torch.zeros(TOKENS, dtype=torch.long), torch.arange(TOKENS)
    mode = SimpleNamespace(is_extend=lambda: True, is_decode=lambda: False, is_idle=lambda: False,
                           is_target_verify=lambda: False, is_extend_or_draft_extend_or_mixed=lambda: True)  # fmt: skip
    # a prefill of one request: no two-batch overlap, no context-parallel split (SGLang's *_cp_metadata)
    batch = SimpleNamespace(forward_mode=mode, can_run_tbo=False, attn_cp_metadata=None, nsa_cp_metadata=None)
    third = batch if engine == "sglang" else None  # SGLang: the forward batch; vLLM: no intermediate tensors
    try:
        layer_cls.streams = _mhc_stand_ins(inner)
        try:
            out = type(inner).forward(inner, ids, positions, third)
        except (TypeError, ValueError) as exc:
            # the loop took a layer's (hidden, residual) as its hidden states: its layers return one output; or it
            # unpacks more than two (GLM-5-Next's deferred hyper-connection mixes, None after a plain layer)
            more = re.fullmatch(r"not enough values to unpack \(expected (\d+), got 2\)", str(exc))
            if ("must be Tensor, not tuple" not in str(exc) and not more) or layer_cls.offered_inside:
                raise  # (a loop that hands its layers a capture target runs the real layers instead)
            layer_cls.single, layer_cls.extra = not more, int(more.group(1)) - 2 if more else 0
            try:
                out = type(inner).forward(inner, ids, positions, third)
            finally:
                layer_cls.single, layer_cls.extra = False, 0
    except Exception as exc:
        if layer_cls.asked_inside or layer_cls.offered_inside or _hands_capture_target(inner, exc):
            return {"forward_error": f"{PROBE_FAILED}: {INSIDE_WORDS}"}
        return {"forward_error": _forward_failure(exc, "forward")}
    if layer_cls.asked_inside:
        return {"forward_error": f"{PROBE_FAILED}: {INSIDE_WORDS}"}
    aux = out[1] if isinstance(out, tuple) and len(out) == 2 and isinstance(out[1], (list, tuple)) else []
    aux = getattr(aux, "states", aux)
    taps = []
    for t in aux:
        vals = torch.unique(t)
        taps.append(int(vals[0]) if len(vals) == 1 and float(vals[0]).is_integer() else None)
    return {"forward_taps": taps}


def _hands_capture_target(inner, exc: BaseException) -> bool:
    """Whether a loop that stopped on a part of its real layers the stand-ins lack (Qwen4-Exp's hyper-connection
    norms, read before it calls a layer) hands its layers a capture target (`INSIDE`), or captures each state through
    that part: the capture is then made by the real layers, which run instead."""
    import re

    lacks = isinstance(exc, AttributeError) and "'TapLayer' object has no attribute" in str(exc)
    loops = "".join(_method_source(k, "forward") for k in type(inner).__mro__ if "forward" in vars(k))
    if lacks and any(f"{name}=" in loops for name in INSIDE):
        return True
    # or the loop takes each captured state from a part of the layer (SGLang 0.5.21's LongcatFlash:
    # `aux_hidden_states.append(self.layers[i].attn_boundary.snapshot(hidden_states, forward_batch))`)
    part = re.search(r"has no attribute '(\w+)'", str(exc)) if lacks else None
    flat = re.sub(r"\s+", "", loops)
    return (
        part is not None
        and re.search(rf"aux\w*\.append\(self\.layers\[\w+\]\.{part.group(1)}\.", flat) is not None
    )


def _raised_in(exc: BaseException, through: tuple[str, ...] = ()) -> str | None:
    """The engine's own functions that raised `exc`, outermost first ("A > B"), as its traceback names them; None
    where the innermost frame is not the engine's (the error came from elsewhere). Frames of the packages in
    `through` are passed over (torch's ModuleList raising the IndexError of an engine's `self.layers[i]`)."""
    names, tb, last = [], exc.__traceback__, None
    while tb is not None:
        code = tb.tb_frame.f_code
        if not any(f"/{p}/" in code.co_filename for p in through):
            last = any(f"/{p}/" in code.co_filename for p in ("vllm", "sglang"))
            if last:
                names.append(getattr(code, "co_qualname", code.co_name))
        tb = tb.tb_next
    return " > ".join(names) if last else None


LOADER_WORDS = "in the release's config loader, under the transformers it pins"


def _loader_refusal(exc: BaseException, engine: str) -> str | None:
    """The release's own config loader failing on the target's config.json, as every launch of the target runs it
    before any model is built: a deliberate raise of transformers' (an exception class of its own, not an operation
    a missing key broke) called from the release's code, under the transformers version the release pins (SGLang
    0.5.22-0.5.23's get_config reading `head_dim` of a Gemma-4 text config, which transformers 5.19 keeps per layer:
    AmbiguousGlobalPerLayerAttributeError). The engine's failure at load, in its words and where it was raised;
    None otherwise (a probe failure: no claim)."""
    own = (type(exc).__module__.startswith("transformers.") or _unknown_type(exc)) and _innermost_in(
        exc, "transformers"
    )
    where = _raised_in(exc, through=("transformers",))
    if not own or where is None or not _transformers_pinned(engine):
        return None
    return f"{type(exc).__name__}: {exc} (raised in {where}, {LOADER_WORDS})"


def _unknown_type(exc: BaseException) -> bool:
    """transformers' AutoConfig refusing a model type it does not know (its own ValueError, raised on purpose), where
    that type is one real checkpoints carry (`CHECKPOINT_TYPES`, never one the probe made up): the checkpoint is
    newer than the transformers here."""
    tb = _innermost(exc)
    return (isinstance(exc, ValueError) and tb is not None
            and tb.tb_frame.f_code.co_filename.endswith("/transformers/models/auto/configuration_auto.py")
            and any(f"model type `{t}`" in str(exc) for t, _ in CHECKPOINT_TYPES.values()))  # fmt: skip


def _innermost_in(exc: BaseException, package: str) -> bool:
    """Whether the frame that raised `exc` is the package's code."""
    tb = _innermost(exc)
    return tb is not None and f"/{package}/" in tb.tb_frame.f_code.co_filename


@functools.cache
def _transformers_pinned(engine: str) -> bool:
    """Whether the transformers imported here satisfies the engine release's own requirement on it (a release that
    names none: no)."""
    import importlib.metadata as metadata

    from packaging.requirements import Requirement

    try:
        have = metadata.version("transformers")
        requires = metadata.requires(engine) or []
    except metadata.PackageNotFoundError:  # an engine installed without its metadata: no pin to hold it to
        return False
    pins = [Requirement(r) for r in requires if r.startswith("transformers")]
    pins = [r for r in pins if r.marker is None or r.marker.evaluate()]
    return bool(pins) and all(r.specifier.contains(have) for r in pins)


def _forward_failure(exc: Exception, where: str) -> str:
    """A forward's failure as a result says it: the loop's own (a TypeError on None, what the engine meets) or a
    check of the release's own (`_checked_by_the_release`: SGLang's AuxHiddenStatePacker refusing fewer states than
    the drafter takes) in the engine's words; anything else a stand-in the forward could not use (no claim)."""
    text = f"{type(exc).__name__}: {exc}"
    own = isinstance(exc, TypeError) and "NoneType" in str(exc) and not _raised_by_a_stand_in(exc)
    own |= _checked_by_the_release(exc)
    return text if own else f"{PROBE_FAILED}: {where}: {text}"


def _checked_by_the_release(exc: BaseException) -> bool:
    """Whether `exc` comes from a `raise` or `assert` statement of the release's own code (its innermost frame is
    the engine's, on such a line): a check the engine makes, not an operation a stand-in's output broke (a torch
    op failing inside an engine line raises from that line too, but the line is the call, not a raise)."""
    tb = _innermost(exc)
    if tb is None or _raised_in(exc) is None:
        return False
    return any(a <= tb.tb_lineno <= b for a, b in _checks(tb.tb_frame.f_code.co_filename))


@functools.cache
def _checks(filename: str) -> tuple[tuple[int, int], ...]:
    """The line spans of a source file's `raise` and `assert` statements (a multi-line one raises from any of its
    lines: 0.5.17's packer asserts with its message on the next line)."""
    try:
        tree = ast.parse("".join(linecache.getlines(filename)))
    except SyntaxError:
        return ()
    return tuple(
        (n.lineno, n.end_lineno or n.lineno) for n in ast.walk(tree) if isinstance(n, ast.Raise | ast.Assert)
    )


def _raised_by_a_stand_in(exc: BaseException) -> bool:
    """Whether the innermost frame of the exception is this probe's own code (a stand-in handed None, such as a
    TapLayer inside a real layer whose block it stood in): the probe's failure, never the engine's answer."""
    tb = _innermost(exc)
    return tb is not None and Path(tb.tb_frame.f_code.co_filename).resolve() == Path(__file__).resolve()


def _innermost(exc: BaseException):
    """The traceback entry of the frame that raised `exc` (None where it has no traceback)."""
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    return tb


@functools.cache
def _check_builds(inner: type, *owners: type) -> None:
    """The inner class named in the tables above is one an outer class's code builds (a typo would test nothing)."""
    text = "".join(
        _class_source(k) for o in owners for k in o.__mro__ if k.__module__.startswith(("sglang", "vllm"))
    )
    assert inner.__name__ in text, f"{inner.__name__} is not built by {[o.__name__ for o in owners]}"


@functools.cache
def _found_inner(cls: type) -> type | None:
    """An architecture outside the tables above (the registry's other EAGLE-3 targets): the decoder its own code
    builds as `self.model = X(...)` (or `self.model = self.model_cls(...)`, a class attribute, or
    `self.model = self._init_model(...)`, whose `return X(...)` or `return self.model_cls(...)` names it), looked
    up in the module of the class whose code names it; None for a wrapper."""
    import re

    def source(k: type) -> str:
        return _class_source(k) if k.__module__.startswith(("sglang", "vllm")) else ""

    def named(k: type, name: str) -> type | None:
        found = getattr(sys.modules[k.__module__], name, None)
        return found if isinstance(found, type) else None

    for k in cls.__mro__:
        built = re.search(r"self\.model\s*(?::[^=\n]+)?=\s*([\w.]+)\(", source(k))
        if not built:
            continue
        if not built.group(1).startswith("self."):
            default = _init_default(cls, built.group(1))  # `language_model_cls=X` in a subclass's __init__
            return default if isinstance(default, type) else named(k, built.group(1))
        method = built.group(1).removeprefix("self.")
        built_by = getattr(cls, method, None)
        if isinstance(built_by, type):  # `self.model = self.model_cls(...)`: a class attribute
            return built_by
        for m in cls.__mro__:
            body = re.search(rf"def {method}\(.*?\n(.*?)(?=\n    def |\Z)", source(m), re.S)
            if body:
                ret = re.search(r"return\s+([\w.]+)\(", body.group(1))
                # `return self.model_cls(...)`: a class attribute
                if ret and ret.group(1).startswith("self."):
                    built_by = getattr(cls, ret.group(1).removeprefix("self."), None)
                    return built_by if isinstance(built_by, type) else None
                return named(m, ret.group(1)) if ret else None
        return None
    return None


def _keeps_text_config(cls: type) -> bool:
    """Whether a wrapper's own __init__ keeps its text config as `self.config` (GLM-5-Next's: the decoder it
    builds, and the capture request, read that one)."""
    import re

    kept = re.search(r"self\.config\s*=\s*(config\.)?text_config\b", _method_source(cls, "__init__"))
    return kept is not None


def _keeps_capture(cls: type) -> bool:
    """Whether a class's own code keeps the capture list (`layers_to_capture`): a decoder, where a wrapper keeps
    its decoder itself as its text model (SGLang's Gemma-4: `self.language_model = Gemma4TextModel(...)`)."""
    return cls.__module__.startswith("sglang") and "self.layers_to_capture" in _class_source(cls)


def _init_default(cls: type, name: str) -> Any:
    """The default of an __init__ parameter `name` (the first class of the MRO whose __init__ takes it)."""
    for k in cls.__mro__:
        try:
            param = inspect.signature(k.__dict__["__init__"]).parameters.get(name)
        except (KeyError, TypeError, ValueError):
            continue
        if param is not None and param.default is not inspect.Parameter.empty:
            return param.default
    return None


@functools.cache
def _found_text(cls: type) -> type | None:
    """A multimodal wrapper outside the tables above: the text model its own code builds as
    `self.language_model = X(...)`, or through `init_vllm_registered_model(..., architectures=["X", ...])` (the
    registry's class for X); None where the wrapper names neither (its text model then comes from the checkpoint)."""
    import re

    for k in cls.__mro__:
        if not k.__module__.startswith(("vllm", "sglang")):
            continue
        built = re.search(
            r"self\.language_model\s*(?::[^=\n]+)?=\s*(\w+)\((.{0,600})", _class_source(k), re.S
        )
        if not built:
            continue
        if built.group(1) == "init_vllm_registered_model":
            # the first it names: the registry's resolve_model_cls takes them in order (HunYuan-VL's dense, MoE)
            named = re.search(r"architectures=\[\s*[\"'](\w+)[\"']", built.group(2))
            if named:
                return _vllm_class(named.group(1))
            # the text model the checkpoint's text_config names (Llava's): its transformers default, of the
            # wrapper or of the wrapper it extends (Mantis is a Llava)
            text = next((t for b in cls.__mro__ if (t := _default_text_arch(b.__name__))), None)
            return _vllm_class(text) if text else None
        found = getattr(sys.modules[k.__module__], built.group(1), None)
        return found if isinstance(found, type) else None
    return None


@functools.cache
def _default_text_arch(arch: str) -> str | None:
    """A multimodal wrapper that builds the text model its checkpoint's `text_config` names: the causal LM of the
    text model type transformers' config for the wrapper defaults to (Llava: Llama), where vLLM's registry serves
    it; None where transformers does not know the wrapper."""
    from transformers import AutoConfig
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES
    from vllm.model_executor.models.registry import _VLLM_MODELS

    found = _hf_model_type(arch)
    if found is None or not found[1]:
        return None
    text = getattr(AutoConfig.for_model(found[0]), "text_config", None)
    name = MODEL_FOR_CAUSAL_LM_MAPPING_NAMES.get(getattr(text, "model_type", None))
    return name if name in _VLLM_MODELS else None


class ProbeError(Exception):
    """The probe could not build the model tree (not the engine's answer): recorded, never compared."""


PROBE_FAILED = "probe could not build the model"


def _qualname(cls: type, package: str) -> str:
    return cls.__module__.removeprefix(package + ".") + "." + cls.__name__


# ---- SGLang ----------------------------------------------------------------------------------------------------

_SGLANG_CONFIGS: dict[tuple[str, int], Any] = {}


def _sglang_config(arch: str, num_layers: int, model_type: str | None = None):
    """SGLang's own loader on a config.json with L layers (it copies a wrapper's text keys to the top level)."""
    try:
        from sglang.srt.utils.hf_transformers.config import get_config
    except ImportError:  # older releases: sglang/srt/utils/hf_transformers_utils.py, before that srt/
        try:
            from sglang.srt.utils.hf_transformers_utils import get_config
        except ImportError:
            from sglang.srt.hf_transformers_utils import get_config

    key = (arch, num_layers, model_type)
    if key not in _SGLANG_CONFIGS:
        _SGLANG_CONFIGS[key] = get_config(
            str(_target_dir(arch, num_layers, model_type)), trust_remote_code=_remote(arch, model_type)
        )
    return _SGLANG_CONFIGS[key]


# DeepSeek-V3's own rope scaling (its config.json): SGLang's MLA model config reads its factor (model_config.py,
# DeepSeek branch), which transformers 5's default rope entry lacks. Shared with the draft-settings generators.
YARN = {"type": "yarn", "factor": 40, "original_max_position_embeddings": 4096, "beta_fast": 32, "beta_slow": 1,
        "mscale": 1.0, "mscale_all_dim": 1.0}  # fmt: skip


# keys a family's checkpoints carry in config.json that its transformers config class does not default, and that
# the engine's model code reads as it builds the real layers: DeepSeek-V3's (and Kimi's) MoE layer frequency;
# Qwen3-Next-80B-A3B's full-attention interval (SGLang's own Qwen3NextConfig derives its layer types from it)
CHECKPOINT_KEYS = {
    "deepseek": {"rope_scaling": YARN, "moe_layer_freq": 1},
    "kimi": {"rope_scaling": YARN, "moe_layer_freq": 1},
    "qwen3_next": {"full_attention_interval": 4},
    "qwen3_5": {"full_attention_interval": 4},  # Qwen3.5's checkpoints: Qwen3-Next's hybrid layout
    # Intern-S2-Preview's checkpoints: Qwen3.5-MoE's config, and its hybrid layout
    "intern_s2_preview": {"full_attention_interval": 4},
    # Gemma-4 31B and 26B-A4B, the checkpoints drafters are trained for: no per-layer inputs (PLE is E2B/E4B's:
    # SGLang gemma4_causal.py @0.5.23), which transformers' Gemma4TextConfig defaults to 256
    "gemma4": {"hidden_size_per_layer_input": 0},
    # GLM-5's (DeepSeek-V3's keys; SGLang's deepseek_v2.py _is_layer_sparse reads it unconditionally, 0.5.2x)
    "glm_moe_dsa": {"moe_layer_freq": 1},
    # InternS2-Mobius's: Qwen3.5-MoE's hybrid layout, which its checkpoints spell out per layer (`layer_types`, the
    # schedule SGLang's Mobius model reads: interns2_mobius.py @0.5.23); written for L layers (`PER_LAYER`)
    "interns2_mobius": {"full_attention_interval": 4, "layer_types": None},
    # K-EXAONE's: one dense layer first, then MoE, which SGLang's EXAONE-MoE model reads per layer (`is_moe_layer`,
    # exaone_moe.py @0.5.23; transformers 5 states it as `mlp_layer_types`)
    "exaone_moe": {"first_k_dense_replace": 1, "is_moe_layer": None},
    # Qwen4-Exp's: SGLang's Qwen4ExpTextConfig is a Qwen3NextConfig, its layout that interval's where a checkpoint
    # names no `layer_types` (configs/qwen4_exp.py @0.5.23)
    "qwen4_exp": {"full_attention_interval": 4},
    # MiniMax-M2's partial rotary, as its released checkpoints state it (MiniMaxAI/MiniMax-M2 config.json; transformers
    # 5 keeps the field beside the partial_rotary_factor it derives), which vLLM's layers read (minimax_m2.py @0.33.0)
    "minimax_m2": {"rotary_dim": 64},
}
# the per-layer keys a `CHECKPOINT_KEYS` entry leaves None, each layer's value from the family's other keys: the
# hybrid schedule (every interval-th layer a full-attention one), the MoE layers after the first dense ones
PER_LAYER = {
    "layer_types": lambda text, i: (
        "full_attention" if (i + 1) % text["full_attention_interval"] == 0 else "linear_attention"
    ),
    "is_moe_layer": lambda text, i: i >= text["first_k_dense_replace"],
}
# architectures whose config class is their checkpoints' remote code, a type transformers does not know (their
# config is then a Llama one): the fields those checkpoints carry that the model code reads. MiniCPM's muP scales
# (configuration_minicpm.py; openbmb/MiniCPM-2B's values; vLLM minicpm.py reads scale_emb in its forward)
ARCH_KEYS = {
    "MiniCPMForCausalLM": {"scale_emb": 12, "dim_model_base": 256, "scale_depth": 1.4},
    # GLM-4.7-Flash's config.json (DeepSeek-V3 lineage: one dense layer first); transformers 5's Glm4MoeLiteConfig
    # says it as `mlp_layer_types` only, and SGLang's real layers (0.5.21+) read the key
    "Glm4MoeLiteForCausalLM": {"first_k_dense_replace": 1},
    # Kimi-K3's attention residuals (moonshotai/Kimi-K3 config.json: blocks of 12 layers); Kimi-Linear has none
    "KimiK3ForConditionalGeneration": {"attn_res_block_size": 12},
    "KimiLinearForCausalLM": {"attn_res_block_size": None},
}


def _checkpoint_keys(arch: str, model_type: str, num_layers: int) -> dict[str, Any]:
    """The keys the target's checkpoints carry beyond its config class's defaults: its architecture's (`ARCH_KEYS`)
    and its family's (`CHECKPOINT_KEYS`), a per-layer schedule written out for L layers (`PER_LAYER`)."""
    text: dict[str, Any] = dict(ARCH_KEYS.get(arch, {}))
    for prefix, keys in CHECKPOINT_KEYS.items():
        if model_type.startswith(prefix):
            text |= keys
    for key, per_layer in PER_LAYER.items():  # a schedule its checkpoints spell out per layer, for L layers
        if key in text and text[key] is None:
            text[key] = [per_layer(text, i) for i in range(num_layers)]
    return text


@functools.cache
def _target_dir(arch: str, num_layers: int, model_type: str | None = None) -> Path:
    """A model folder holding only the target's config.json (kept for the probe's life: a launch reads it), with
    the keys its family's (`CHECKPOINT_KEYS`) or architecture's (`ARCH_KEYS`) checkpoints carry, and the config
    code of a checkpoint that brings its own (`REMOTE_CONFIG`)."""
    model_type, wrapped = _model_type(arch, model_type)
    text = {"num_hidden_layers": num_layers} | _checkpoint_keys(arch, model_type, num_layers)
    cfg: dict[str, Any] = {"architectures": [arch], "model_type": model_type}
    if wrapped and model_type not in FLAT_CHECKPOINTS:
        cfg["text_config"] = text
    else:
        cfg |= text
    folder = Path(tempfile.mkdtemp(prefix="capture-probe-"))
    if model_type in REMOTE_CONFIG:  # the checkpoint's own config code (served with --trust-remote-code)
        module, name, code = REMOTE_CONFIG[model_type]
        (folder / f"{module}.py").write_text(code)
        cfg["auto_map"] = {"AutoConfig": f"{module}.{name}"}
    (folder / "config.json").write_text(json.dumps(cfg))
    return folder


# wrappers whose published checkpoints keep the text model's keys at the top level (Qwen/Qwen2.5-VL-7B-Instruct's
# config.json: only vision_config nested), which every transformers loads; transformers 4.57.1 (SGLang 0.5.x's pin)
# drops `architectures` from one written with text_config, and the launch then fails on its own
FLAT_CHECKPOINTS = frozenset({"qwen2_vl", "qwen2_5_vl"})

# model types transformers does not know, whose checkpoints bring their config class as remote code: (its module,
# its class, the module's code). Kimi-K2's configuration_deepseek.py is DeepSeek-V3's config class under model_type
# `kimi_k2`; Ling-2.0's (inclusionAI) configuration_bailing_moe_v2.py is the class SGLang ships a copy of
# (sglang/srt/configs/bailing_moe_v2.py, for its multimodal Bailing models), taken from there
REMOTE_CONFIG = {
    "kimi_k2": ("configuration_deepseek", "DeepseekV3Config", "from transformers import DeepseekV3Config as _Base"
                "\n\n\nclass DeepseekV3Config(_Base):\n    model_type = 'kimi_k2'\n"),
    "bailing_moe_v2": ("configuration_bailing_moe_v2", "BailingMoeV2Config",
                       "from sglang.srt.configs.bailing_moe_v2 import BailingMoeV2Config  # noqa: F401\n"),
}  # fmt: skip
# architectures whose checkpoints name such a model type: Ling's; Sarvam's MoE, which SGLang builds as Bailing's
# (SarvamMoEForCausalLM(BailingMoEForCausalLM): the same code reads the same keys)
REMOTE_ARCHS = dict.fromkeys(
    ("BailingMoEForCausalLM", "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM", "SarvamMoEForCausalLM"),
    "bailing_moe_v2",
)


def _remote_type(arch: str) -> str | None:
    """The model type of an architecture served from remote config code (`REMOTE_ARCHS`), where the installed
    release holds the class that code takes (SGLang ships its Bailing copy from 0.5.21 on); None otherwise (the
    config is then the plain decoder's, whose keys the release's loop reads)."""
    model_type = REMOTE_ARCHS.get(arch)
    if model_type is None:
        return None
    source = REMOTE_CONFIG[model_type][2].split()[1]  # `from <module> import ...`
    try:
        found = importlib.util.find_spec(source) is not None
    except ModuleNotFoundError:
        found = False
    return model_type if found else None


def _remote(arch: str, model_type: str | None) -> bool:
    """Whether the target's config is remote code (the launch then trusts it, as a Kimi-K2 launch must)."""
    return _model_type(arch, model_type)[0] in REMOTE_CONFIG


@functools.cache
def _sglang_launch(arch: str, num_layers: int, model_type: str | None = None) -> str | None:
    """A default launch of the target (`ServerArgs(model_path=..., device='cpu')`, the release's own post-init),
    set where the release's model code reads the launch: `set_global_server_args_for_scheduler` (0.5.x before the
    runtime context) or the runtime context the scheduler publishes (0.5.17+), and the MoE settings the model
    runner initializes from it. Model code that asks about the launch (context parallelism, DSA options, the MoE
    all-to-all backend) then reads a plain launch's defaults. What was set, or None."""
    import torch
    from sglang.srt import server_args as module

    done = None
    # a launch the release refuses on a CPU (Qwen3-Next's default mamba extra buffer, 0.5.19+: "requires platform
    # support for Mamba cache state snapshots") is made as a CPU user must make it, without the radix cache, which
    # holds no part of the capture; one whose resolution asks the GPU's compute capability (DSA targets: GLM-5's
    # kv-cache dtype and backend defaults, 0.5.2x model_hook.py) is made as on a Hopper GPU, and one that requires a
    # GPU attention backend (EXAONE-MoE: fa3, triton or trtllm_mha, 0.5.22+) with FlashAttention-3, a Hopper launch's,
    # or with Triton where the release takes only that on a GPU (Gemma-4: trtllm_mha, triton or intel_xpu, 0.5.13-0.5.17)
    # (the attention blocks are stood in: no backend takes part in the capture); one refused every way sets nothing
    # (0.4.5.post3-0.4.6.x size their launch by the device's memory, which a CPU does not report: such a launch is made
    # as on an 80 GB GPU, last, so that no launch another attempt makes changes)
    attempts = (
        ({}, False),
        ({"disable_radix_cache": True}, False),
        ({}, True),
        ({"attention_backend": "fa3"}, True),
        ({"attention_backend": "triton"}, True),
        ({}, "memory"),
    )
    for extra, gpu in attempts:
        try:
            with (
                _answering(torch.cuda, "get_device_capability", H100_CAPABILITY if gpu else None),
                _answering(module, "get_device_memory_capacity", H100_MIB if gpu == "memory" else None),
            ):
                launch = module.ServerArgs(model_path=str(_target_dir(arch, num_layers, model_type)), device="cpu",
                                           trust_remote_code=_remote(arch, model_type), **extra)  # fmt: skip
                done = publish(launch)
            if done is None and hasattr(module, "set_global_server_args_for_scheduler"):
                module.set_global_server_args_for_scheduler(launch)
                done = "server_args.set_global_server_args_for_scheduler(server_args)"
        except Exception as exc:
            _REFUSED[(arch, num_layers, model_type)] = _stop_words(exc)
            continue
        done = done or "ServerArgs(...)"
        if extra:
            done += " with " + " ".join(
                f"--{k.replace('_', '-')}" + ("" if v is True else f" {v}") for k, v in extra.items()
            )
        if gpu:
            done += " (as on a GPU of compute capability 9.0" + (", 80 GB)" if gpu == "memory" else ")")
        _LAUNCHES[(arch, num_layers, model_type)] = launch
        break
    if done is None:
        return None
    try:  # the MoE settings the model runner initializes from the launch (0.5.x: layers/moe/utils.py)
        from sglang.srt.layers.moe import initialize_moe_config

        initialize_moe_config(launch)
    except Exception:
        pass
    return done


# an H100's, as torch reports them: compute capability, and memory in MiB (what SGLang's get_device_memory_capacity
# returns; ServerArgs sizes its defaults by it). Shared with draft_probe_sglang.py
H100_CAPABILITY = (9, 0)
H100_MIB = 81559


@contextlib.contextmanager
def _answering(owner, name: str, answer):
    """`owner.name(...)` answering `answer` for the block (None, or an owner without that function: as it is)."""
    real = getattr(owner, name, None)
    if answer is None or real is None:
        yield
        return
    setattr(owner, name, lambda *args, **kwargs: answer)
    try:
        yield
    finally:
        setattr(owner, name, real)


@contextlib.contextmanager
def _sglang_forward_context():
    """For the block, the ForwardContext a release's model runner publishes around every forward
    (ModelRunner._forward_raw, 0.5.2x), which model code reads (DeepSeek/GLM DSA's top-k sharing asks the attention
    backend whether it runs MHA): its attention backend a stand-in with no options set (the default path), every
    other required field likewise. Only around the forward: code that builds layers asserts it runs outside one
    (`is_shared_experts_fusion_disabled`). Nothing where the release has none."""
    import dataclasses

    try:
        from sglang.srt.model_executor.forward_context import ForwardContext, forward_context
    except ImportError:
        yield
        return
    needed = [f.name for f in dataclasses.fields(ForwardContext)
              if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]  # fmt: skip
    with forward_context(ForwardContext(**{name: SimpleNamespace() for name in needed})):
        yield


def publish(server_args: Any) -> str | None:
    """Releases with a process-wide runtime context (0.5.17+) read the server's settings from it, which the
    scheduler process publishes before it builds its workers (managers/scheduler.py run_scheduler_process): the
    same call, as the scheduler makes it. None where the release has none. Shared with draft_probe_sglang.py."""
    try:
        from sglang.srt import runtime_context as rc
    except ImportError:
        return None
    call = getattr(rc, "publish", None)
    if call is None:
        return None
    params = inspect.signature(call).parameters
    kwargs: dict[str, Any] = {"role": "scheduler"} if "role" in params else {}
    if "ranks" in params and hasattr(rc, "SpawnRanks"):
        fields = inspect.signature(rc.SpawnRanks).parameters
        ranks = {"world_rank": 0, "dp_rank": None, "gpu_id": 0}
        kwargs["ranks"] = rc.SpawnRanks(**{k: v for k, v in ranks.items() if k in fields})
    call(server_args, **kwargs)
    return "runtime_context.publish(server_args, role='scheduler')"


# architecture -> (model type, wrapper) its checkpoints carry, as the newest transformers names it (the cases'
# `checkpoint_type`, model_code.py): where the transformers a release pins does not know the type, its config.json
# still names it, and the release's own loader meets that (SGLang 0.5.13-0.5.14's Gemma-4-Unified under 5.8.1)
CHECKPOINT_TYPES: dict[str, tuple[str, bool]] = {}


def _model_type(arch: str, model_type: str | None) -> tuple[str, bool]:
    """(model_type, text model under text_config) of the target config.json: the case's own model_type where it
    names one (a family with no architecture of its own: Kimi-K2 is DeepseekV3ForCausalLM with `kimi_k2`), else
    the architecture's; a registry target outside the table: a plain decoder."""
    found, wrapped = (
        _MODEL_TYPES.get(arch) or _hf_model_type(arch) or CHECKPOINT_TYPES.get(arch) or ("llama", False)
    )
    if model_type in _ENGINE_TYPES:  # a config class the engine ships: a wrapper where it has a text config
        wrapped = _ENGINE_TYPES[model_type]
    return (model_type or found), wrapped


@functools.cache
def _hf_model_type(arch: str) -> tuple[str, bool] | None:
    """A registry target outside the table: the model_type transformers' auto classes serve the architecture from
    (a causal LM's own text type; a wrapper's type, its text model under text_config), or None where transformers
    does not know it."""
    from transformers import AutoConfig
    from transformers.models.auto import modeling_auto

    types = [
        t
        for name in dir(modeling_auto)
        if name.endswith("_MAPPING_NAMES")
        for t, a in getattr(modeling_auto, name).items()
        # any case: transformers' LightOnOcr is vLLM's LightOnOCR
        if arch.lower() in (x.lower() for x in (a if isinstance(a, (list, tuple)) else [a]))
    ]
    for model_type in dict.fromkeys(types):
        try:
            wrapped = hasattr(AutoConfig.for_model(model_type), "text_config")
        except (ValueError, KeyError, TypeError):
            continue
        if wrapped == arch.endswith("ForConditionalGeneration"):
            return model_type, wrapped
    return None


# the target config.json an architecture is served from: (model_type, text model under text_config)
_MODEL_TYPES = {
    "LlamaForCausalLM": ("llama", False), "MistralForCausalLM": ("mistral", False),
    "Mistral3ForConditionalGeneration": ("mistral3", True), "Llama4ForCausalLM": ("llama4_text", False),
    "Llama4ForConditionalGeneration": ("llama4", True), "Qwen2ForCausalLM": ("qwen2", False),
    "Qwen2_5_VLForConditionalGeneration": ("qwen2_5_vl", True), "Qwen2VLForConditionalGeneration": ("qwen2_vl", True),
    "Qwen3ForCausalLM": ("qwen3", False), "Qwen3MoeForCausalLM": ("qwen3_moe", False),
    "Qwen3NextForCausalLM": ("qwen3_next", False), "Qwen3VLForConditionalGeneration": ("qwen3_vl", True),
    "Qwen3VLMoeForConditionalGeneration": ("qwen3_vl_moe", True), "GptOssForCausalLM": ("gpt_oss", False),
    "DeepseekV2ForCausalLM": ("deepseek_v2", False), "DeepseekV3ForCausalLM": ("deepseek_v3", False),
    "DeepseekV32ForCausalLM": ("deepseek_v32", False), "DeepseekV4ForCausalLM": ("deepseek_v4", False),
    "KimiK25ForConditionalGeneration": ("kimi_k25", True), "Glm4MoeForCausalLM": ("glm4_moe", False),
    "MiniMaxM2ForCausalLM": ("minimax_m2", False),
}  # fmt: skip


def _typed(arch: str) -> bool:
    """Whether the target's model type is already known: the table's, or the one transformers serves it from."""
    return arch in _MODEL_TYPES or _hf_model_type(arch) is not None


def _untyped_checkpoint(arch: str) -> str | None:
    """The model type the target's checkpoints carry where the transformers here (a release's pin) does not know
    it, though the newest does (`CHECKPOINT_TYPES`): the release's loader then meets it, not a type the class it
    extends has. None where it is known here (the config is then the one it names)."""
    return None if _typed(arch) else (CHECKPOINT_TYPES.get(arch) or (None,))[0]


def _base_type(arch: str, module: str | None) -> str | None:
    """A target transformers does not know whose SGLang class extends a class the table lists: that class's model
    type, whose keys the release's config code then reads (MistralLarge3ForCausalLM is a DeepseekV3ForCausalLM, and
    SGLang's model_config.py derives its MLA shapes from `kv_lora_rank`). None otherwise."""
    if _typed(arch) or not module:
        return None
    try:
        cls = getattr(importlib.import_module(module), arch)
    except Exception:
        return None
    base = next((k.__name__ for k in cls.__mro__[1:] if k.__name__ in _MODEL_TYPES), None)
    return _MODEL_TYPES[base][0] if base else None


def _sglang_config_type(arch: str, module: str | None) -> str | None:
    """A target whose model type transformers does not know, whose config class SGLang ships (sglang/srt/configs/,
    named for it, imported by its model file or exported by the package: Cosmos-3's `Cosmos3Config`, Intern-S2
    Preview's): that class's model type, which SGLang's loader registers. None otherwise (a type transformers
    knows, or none found: the plain decoder's config then)."""
    import re

    from transformers import PretrainedConfig

    if _typed(arch) or not module:
        return None
    name = re.sub(r"For\w+$", "", arch) + "Config"
    cls = None
    for where in (module, "sglang.srt.configs"):  # its model file's import, else the package's exports
        try:
            cls = cls or vars(importlib.import_module(where)).get(name)
        except Exception:
            continue
    if not (
        isinstance(cls, type) and issubclass(cls, PretrainedConfig) and cls.__module__.startswith("sglang.")
    ):
        return None
    model_type = getattr(cls, "model_type", None) or None
    if model_type:
        try:
            _ENGINE_TYPES[model_type] = hasattr(cls(), "text_config")
        except Exception:
            return None
    return model_type


# model types of the config classes an engine ships (_sglang_config_type) -> whether the class has a text config
_ENGINE_TYPES: dict[str, bool] = {}


def _sglang_request_capture(model, ids) -> str:
    """Ask the target to capture the way the installed release's model runner does, by what the release has:
    `configure_aux_hidden_state_capture` (0.5.16+, model_runner_components/attention_backend_setup.py, called with
    the keywords its signature takes), else `set_eagle3_layers_to_capture(ids)` (0.4.9-0.5.15: model_runner.py),
    else `set_eagle3_layers_to_capture()` (0.4.5-0.4.8.post1: the runner reads no ids). The entry's name is
    returned for the record."""
    import contextlib

    try:
        from sglang.srt.model_executor.model_runner_components.attention_backend_setup import (
            configure_aux_hidden_state_capture as configure,
        )
    except ImportError:
        configure = None
    try:
        from sglang.srt.runtime_context import get_parallel

        scope = get_parallel().override(pp_group=model.pp_group)
    except ImportError:
        scope = contextlib.nullcontext()
    with scope:
        if configure is not None:
            wanted = inspect.signature(configure).parameters
            given = dict(model=model, eagle_use_aux_hidden_state=True, eagle_aux_hidden_state_layer_ids=ids,
                         dflash_use_aux_hidden_state=False, dflash_target_layer_ids=None, is_dspark=False)  # fmt: skip
            configure(**{k: v for k, v in given.items() if k in wanted})
            return "attention_backend_setup.configure_aux_hidden_state_capture"
        if len(inspect.signature(model.set_eagle3_layers_to_capture).parameters) >= 1:
            model.set_eagle3_layers_to_capture(ids)
            return "model.set_eagle3_layers_to_capture(ids)"
        model.set_eagle3_layers_to_capture()
        return "model.set_eagle3_layers_to_capture() (no ids read)"


@functools.cache
def _sglang_graph_sequence() -> dict | None:
    """The capture calls a CUDA launch of the installed release makes on the target, in order, where its CUDA-graph
    runner makes one of its own (before 0.5.11 `CudaGraphRunner.__init__` calls `set_eagle3_layers_to_capture()`
    with no ids before it captures: graph-replayed steps keep what that call set, sglang PR #22836). Found in the
    release's own model_runner.py and cuda_graph_runner.py (their syntax trees, not imported): `order` is
    ("graph", "request") where `ModelRunner.initialize` builds the graphs before its own request, else ("request",
    "graph"); `at` names the two calls' lines. None where the graph runner makes no call."""
    spec = importlib.util.find_spec("sglang.srt.model_executor.model_runner")
    if spec is None or spec.origin is None:
        return None
    folder = Path(spec.origin).parent

    def calls(node, name: str) -> list:
        return [n for n in ast.walk(node) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and n.func.attr == name]  # fmt: skip

    graphs = folder / "cuda_graph_runner.py"
    if not graphs.is_file():
        return None
    graph = [c for c in calls(ast.parse(graphs.read_text()), "set_eagle3_layers_to_capture") if not c.args]
    if not graph:
        return None
    runner = ast.parse(Path(spec.origin).read_text())
    init = next((f for n in ast.walk(runner) if isinstance(n, ast.ClassDef) and n.name == "ModelRunner"
                 for f in n.body if isinstance(f, ast.FunctionDef) and f.name == "initialize"), None)  # fmt: skip
    if init is None:
        return None
    built = [c.lineno for name in ("init_cuda_graphs", "init_device_graphs") for c in calls(init, name)]
    asked = [c.lineno for c in calls(init, "set_eagle3_layers_to_capture") if c.args]
    # a release whose runner reads no ids (0.4.5-0.4.8) asks in load_model, before the graphs: both calls then
    # set the default
    order = ("request", "graph") if asked and built and asked[0] < min(built) else ("graph", "request")
    at = f"model_executor/cuda_graph_runner.py:{graph[0].lineno}"
    if asked:
        at += f", model_executor/model_runner.py:{asked[0]}"
    return {"order": order, "at": at}


def _sglang_launch_request(model, ids, graph: dict | None) -> str:
    """The runner's capture request (`_sglang_request_capture`), with the CUDA-graph runner's own no-ids call before
    or after it where `graph` (a CUDA launch's sequence, `_sglang_graph_sequence`) says so: eager steps then run
    with what both calls left (a per-layer flag the first set and the second never cleared stays)."""
    entry = ""
    for step in graph["order"] if graph else ("request",):
        if step == "graph":
            model.set_eagle3_layers_to_capture()  # cuda_graph_runner.py: the graph runner's own call
        else:
            entry = _sglang_request_capture(model, ids)
    return entry


def _sglang_case(case: dict) -> dict:
    """One case as a launch runs it; where the release's CUDA-graph runner makes a capture call of its own, again as
    a CUDA launch runs it (`on_cuda`), for a forward's case."""
    out = _sglang_one(case)
    if case.get("forward") and (graph := _sglang_graph_sequence()) is not None:
        out["on_cuda"] = _sglang_one(case | {"graph": graph}) | {"graph_calls": graph["at"]}
    return out


def _sglang_one(case: dict) -> dict:
    arch, num_layers, config = case["arch"], case["num_layers"], case["config"]
    package = "sglang.srt.models"
    # the model type its checkpoints name: the case's, else that of their remote config code, else that of the
    # config class SGLang ships for it, else that of the listed class its class extends
    # (a type the newest transformers knows and the release's pinned one does not is still the checkpoints' own:
    # the release's loader then refuses it, `_unknown_type`)
    model_type = (case.get("model_type") or _remote_type(arch) or _sglang_config_type(arch, case.get("module"))
                  or _untyped_checkpoint(arch) or _base_type(arch, case.get("module")))  # fmt: skip
    holder = "model"  # the attribute the model keeps its decoder in (or its text model, for a wrapper)
    if arch in SGLANG:
        module_name, inner_path, text_path, keeps = SGLANG[arch]
    elif not case.get("module"):  # no registry data for this release names its module
        return {
            "ids": None,
            "inner": None,
            "error": f"{PROBE_FAILED}: no module for {arch} in the registry data",
        }
    else:  # from the registry data: the module; the decoder its code builds
        # the config its class keeps: the top level, or a wrapper's text_config where the top has no layers
        module_name, text_path, keeps = case["module"].removeprefix(package + "."), None, "auto"
        try:
            outer = getattr(_import_sglang_model(f"{package}.{module_name}"), arch)
            inner, text = _found_inner(outer), None
            # a multimodal wrapper: the decoder of the text model its code builds
            if inner is None and (text := _found_text(outer)) is not None:
                inner = _found_inner(text)
                if inner is None and _keeps_capture(
                    text
                ):  # the wrapper's text model is the decoder (Gemma-4)
                    inner, text, holder, keeps = (
                        text,
                        None,
                        "language_model",
                        "top",
                    )  # it keeps the whole config
        except Exception as exc:
            return {"ids": None, "inner": None, "error": f"{type(exc).__name__}: {exc}"}
        inner_path = None if inner is None else _qualname(inner, package)
        text_path = None if inner is None or text is None else _qualname(text, package)
    try:
        module = _import_sglang_model(f"{package}.{module_name}")
        cls = getattr(module, arch)
    except (ImportError, AttributeError) as exc:  # a release without this model file or class
        refusal = _registry_refusal("sglang", arch)  # which its own registry then refuses at startup
        error = refusal or f"{PROBE_FAILED}: {type(exc).__name__}: {exc}"
        return {"ids": None, "inner": None, "error": error}
    entries = module.EntryClass if isinstance(module.EntryClass, list) else [module.EntryClass]
    assert cls in entries, f"{arch} is not an EntryClass of {module_name}.py"
    try:  # spec_aux_hidden_state.py:187-196
        ids = config["eagle_config"]["eagle_aux_hidden_state_layer_ids"]
    except Exception:
        ids = None
    out: dict[str, Any] = {"ids": ids, "inner": None}
    last = SimpleNamespace(is_last_rank=True, is_first_rank=True, world_size=1)
    if inner_path is None and arch not in SGLANG:
        out["error"] = (
            f"{PROBE_FAILED}: no `self.model = ...` decoder in {arch}'s code (add it to capture_probe.SGLANG)"
        )
        return out
    requesting = False  # inside the release's capture request
    try:
        loaded = _sglang_config(arch, num_layers, model_type)
    except Exception as exc:
        refused = _loader_refusal(exc, "sglang")
        return out | {"error": refused or f"{type(exc).__name__}: {exc}"}
    try:
        text_config = getattr(loaded, "text_config", loaded)
        # a wrapper that keeps its text config as its own (GLM-5-Next), else the one that has the layers
        if keeps == "auto":
            keeps = "text" if _keeps_text_config(cls) or not hasattr(loaded, "num_hidden_layers") else "top"
        model = _bare(cls, pp_group=last, config=text_config if keeps == "text" else loaded)
        inner = None
        if inner_path is not None:
            inner_cls = _class(inner_path, package)
            inner = _decoder(inner_cls, num_layers)
            out["inner"] = _qualname(inner_cls, package)
            if text_path is None:
                _check_builds(inner_cls, cls)
                setattr(model, holder, inner)
            else:
                text_cls = _class(text_path, package)
                _check_builds(text_cls, cls)
                _check_builds(inner_cls, text_cls)
                model.language_model = _bare(text_cls, pp_group=last, config=text_config, model=inner)
        requesting = True
        out["entry"] = _sglang_launch_request(model, ids, case.get("graph"))
        requesting = False
        if out["entry"].endswith("(no ids read)"):
            out["ids"] = (
                None  # the release's runner never reads them: the fc is fed the default's three states
            )
        out["captured"] = list(inner.layers_to_capture)
        out["flags"] = [
            i for i, layer in enumerate(inner.layers) if getattr(layer, "_is_layer_to_capture", False)
        ]
    except Exception as exc:
        # a target whose real decoder the release fails to build (an earlier case of it found that): every launch
        # builds the model before its runner's capture request, so that failure comes first, whatever the ids
        failure = _BUILT.get((arch, num_layers, model_type)) if case.get("forward") else None
        error = f"{type(exc).__name__}: {exc}"
        # the release's own capture request raised (a per-layer flag set on layers[L]: IndexError): the engine's
        # answer where its own code raised it, named by the traceback (torch's frames passed over; never a stand-in)
        where = _raised_in(exc, through=("torch",)) if requesting and not _raised_by_a_stand_in(exc) else None
        out |= (
            {"forward_error": failure}
            if failure
            else {"error": f"{error} (raised in {where})" if where else error}
        )
        return out
    if case.get("forward"):
        _sglang_launch(arch, num_layers, model_type)
        with _sglang_forward_context():
            out |= _forward_taps(inner, "sglang", text_config)
        # the config the class that builds the decoder keeps: the outer model's, or the text model's
        keeps_config = model.config if text_path is None and holder == "model" else text_config
        owners = (cls,) if text_path is None else (cls, _class(text_path, package))
        failure = (
            _builds_real(arch, num_layers, model_type, inner_cls, keeps_config, owners)
            if "forward_taps" in out
            else None
        )
        if failure:  # the stand-ins ran its loop, but every launch builds the real decoder first, and fails
            out.pop("forward_taps")
            out["forward_error"] = failure
        if out.get("forward_error", "").endswith(INSIDE_WORDS):  # run the real layers, which make the capture
            out.pop("forward_error")
            try:
                real = _real_decoder(inner_cls, keeps_config, (arch, num_layers, model_type), owners)
                BUILT.add((arch, num_layers, model_type))
                if text_path is None:
                    setattr(model, holder, real)
                else:
                    model.language_model.model = real
                _sglang_launch_request(model, ids, case.get("graph"))
                with _sglang_forward_context():
                    out |= _real_forward_taps(real, text_config)
            except Exception as exc:
                out["forward_error"] = _build_failure(exc)
                failed = not out["forward_error"].startswith(PROBE_FAILED)
                _BUILT[(arch, num_layers, model_type)] = out["forward_error"] if failed else None
                if not failed:
                    STOPPED[(arch, num_layers, model_type)] = _stop_words(exc)
        out |= built((arch, num_layers, model_type))
    return out


# (arch, L, model_type) -> the release's own failure building its real decoder (None: it built, or the probe could
# not tell: a stand-in the build could not use)
_BUILT: dict[tuple, str | None] = {}
_REFUSED: dict[tuple, str] = {}  # the last error of a launch the release refused every way (_sglang_launch)
BUILT: set[tuple] = set()  # the targets whose real decoder the release's own __init__ built
STOPPED: dict[tuple, str] = {}  # where the probe's build stopped (no claim), in the words it stopped with


def built(key: tuple) -> dict:
    """What a result says of the target's real decoder: `built` true where the release's own __init__ built it,
    false where the build was tried and stopped (on a stand-in: `build_stop` says where, so a record can be
    triaged; or the engine's failure, which the result gives); nothing where no build was tried."""
    if key in BUILT:
        return {"built": True}
    if key not in _BUILT:
        return {}
    return {"built": False} | ({"build_stop": STOPPED[key][:300]} if key in STOPPED else {})


def _builds_real(
    arch: str, num_layers: int, model_type: str | None, inner_cls: type, config, owners: tuple[type, ...] = ()
) -> str | None:
    """The release's own failure building the target's real decoder (its layers real, stand-in blocks:
    `_real_decoder`), once per target: a decoder the stand-in layers ran may still be one no launch of the release
    can build (SGLang's Qwen2-MoE loop handing Intern-S1-Pro's layers `start_layer`, which they do not take).
    None where it builds or where the build stopped on a stand-in (no claim either way)."""
    key = (arch, num_layers, model_type)
    return _built_once(key, lambda: _real_decoder(inner_cls, config, key, owners))


def _built_once(key: tuple, build) -> str | None:
    """Build a target's real decoder once (`build()`), keeping the outcome: the release's own failure (the engine's,
    `_build_failure`), else None (it built: `BUILT`; or it stopped on a stand-in)."""
    if key not in _BUILT:
        try:
            build()
            _BUILT[key] = None
            BUILT.add(key)
        except Exception as exc:
            failure = _build_failure(exc)
            _BUILT[key] = None if failure.startswith(PROBE_FAILED) else failure
            if _BUILT[key] is None:
                STOPPED[key] = _stop_words(exc)
    return _BUILT[key]


def _stop_words(exc: BaseException) -> str:
    """A build the probe could not finish, in one line: the exception and the innermost frame of the engine's
    own code it passed through (where a stand-in or a newer transformers met the release's code)."""
    own, tb, inner = None, exc.__traceback__, None
    while tb is not None:
        code = tb.tb_frame.f_code
        if any(f"/{p}/" in code.co_filename for p in ("vllm", "sglang")):
            own = getattr(code, "co_qualname", code.co_name)
        inner = f"{Path(code.co_filename).name}:{tb.tb_lineno} {getattr(code, 'co_qualname', code.co_name)}"
        tb = tb.tb_next
    text = " ".join(f"{type(exc).__name__}: {exc}".split())
    return f"{text} (in {own}, raised at {inner})" if own else text


def _build_failure(exc: BaseException) -> str:
    """A real decoder's build that failed, as a result says it: the release's own call handing a class of its own
    an argument that class does not take (Intern-S1-Pro's layers under Qwen2-MoE's loop at 0.5.23: no stand-in
    is in that call, and every launch of the target builds it) is the engine's failure at load, in its words and
    where it was raised; anything else a stand-in the build could not use (no claim)."""
    import re

    text = f"{type(exc).__name__}: {exc}"
    where = _raised_in(exc)
    callee = re.match(r"(\w+)\.__init__\(\) got an unexpected keyword argument", str(exc))
    if isinstance(exc, TypeError) and callee and where and _engine_class(callee.group(1)):
        return f"{text} (raised in {where})"
    return f"{PROBE_FAILED}: real layers: {text}"


def _engine_class(name: str) -> bool:
    """Whether a class of that name is one of the engine's own (defined in vLLM's or SGLang's package, as one of
    its loaded modules binds it): a call the release makes to a class of another package (transformers, newer
    here than the release's pin) is not the release's own failure."""
    return any(
        isinstance(found := getattr(module, name, None), type)
        and found.__module__.startswith(("vllm.", "sglang."))
        for key, module in list(sys.modules.items())
        if key.startswith(("vllm.", "sglang.")) and module is not None
    )


# ---- the real decoder layers, for a release that captures inside them ------------------------------------------


def _sglang_groups(launch) -> str:
    """The engine's own process groups for one rank, built the way its CPU server builds them (gloo, one process,
    127.0.0.1; `init_distributed_environment`, `initialize_model_parallel`, `initialize_dp_attention` with the
    published launch): the real decoder layers read them as they are built (the layer communicator's scatter
    modes, the attention TP size). One-rank stand-ins set earlier are dropped first. What was built."""
    import socket

    from sglang.srt.distributed import parallel_state as ps

    for name in STOOD_IN_GROUPS:
        setattr(ps, name, None)
    STOOD_IN_GROUPS.clear()
    if getattr(ps, "_WORLD", None) is None:
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        ps.init_distributed_environment(world_size=1, rank=0, local_rank=0, backend="gloo",
                                        distributed_init_method=f"tcp://127.0.0.1:{port}")  # fmt: skip
        ps.initialize_model_parallel()
    from sglang.srt.layers import dp_attention

    params = inspect.signature(dp_attention.initialize_dp_attention).parameters
    given = {"server_args": launch, "enable_dp_attention": False, "tp_rank": 0, "tp_size": 1, "dp_size": 1,
             "moe_dense_tp_size": None, "pp_size": 1}  # fmt: skip
    if "model_config" in params:
        from sglang.srt.configs.model_config import ModelConfig

        given["model_config"] = ModelConfig.from_server_args(launch)
    dp_attention.initialize_dp_attention(**{k: given[k] for k in params})
    return "parallel_state.initialize_model_parallel (gloo, one rank); dp_attention.initialize_dp_attention"


STOOD_IN_GROUPS: list[str] = []  # what one_rank_groups set in this process
_LAUNCHES: dict[tuple, Any] = {}  # (arch, L, model_type) -> the launch _sglang_launch made


@functools.cache
def _block_class() -> tuple[type, type]:
    """(sub-block, its attribute) stand-ins: a layer's attention, MLP or MoE, whose output is a constant (set per
    layer so that its sub-blocks add exactly 1 to the residual stream: h_k = k), and anything the layer reads from
    one (a projection, a context manager, a flag), which adds nothing (zeros, which also unpack as a projection's
    `(output, bias)`; counted, nothing) and reads as false."""
    import contextlib

    import torch

    def hidden(args, kwargs):
        t = kwargs.get("hidden_states")
        if t is None:
            t = next((x for x in args if isinstance(x, torch.Tensor) and x.is_floating_point()), None)
        return t

    class Block(torch.nn.Module):
        def __init__(self, *args, **kwargs):
            super().__init__()
            self.calls, self.value = 0, 0.0

        def __getattr__(self, name):
            try:
                return super().__getattr__(name)
            except AttributeError:
                if name.startswith("_"):
                    raise
                return Part()

        def forward(self, *args, **kwargs):
            self.calls += 1
            return torch.full_like(hidden(args, kwargs), self.value)

    class Zeros(torch.Tensor):
        """A part's output: zeros, which a caller may also unpack as a projection's `(output, bias)`, the bias zeros
        too (never None: a None the engine's code then trips on would read as the engine's own failure)."""

        __torch_function__ = torch._C._disabled_torch_function_impl  # what it computes is a plain tensor

        def __iter__(self):
            return iter((self.as_subclass(torch.Tensor), self))

    class Part(Block):
        def __bool__(self):
            return False

        def __radd__(self, other):  # a flag read off a block and counted (`sum(...)`): it adds nothing
            return other

        def forward(self, *args, **kwargs):
            t = hidden(args, kwargs)
            return contextlib.nullcontext() if t is None else torch.zeros_like(t).as_subclass(Zeros)

    return Block, Part


def _owner_writes(owners: tuple[type, ...], config) -> None:
    """The config values the classes that build the decoder set in their own __init__ before they build it, as
    statements of its body (GLM-4.7-Flash's `config.moe_layer_freq = 1` in SGLang's Glm4MoeLiteForCausalLM, 0.5.8+:
    its checkpoints carry no such key, and DeepSeek-V2's layers read it): the probe builds the decoder alone, so it
    makes those writes first. Only a constant written to `config.<key>` at the top of a body of the engine's own."""
    import ast
    import textwrap

    for owner in owners:
        for k in reversed(owner.__mro__):
            init = vars(k).get("__init__")
            if not k.__module__.startswith("sglang.") or not inspect.isfunction(init):
                continue
            try:
                tree = ast.parse(textwrap.dedent(inspect.getsource(init)))
            except (OSError, TypeError, SyntaxError):
                continue
            for node in tree.body[0].body:
                if (isinstance(node, ast.Assign) and len(node.targets) == 1
                        and isinstance(target := node.targets[0], ast.Attribute)
                        and isinstance(target.value, ast.Name) and target.value.id == "config"
                        and isinstance(node.value, ast.Constant)):  # fmt: skip
                    setattr(config, target.attr, node.value.value)


def _real_decoder(inner_cls: type, config, key: tuple, owners: tuple[type, ...] = ()):
    """The decoder built by its own __init__ on the target's config, its layers real (norms, layer communicator,
    layer boundaries: the code that makes the capture) and every other module class the model files name a
    `_block_class` stand-in while it is built (`_standing_in`): no weights or kernels, under the launch
    `_sglang_launch` made for the target (`key`: arch, L, model_type). The embeddings give h_0 = 0 and every norm's
    weight is 0.5, so a normalized state reads as 0.5, never as a tap."""
    import torch

    Block, _ = _block_class()
    launch = _LAUNCHES.get(key)
    if launch is None:
        raise ProbeError(
            f"the release refuses a launch of this target: {_REFUSED.get(key, 'no launch made')}"
        )
    _sglang_groups(launch)
    _owner_writes(owners, config)
    with _standing_in("sglang"):
        inner = inner_cls(config=config, quant_config=None, prefix="model")
    width = config.hidden_size

    class Embed(torch.nn.Module):
        def forward(self, input_ids, *args, **kwargs):
            return torch.zeros(input_ids.shape[0], width)

    for name in ("embed_tokens", *EMBEDDINGS):
        if isinstance(getattr(inner, name, None), Block):
            setattr(inner, name, Embed())
    with torch.no_grad():
        for module in inner.modules():
            if "Norm" in type(module).__name__ and isinstance(getattr(module, "weight", None), torch.Tensor):
                module.weight.fill_(0.5)
    for layer in inner.layers:
        for name in METHOD_BLOCKS:
            if inspect.isfunction(getattr(type(layer), name, None)):
                object.__setattr__(layer, name, Block())  # the instance's own, over the class's method
    return inner


# per engine: (the packages holding its model files, the package whose module classes are stood in)
MODEL_FILES = {"sglang": (("sglang.srt.models.",), "sglang.srt"),
               "vllm": (("vllm.model_executor.models.", "vllm.models."), "vllm.")}  # fmt: skip


@contextlib.contextmanager
def _standing_in(engine: str):
    """While a real decoder is built: every module class the engine's model files name a `_block_class` stand-in
    (the attention, MLP and MoE blocks, embeddings, linear layers; the rotary a layer that attends in its own
    method builds with `get_rope`), but its decoder layers and decoders (and a layer of another name that captures
    inside itself), and its norms; a norm from vLLM's layers a `_contract_norm` (vLLM's RMSNorm is a CustomOp that
    needs a running engine's config). A decoder compiled by vLLM's `support_torch_compile` is built by its own
    __init__ (the decorator's wrapper keeps it as `old_init`), as the engine's eager mode runs it. Everything is put
    back on exit."""
    import torch

    Block, _ = _block_class()
    files, own = MODEL_FILES[engine]
    swapped = []
    # one stand-in class per class stood in: a model that looks its blocks up by class (vLLM 0.34.0's
    # get_fused_shared_expert_layers: `isinstance(module, FusedMoE)`) finds those, not every stand-in
    kinds: dict[type, type] = {}

    def block_for(cls: type) -> type:
        return kinds.setdefault(cls, type(cls.__name__, (Block,), {"__module__": Block.__module__}))

    def swap(owner, key, value, by):
        swapped.append((owner, key, value))
        setattr(owner, key, by)

    for name, module in list(sys.modules.items()):
        if not name.startswith(files) or module is None:
            continue
        for key, value in list(vars(module).items()):
            if key == "get_rope" and callable(value):  # the rotary a layer builds for its own attention
                swap(module, key, value, lambda *args, **kwargs: Block())
                continue
            if not (isinstance(value, type) and issubclass(value, torch.nn.Module)):
                continue
            if "Norm" in key and value.__module__.startswith("vllm."):
                swap(module, key, value, _contract_norm())
            elif value.__module__.startswith(own) and not (
                key.endswith(("DecoderLayer", "Model")) or "Norm" in key or _a_capturing_layer(value)
            ):
                swap(module, key, value, block_for(value))
            elif key.endswith("DecoderLayer"):  # the blocks a layer class names itself (`attention_cls`)
                for attr, block in list(vars(value).items()):
                    if _a_block(block, own):
                        swap(value, attr, block, block_for(block))
            init = vars(value).get("__init__")
            if engine == "vllm" and "old_init" in getattr(getattr(init, "__code__", None), "co_freevars", ()):
                swap(value, "__init__", init, inspect.getclosurevars(init).nonlocals["old_init"])
    try:
        yield
    finally:
        for owner, key, value in reversed(swapped):
            setattr(owner, key, value)


def _a_block(value, own: str = "sglang.srt") -> bool:
    """Whether a layer class's attribute is a module class of the release's to stand in (MiniMax-M3's
    `attention_cls`): an engine module (of `own`), not a norm, a layer or a decoder."""
    import torch

    return (isinstance(value, type) and issubclass(value, torch.nn.Module)
            and value.__module__.startswith(own)
            and not (value.__name__.endswith(("DecoderLayer", "Model")) or "Norm" in value.__name__))  # fmt: skip


def _a_capturing_layer(cls: type) -> bool:
    """Whether a module class is a decoder layer that captures inside itself (its forward takes a capture argument,
    `INSIDE`), whatever its name (Bailing's `BailingMoEBlock`): kept real."""
    try:
        return bool(set(inspect.signature(cls.forward).parameters) & set(INSIDE))
    except (AttributeError, TypeError, ValueError):
        return False


@functools.cache
def _contract_norm() -> type:
    """A norm with the contract every engine's RMSNorm keeps (`norm(x) -> y`; `norm(x, residual) -> (y, x +
    residual)`), its output 0.5: for a release whose layernorm module, on a CPU without AMX, falls back to vLLM's
    RMSNorm (SGLang 0.5.x `layers/layernorm.py`, its last lines), which cannot be built outside a vLLM engine. On
    CUDA the release builds its own; which state the layer captures is the layer's code, not the norm's."""
    import torch

    class ContractNorm(torch.nn.Module):
        def __init__(self, hidden_size=None, *args, **kwargs):
            super().__init__()
            self.weight = torch.nn.Parameter(torch.full((hidden_size or 1,), 0.5))

        def forward(self, x, residual=None, *args, **kwargs):
            if residual is None:
                return torch.full_like(x, 0.5)
            total = x + residual
            return torch.full_like(total, 0.5), total

    return ContractNorm


# a layer's sub-block written as a method of the layer itself, not a module it holds (Qwen3-Next's full-attention
# layer projects, rotates and attends in `self_attention`): stood in like a module block
METHOD_BLOCKS = ("self_attention",)


def _blocks(layer) -> list:
    """A layer's sub-block stand-ins: the modules it holds and the methods stood in."""
    Block, _ = _block_class()
    held = [m for m in layer.children() if isinstance(m, Block)]
    return held + [vars(layer)[n] for n in METHOD_BLOCKS if isinstance(vars(layer).get(n), Block)]


def _forward_batch(tokens: int):
    """A real ForwardBatch of one prefill request (its required fields; every other field its default)."""
    import dataclasses

    import torch
    from sglang.srt.model_executor.forward_batch_info import ForwardBatch, ForwardMode

    known = {"forward_mode": ForwardMode.EXTEND, "batch_size": 1, "input_ids": torch.zeros(tokens, dtype=torch.long),
             "req_pool_indices": torch.zeros(1, dtype=torch.long), "seq_lens": torch.tensor([tokens]),
             "out_cache_loc": torch.arange(tokens), "seq_lens_sum": tokens}  # fmt: skip
    needed = [f.name for f in dataclasses.fields(ForwardBatch)
              if f.default is dataclasses.MISSING and f.default_factory is dataclasses.MISSING]  # fmt: skip
    missing = [n for n in needed if n not in known]
    if missing:
        raise ProbeError(f"ForwardBatch needs {missing}")
    return ForwardBatch(**{n: known[n] for n in needed})


REAL = {"forward_path": "real decoder layers"}  # what a result of the real layers says


def _real_forward_taps(inner, config) -> dict:
    """Run the real decoder's forward on three tokens, twice: the first counts the sub-block calls of each layer
    (n), the second sets each to 1/n so every layer adds exactly 1 (h_k = k along the residual stream). Each
    captured state is then the constant k of its tap h_k; a layer whose sub-blocks were not called, or a state
    that is not one constant 0..L, makes no claim."""
    import torch

    tops = [_blocks(layer) for layer in inner.layers]
    positions, ids = torch.arange(3), torch.zeros(3, dtype=torch.long)
    try:
        type(inner).forward(inner, ids, positions, _forward_batch(3))
        counts = [sum(m.calls for m in blocks) for blocks in tops]
        if not all(counts):
            return {
                "forward_error": f"{PROBE_FAILED}: real layers: sub-blocks called per layer {counts}",
                **REAL,
            }
        for blocks, n in zip(tops, counts, strict=True):
            for m in blocks:
                m.value = 1.0 / n
        out = type(inner).forward(inner, ids, positions, _forward_batch(3))
    except ProbeError as exc:
        return {"forward_error": f"{PROBE_FAILED}: real layers: {exc}", **REAL}
    except Exception as exc:
        return {"forward_error": _forward_failure(exc, "real layers: forward"), **REAL}
    aux = out[1] if isinstance(out, tuple) and len(out) == 2 else []
    if isinstance(aux, torch.Tensor):  # packed [tokens, K * hidden] (AuxHiddenStatePacker)
        aux = list(aux.split(config.hidden_size, dim=-1))
    taps = []
    for t in aux:
        vals = torch.unique(t.detach())
        k = round(float(vals[0])) if len(vals) and float(vals.max() - vals.min()) < 1e-4 else None
        ok = k is not None and abs(float(vals[0]) - k) < 1e-4 and 0 <= k <= len(inner.layers)
        taps.append(k if ok else None)
    return {"forward_taps": taps, **REAL}


# ---- vLLM ------------------------------------------------------------------------------------------------------


def _import_sglang_model(name: str):
    """A model module, imported as SGLang's startup imports it: its registry imports every model file in name order
    (srt/models/registry.py `import_model_classes`, skipping one that fails), so a file imported alone can meet an
    import cycle the engine never meets (0.4.5-0.4.8's llama4.py, through layers/linear.py, before llama.py)."""
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        if "partially initialized module" not in str(exc):
            raise
    import pkgutil

    import sglang.srt.models as models

    for info in sorted(pkgutil.iter_modules(models.__path__), key=lambda m: m.name):
        before = f"{models.__name__}.{info.name}"
        if before == name:
            break
        try:
            importlib.import_module(before)
        except Exception:  # as the registry skips it
            pass
    return importlib.import_module(name)


class RegistryRefusal(Exception):
    """The release's own model registry refuses the architecture (the engine's error at startup)."""


def _registry_refusal(engine: str, arch: str) -> str | None:
    """The engine's own words when its model registry does not list the architecture: the release's
    `ModelRegistry._raise_for_unsupported([arch])`, which a launch of such a target reaches at startup (vLLM
    `model_executor/models/registry.py`, SGLang `srt/models/registry.py`), up to its list of supported
    architectures; None where the registry lists it (or the release has no such method)."""
    module = "vllm.model_executor.models.registry" if engine == "vllm" else "sglang.srt.models.registry"
    if engine == "sglang" and _named_in_model_files(
        arch
    ):  # a file failing to import here skips it, not there
        return None
    try:
        registry = importlib.import_module(module).ModelRegistry
        if arch in registry.get_supported_archs():
            return None
        registry._raise_for_unsupported([arch])
    except ValueError as exc:
        return f"{type(exc).__name__}: {str(exc).split(' Supported architectures:')[0]}"
    except Exception:
        return None
    return None


@functools.cache
def _named_in_model_files(arch: str) -> bool:
    """Whether any of SGLang's model files names the architecture. SGLang's registry is whatever its model files
    export (`import_model_classes` imports each and skips one that fails), so a file that fails to import on this
    machine (a GPU-only package it needs) would read as a refusal: only an architecture no file names is one."""
    import re

    import sglang.srt.models as models

    pattern = re.compile(rf"\b{re.escape(arch)}\b")
    return any(
        pattern.search(p.read_text(errors="replace")) for d in models.__path__ for p in Path(d).rglob("*.py")
    )


# the platform whose branch a package that picks its implementation by platform is taken at: CUDA's (the table's),
# or, in a case's second V1 pass (`_on_cpu`), the CPU platform's own, which the CPU build runs
_PLATFORM = ["cuda"]


@contextlib.contextmanager
def _on_cpu():
    _PLATFORM.append("cpu")
    try:
        yield
    finally:
        _PLATFORM.pop()


def _vllm_class(arch: str) -> type:
    return _vllm_class_on(arch, _PLATFORM[-1])


def _cpu_branch_differs(arch: str) -> bool:
    """Whether the CPU platform's class for the architecture is another than a GPU server's: a package that picks
    its implementation by platform, whose CPU branch is its own (vLLM's deepseek_v4 cpu/ from 0.30.0) or another
    file's (deepseek_v32 on CPU: deepseek_v2.py's generic DeepSeek-V3 class, 0.29.0-0.33.0)."""
    try:
        cuda = _vllm_class_on(arch, "cuda")
    except Exception:
        return False
    try:
        return _vllm_class_on(arch, "cpu") is not cuda
    except Exception:  # the CPU branch does not export it: the CPU pass gives the engine's error
        return True


def _build_key(arch: str, num_layers: int, model_type: str | None) -> tuple:
    """A target's real-decoder build, once per platform branch its class comes from."""
    return (arch, num_layers, model_type) + (("cpu",) if _PLATFORM[-1] == "cpu" else ())


@functools.cache
def _vllm_class_on(arch: str, platform: str) -> type:
    from vllm.model_executor.models.registry import _VLLM_MODELS  # what vLLM resolves architectures with

    if arch not in _VLLM_MODELS:
        refusal = _registry_refusal("vllm", arch)
        if refusal:
            raise RegistryRefusal(refusal)
    module_name, cls_name = _VLLM_MODELS[arch]
    prefix = "" if "." in module_name else "vllm.model_executor.models."
    module = _import_vllm_model(prefix + module_name)
    if platform == "cuda" and "current_platform" in inspect.getsource(module) and hasattr(module, "__path__"):
        cuda = _cuda_branch(module.__name__)  # a package that picks its implementation by platform
        if cls_name in cuda:
            return cuda[cls_name]
    # the CPU platform's branch (this process runs on it), as its package's __init__ picked it; a module
    # `__getattr__` that picks at lookup runs on it too (qwen4_exp @0.33.0 takes its nvidia/ branch there as well:
    # it tests only for ROCm, XPU and TPU)
    return getattr(module, cls_name)


def _import_vllm_model(name: str):
    """A model module, imported where a file it imports names one of vLLM's compiled ops at module level (0.24-0.26's
    compilation/passes/fusion/matcher_utils.py: `ROTARY_OP = torch.ops._C.rotary_embedding.default`, reached through
    MiniMax-M3's fused all-reduce norm): the CUDA build's op library does not load here, so such a name is given a
    stand-in that raises if called (`CompiledOp`). Only a module that fails to import without them gets them."""
    try:
        return importlib.import_module(name)
    except AttributeError as exc:
        if "'_OpNamespace' '_C' object has no attribute" not in str(exc):
            raise
    import torch

    namespace = type(torch.ops._C)
    lookup = namespace.__getattr__

    def missing_as_stand_in(self, op: str):
        try:
            return lookup(self, op)
        except AttributeError:
            if self.name != "_C" or op.startswith("__"):
                raise
            return CompiledOp(op)

    namespace.__getattr__ = missing_as_stand_in
    try:
        return importlib.import_module(name)
    finally:
        namespace.__getattr__ = lookup


class CompiledOp:
    """One of vLLM's compiled ops (`torch.ops._C`), named where its library is not built here (it does not load
    beside this torch): its overloads (`.default`, as modules bind them at import) are itself, and a call raises
    from this file (the probe's failure, never the engine's answer). draft_probe.py binds its handles too."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __getattr__(self, overload: str):
        if overload.startswith("__"):
            raise AttributeError(overload)
        return self

    def __call__(self, *args, **kwargs):
        raise NotImplementedError(f"torch.ops._C.{self.name}: a compiled op, bound but not run by the probe")


def _on_backend(arch: str) -> bool:
    """Whether the release serves the architecture with its Transformers modeling backend (`modeling_backend`)."""
    from vllm.model_executor.models.registry import _VLLM_MODELS

    return arch in _VLLM_MODELS and modeling_backend.is_backend(_VLLM_MODELS[arch][0])


def _backend_model(arch: str, num_layers: int, model_type: str | None):
    """The backend's model for the architecture: its class, around the transformers decoder of the model type its
    checkpoint names (the backend's generic classes: `modeling_backend.GENERIC_MODEL_TYPES`)."""
    cls = _vllm_class(arch)
    modeling_backend.check_named(arch, cls)
    found = (
        model_type or modeling_backend.GENERIC_MODEL_TYPES.get(arch) or (_hf_model_type(arch) or (None,))[0]
    )
    if found is None:
        raise ProbeError(
            f"transformers {modeling_backend.transformers_version()} here does not know {arch}'s model type"
        )
    return modeling_backend.build(cls, found, num_layers, _init_attributes)


def _vllm_model(arch: str, num_layers: int):
    package = "vllm.model_executor.models"
    cls = _vllm_class(arch)
    if arch in VLLM:
        inner_path, text_path = VLLM[arch]
        on_cpu = _PLATFORM[-1] == "cpu"
        if text_path is None and inner_path is not None and (on_cpu or not _builds(cls, inner_path, package)):
            # the table's decoder is the newest release's CUDA one (DeepSeek-V3.2's own package from 0.25): an
            # older release, or the CPU platform's branch (a class of the same name in cpu/), serves the
            # architecture from another file, whose code names its decoder
            inner = _found_inner(cls)
            inner_path = None if inner is None else _qualname(inner, package)
        if text_path is not None and importlib.util.find_spec(f"{package}.{text_path.split('.')[0]}") is None:
            # the table's text model is the newest release's (Mistral's own file from 0.15): an older release's
            # registry serves that text architecture from another file (llama.py), whose code names its decoder
            text = _vllm_class(text_path.rsplit(".", 1)[1])
            inner = _found_inner(text)
            text_path, inner_path = _qualname(text, package), inner and _qualname(inner, package)
    else:  # a registry target outside the table: the decoder its code builds (a wrapper's, inside its text model)
        inner, text = _found_inner(cls), None
        if inner is None and (text := _found_text(cls)) is not None:
            inner = _found_inner(text)
        if inner is None:
            raise ProbeError(
                f"no `self.model = ...` decoder found in {arch}'s code (add it to capture_probe.VLLM)"
            )
        inner_path, text_path = _qualname(inner, package), text and _qualname(text, package)
    try:
        model = _bare(cls)
    except TypeError as exc:  # a class whose __new__ wants its config (embedding wrappers)
        raise ProbeError(str(exc)) from exc
    if inner_path is None:
        return model, None, None
    inner_cls = _class(inner_path, package)
    inner = _decoder(inner_cls, num_layers)
    if text_path is None:
        _check_builds(inner_cls, cls)
        model.model = inner
    else:
        text_cls = _class(text_path, package)
        _check_builds(inner_cls, text_cls)
        model.language_model = _bare(text_cls, model=inner)
        model._language_model_names = [
            "language_model"
        ]  # what _mark_language_model records (interfaces.py:313-345)
    return model, inner, _qualname(inner_cls, package)


@functools.cache
def _config_arch(arch: str) -> str:
    """The architecture whose config the decoder keeps: the target's own, or, for a wrapper outside the tables whose
    type transformers does not know (vLLM's DeepseekV4ForConditionalGeneration), the text model its code builds."""
    if arch in VLLM or _typed(arch):
        return arch
    text = _found_text(_vllm_class(arch))
    return arch if text is None else text.__name__


@functools.cache
def _vllm_text_config(arch: str, num_layers: int, model_type: str | None = None, outer: str | None = None):
    """The config a decoder's __init__ keeps (`self.config`): transformers' for the target's model type (a wrapper's
    text_config), with L layers; a bare PretrainedConfig for a type transformers does not know (its options then
    read as absent, their defaults). `ARCH_KEYS` of the architecture, then of the wrapper it serves (`outer`)."""
    from transformers import AutoConfig, PretrainedConfig

    model_type, wrapped = _model_type(arch, model_type)
    try:
        config = AutoConfig.for_model(model_type)
    except (ValueError, KeyError):
        config = _remote_config(model_type) or PretrainedConfig()
    if wrapped:
        config = getattr(config, "text_config", config)
    config.num_hidden_layers = num_layers
    for key, value in (ARCH_KEYS.get(arch, {}) | ARCH_KEYS.get(outer or arch, {})).items():
        setattr(config, key, value)
    return config


def _remote_config(model_type: str):
    """The config a checkpoint's own config code makes for a type transformers does not know (`REMOTE_CONFIG`:
    Kimi-K2's is DeepSeek-V3's class), as vLLM loads it with --trust-remote-code; None where that code does not
    import here."""
    if model_type not in REMOTE_CONFIG:
        return None
    module, name, code = REMOTE_CONFIG[model_type]
    space: dict[str, Any] = {"__name__": module}
    try:
        exec(code, space)
        return space[name]()
    except Exception:
        return None


def _builds(cls: type, inner_path: str, package: str) -> bool:
    """Whether the installed release has the table's decoder class and `cls`'s code builds it."""
    try:
        _check_builds(_class(inner_path, package), cls)
    except (ImportError, AttributeError, AssertionError):
        return False
    return True


class _Unset(SimpleNamespace):
    """A stand-in config of the engine's whose fields the probe does not set: each reads as None (unset)."""

    def __getattr__(self, name: str):
        if name.startswith("__"):
            raise AttributeError(name)
        return None


def _vllm_engine_config(config):
    """The engine config a vLLM decoder is built with: the release's own `VllmConfig()` defaults (one GPU, eager),
    else an `_Unset` one where the release refuses defaults without a model; its model config a stand-in that holds
    the target's config (`hf_config`: the real ModelConfig reads a checkpoint), in float32, without quantization."""
    import torch
    from vllm.config import VllmConfig

    try:
        with _triton_cpu_met():
            engine = VllmConfig()
    except Exception:  # 0.8.5-: its platform check reads a model config in __post_init__
        engine = _Unset(**_config_defaults(VllmConfig))
    engine.model_config = _Unset(hf_config=config, hf_text_config=config, dtype=torch.float32,
                                 max_model_len=4096, quantization=None)  # fmt: skip
    return engine


def _config_defaults(cls: type, skip: tuple[str, ...] = ("model_config",)) -> dict:
    """A config dataclass's fields as its own defaults would set them on a launch: a field declared optional
    (`X | None`: LoRA, a speculative config) stays None; one declared a config class but defaulted None (filled in
    by the engine's argument code: the cache and compilation configs) is that class's own default where it has one."""
    import dataclasses
    import typing

    hints = typing.get_type_hints(cls)
    out = {}
    for f in dataclasses.fields(cls):
        value = f.default_factory() if f.default_factory is not dataclasses.MISSING else f.default
        declared = hints.get(f.name)
        # never the model config: its defaults name a hub model, which it would fetch (0.9.0: facebook/opt-125m)
        if value is None and isinstance(declared, type) and f.name not in skip:
            try:
                value = declared()
            except Exception:
                pass
        out[f.name] = None if value is dataclasses.MISSING else value
    return out


def _vllm_real_decoder(inner_cls: type, config):
    """The decoder built by its own __init__ as every launch builds it (`get_model` before any capture request),
    its layers real and every other module class of vLLM's model files stood in (`_standing_in`): no weights or
    kernels. A decoder of the older kind takes its config pieces, a newer one the engine config."""
    import vllm.config as vllm_config

    engine = _vllm_engine_config(config)
    current = getattr(vllm_config, "set_current_vllm_config", None)
    params = inspect.signature(inner_cls.__init__).parameters
    given = ({"vllm_config": engine} if "vllm_config" in params
             else {"config": config, "cache_config": None, "quant_config": None})  # fmt: skip
    with current(engine) if current else contextlib.nullcontext(), _standing_in("vllm"):
        return inner_cls(**given, prefix="model")


def _vllm_builds_real(
    arch: str, num_layers: int, model_type: str | None, inner_cls: type, config
) -> str | None:
    """The release's own failure building the target's real decoder (`_vllm_real_decoder`), once per target, as
    SGLang's (`_builds_real`): None where it builds or where the build stopped on a stand-in (no claim)."""
    import copy

    key = _build_key(arch, num_layers, model_type)
    if key in _BUILT:
        return _BUILT[key]
    # with the keys its checkpoints carry, which its layers' __init__ reads
    config = copy.deepcopy(config)
    for name, value in _checkpoint_keys(arch, getattr(config, "model_type", None) or "", num_layers).items():
        setattr(config, name, value)
    rope = getattr(config, "rope_parameters", None)
    if isinstance(rope, dict) and "rope_theta" in rope and not hasattr(config, "rope_theta"):
        # transformers 5 keeps it in rope_parameters only; the pin of a release that reads it kept it too
        config.rope_theta = rope["rope_theta"]
    return _built_once(key, lambda: _vllm_real_decoder(inner_cls, config))


def _vllm_v1_entry(model, spec) -> tuple[list[int] | None, str]:
    """Ask the target to capture the way the installed release's V1 runner does (GPUModelRunner), with the
    release's own code: `_setup_eagle3_aux_hidden_state_outputs` (0.22-0.33), called on a runner holding the model
    and the speculative config; before it the same steps sit inline in `load_model` (the block under `if
    self.use_aux_hidden_state_outputs:`, gpu_model_runner.py:1342-1344 @0.8.5, :4828-4848 @0.20.2), which is
    taken from the release's source and run as it stands, in that module's namespace. The ids the runner read from
    the config (None: the model's default) and the entry's name are returned."""
    import importlib.util
    import textwrap

    if importlib.util.find_spec("vllm.v1.worker.gpu_model_runner") is None:  # 0.34.0: MRV2 is the only runner
        raise ProbeError("no V1 runner in this release")
    try:
        from vllm.v1.worker import gpu_model_runner as module
    except ImportError as exc:
        raise ProbeError(f"the V1 runner does not import here: {exc}") from exc
    runner_cls = module.GPUModelRunner
    runner = SimpleNamespace(use_aux_hidden_state_outputs=True, speculative_config=spec, model=model,
                             get_model=lambda: model)  # fmt: skip
    reads = hasattr(runner_cls, "_get_eagle3_aux_layers_from_config")
    if reads:
        runner._get_eagle3_aux_layers_from_config = types.MethodType(
            runner_cls._get_eagle3_aux_layers_from_config, runner
        )
    read = runner._get_eagle3_aux_layers_from_config() if reads else None
    if hasattr(runner_cls, "_setup_eagle3_aux_hidden_state_outputs"):
        runner_cls._setup_eagle3_aux_hidden_state_outputs(runner)
        return read, "GPUModelRunner._setup_eagle3_aux_hidden_state_outputs"
    lines = inspect.getsource(runner_cls.load_model).splitlines()
    at = next(i for i, ln in enumerate(lines) if ln.strip() == "if self.use_aux_hidden_state_outputs:")
    indent = len(lines[at]) - len(lines[at].lstrip())
    block = [lines[at]]
    for ln in lines[at + 1 :]:
        if ln.strip() and len(ln) - len(ln.lstrip()) <= indent:
            break
        block.append(ln)
    exec(textwrap.dedent("\n".join(block)), vars(module) | {"self": runner})  # the release's own lines
    return read, "GPUModelRunner.load_model (its `if self.use_aux_hidden_state_outputs:` block)"


@functools.cache
def _vllm_cpu_runner() -> str | None:
    """What the installed release's CPU build runs for EAGLE-3 capture: the V1 GPU runner's own request, where its
    CPUModelRunner (a GPUModelRunner) takes a speculative config and its `load_model` calls the inherited
    `_setup_eagle3_aux_hidden_state_outputs` (cpu_model_runner.py @0.22.0-0.33.0); None where it asserts that
    spec decode is not supported (before 0.20.0) or loads the drafter without asking the target to capture
    (0.20.0-0.21.0: the engine then fails at warm-up, an engine record's observation)."""
    try:
        from vllm.v1.worker import cpu_model_runner, gpu_model_runner
    except Exception:
        return None
    cls = getattr(cpu_model_runner, "CPUModelRunner", None)
    if cls is None or not issubclass(cls, gpu_model_runner.GPUModelRunner):
        return None
    own = _class_source(cls)
    setup = "_setup_eagle3_aux_hidden_state_outputs"
    calls = f"self.{setup}()" in inspect.getsource(cls.load_model) and setup not in vars(cls)
    if not calls or "spec decode is not supported" in own:
        return None
    return f"CPUModelRunner.load_model -> GPUModelRunner.{setup}"


def _vllm_cpu_runner_mrv2() -> str | None:
    """What a release without the V1 runner (0.34.0 on) runs on a CPU: Model Runner V2's own request, where its
    CPUModelRunner (v1/worker/cpu/model_runner.py) is MRV2's GPUModelRunner and does not override loading the model
    (where the capture request is made); None otherwise."""
    if importlib.util.find_spec("vllm.v1.worker.gpu_model_runner") is not None:
        return None
    try:
        from vllm.v1.worker.cpu.model_runner import CPUModelRunner
        from vllm.v1.worker.gpu.model_runner import GPUModelRunner
    except Exception:
        return None
    if not issubclass(CPUModelRunner, GPUModelRunner) or "load_model" in vars(CPUModelRunner):
        return None
    return "cpu/model_runner.py CPUModelRunner -> gpu/model_runner.py GPUModelRunner.load_model (MRV2)"


def _store(out: dict, runner: str, entry: dict, on_cpu: bool) -> None:
    """A runner's answer, or the CPU platform's own branch's, kept inside the answer of the runner a CPU runs
    (`on_cpu`: V1's, or MRV2's where the release has no V1 runner)."""
    if on_cpu:
        out[runner]["on_cpu"] = _on_this_cpu(entry)
    else:
        out[runner] = entry


# torch's words where a module needs a GPU (a CUDA stream, a device query): on a GPU server no failure, on a CPU the
# release's own (vLLM's deepseek_v4 nvidia/model.py builds `torch.cuda.Stream`s in DeepseekV4Model.__init__)
NEEDS_CUDA = ("requires CUDA support", "Torch not compiled with CUDA enabled", "Found no NVIDIA driver",
              "No CUDA GPUs are available")  # fmt: skip


def _on_this_cpu(entry: dict) -> dict:
    """What a launch on a CPU does with the class an entry built: where its real decoder's build stopped on a GPU
    requirement, the CPU build fails at load (the engine's failure there, not the probe's), whatever the loop
    would capture."""
    stop = entry.get("build_stop") or ""
    if not any(w in stop for w in NEEDS_CUDA):
        return entry
    kept = {k: v for k, v in entry.items() if k not in ("forward_taps", "forward_error", "error", "captured")}
    return kept | {"forward_error": f"{stop} (a CPU launch builds this class: it fails at load)"}


def _vllm_case(case: dict) -> dict:
    from transformers import PretrainedConfig

    try:  # Model Runner V2 (0.17+)
        from vllm.v1.worker.gpu.spec_decode.eagle.eagle3_utils import (
            get_eagle3_aux_layers_from_config,
            set_eagle3_aux_hidden_state_layers,
        )
    except ImportError:
        set_eagle3_aux_hidden_state_layers = None

    arch, num_layers, config = case["arch"], case["num_layers"], case["config"]
    spec = SimpleNamespace(
        method="eagle3", draft_model_config=SimpleNamespace(hf_config=PretrainedConfig(**config))
    )

    def v1(model):
        read, entry = _vllm_v1_entry(model, spec)
        entries["v1"] = entry
        return read

    def mrv2(model):
        if set_eagle3_aux_hidden_state_layers is None:
            raise ProbeError("no Model Runner V2 in this release")
        if "use_pp" in inspect.signature(set_eagle3_aux_hidden_state_layers).parameters:  # 0.33+
            set_eagle3_aux_hidden_state_layers(model, spec, use_pp=False)
        else:
            set_eagle3_aux_hidden_state_layers(model, spec)
        entries["mrv2"] = "eagle3_utils.set_eagle3_aux_hidden_state_layers"
        return get_eagle3_aux_layers_from_config(spec)

    def answer(runner: str, run) -> dict:
        """One runner's answer on the class of the platform the probe stands on (`_PLATFORM`): the real decoder's
        build, the capture request and the loop's forward."""
        entry: dict[str, Any] = {"inner": None}
        requesting, backend = False, None
        if (
            runner == cpu_runner
        ):  # the CPU build's runner: the same request (its answer holds there), or its own
            entry["cpu_runner"] = _vllm_cpu_runner() if runner == "v1" else mrv2_on_cpu
        try:
            if runner == "mrv2" and set_eagle3_aux_hidden_state_layers is None:
                raise ProbeError("no Model Runner V2 in this release")
            if _on_backend(arch):  # transformers' decoder, the release's backend around it
                model = backend = _backend_model(arch, num_layers, case.get("model_type"))
                entry["inner"] = f"{type(model.model).__module__}.{type(model.model).__name__}"
                inner = None
            else:
                model, inner, entry["inner"] = _vllm_model(arch, num_layers)
            if (
                inner is not None
            ):  # what the request reads of its decoder's __init__ (Kimi-K3's `use_attn_res`)
                decoder_config = _vllm_text_config(
                    _config_arch(arch), num_layers, case.get("model_type"), arch
                )
                _init_attributes(inner, decoder_config)
            failure = (_vllm_builds_real(arch, num_layers, case.get("model_type"), type(inner), decoder_config)
                       if inner is not None and case.get("forward") else None)  # fmt: skip
            entry |= (
                built(_build_key(arch, num_layers, case.get("model_type"))) if case.get("forward") else {}
            )
            if failure:  # every launch builds the real decoder before the runner's capture request, and fails
                entry["forward_error"] = failure
                return entry
            requesting = True
            read = run(model)
            requesting = False
            entry["from_config"] = None if read is None else list(read)
            entry["captured"] = (
                modeling_backend.requested(backend) if backend else list(_loop(inner).aux_hidden_state_layers)
            )
        except RegistryRefusal as exc:
            entry["error"] = str(exc)
        except Exception as exc:
            # the stand-in layer list lacks a method of a container the real decoder builds: the
            # probe's, not the engine's
            ours = isinstance(exc, AttributeError) and "'ModuleList' object has no attribute" in str(exc)
            ours |= isinstance(exc, modeling_backend.NotBuilt)
            entry["error"] = (
                f"{PROBE_FAILED}: {exc}"
                if isinstance(exc, ProbeError) or ours
                else f"{type(exc).__name__}: {exc}"
            )
            # the request itself failed: where, as the engine's traceback says (a KeyError's words are only the
            # key) — the backend's (its model is the real one), or an assertion of the engine's own on the model's
            # classes (the EAGLE-3 interface's `isinstance(..., EagleModelMixin)`, which the probe builds as the
            # release does); not an import the venv could not satisfy
            missing = isinstance(exc, ImportError) and exc.name is not None
            asserted = isinstance(exc, AssertionError)
            if (
                (backend is not None or asserted)
                and requesting
                and not ours
                and not missing
                and _raised_in(exc)
            ):
                entry["error"] += f" (raised in {_raised_in(exc)})"
        else:
            entry["entry"] = entries.get(runner)
            if case.get("forward") and inner is not None:
                entry |= _forward_taps(inner, "vllm", decoder_config)
            elif case.get("forward") and backend is not None:
                try:
                    entry |= modeling_backend.forward_taps(backend)
                except Exception as exc:
                    # transformers' model failing inside its own code ran on a config the probe wrote (HunYuan-VL's
                    # M-RoPE sections, which its checkpoints carry): the probe's, unless the release raised it
                    theirs = _raised_in(exc) is None
                    entry["forward_error"] = (f"{PROBE_FAILED}: forward: {type(exc).__name__}: {exc}" if theirs
                                              else _forward_failure(exc, "forward"))  # fmt: skip
        finally:
            if backend is not None:
                modeling_backend.release(backend)
        return entry

    entries: dict[str, str] = {}
    out: dict[str, Any] = {}
    # the runner a CPU runs: V1, or MRV2 where the release has no V1 runner (0.34.0 on)
    mrv2_on_cpu = _vllm_cpu_runner_mrv2()
    cpu_runner, cpu_run = ("mrv2", mrv2) if mrv2_on_cpu else ("v1", v1)
    # a package whose CPU branch is another class than a GPU server's: that runner's request again, on the class the
    # CPU build runs (`on_cpu` in that runner's result)
    cpu_pass = ((cpu_runner, cpu_run, True),) if _cpu_branch_differs(arch) else ()
    for runner, run, on_cpu in (("v1", v1, False), ("mrv2", mrv2, False), *cpu_pass):
        with _on_cpu() if on_cpu else contextlib.nullcontext():
            _store(out, runner, answer(runner, run), on_cpu)
    if not cpu_pass and out.get(cpu_runner, {}).get("cpu_runner"):  # the CPU build runs this class too
        cpu = _on_this_cpu(out[cpu_runner])
        if cpu is not out[cpu_runner]:
            out[cpu_runner]["on_cpu"] = cpu
    return out


# the module holding each engine's process groups
PARALLEL_STATE = {
    "vllm": "vllm.distributed.parallel_state",
    "sglang": "sglang.srt.distributed.parallel_state",
}


def one_rank_groups(module) -> list[str]:
    """Every process group the engine's `parallel_state` module asserts is initialized before use (`assert _X is not
    None, "... group is not initialized"`), stood in by one rank where unset: a decoder's loop asks the pipeline
    group whether it is the first and last rank, and one that ends in a fused all-reduce + norm, or that decides
    context parallelism, asks a group's size (1: the plain path). The engine's own group setup is not run: vLLM's
    builds a default config first, which the CPU platform refuses without a model in some releases, and the probe
    runs in one process and makes no collective call. The names set are returned."""
    import re

    found = re.findall(r"assert\s*\(?\s*(_[A-Z][A-Z0-9_]*)\s+is\s+not\s+None\s*\)?\s*,\s*\(?\s*f?[\"']"
                       r"[^\"']*group is not initialized", inspect.getsource(module))  # fmt: skip
    done = []
    for name in sorted(set(found)):
        if getattr(module, name, None) is None:
            setattr(module, name, SimpleNamespace(is_first_rank=True, is_last_rank=True, world_size=1,
                                                  rank_in_group=0, rank=0, local_rank=0, ranks=[0]))  # fmt: skip
            done.append(name)
    return done


DROPPED = (
    ("transformers.models.pixtral.modeling_pixtral", "PixtralRotaryEmbedding"),
    ("transformers.models.pixtral.modeling_pixtral", "position_ids_in_meshgrid"),
    ("transformers.models.qwen2_5_vl.modeling_qwen2_5_vl", "Qwen2_5_VisionRotaryEmbedding"),
    # vLLM 0.20-0.21's EXAONE-4.5 imports its image processor from the model package, where 5.19 no longer has it
    ("transformers.models.exaone4_5", "Exaone4_5_ImageProcessor"),
)


def _dropped(name: str):
    def init(self, *args, **kwargs):
        raise NotImplementedError(
            f"transformers.{name}: not in the transformers here (an import-time stand-in)"
        )

    return init


def _cpu_flag(flag: str) -> bool:
    """Whether this CPU has an instruction-set flag (Linux /proc/cpuinfo; False where it cannot be read)."""
    try:
        with open("/proc/cpuinfo") as f:
            return any(flag in line.split() for line in f if line.startswith("flags"))
    except OSError:
        return False


def engine_error(exc: BaseException, package: str) -> dict:
    """An engine's error as a record keeps it: type, words, and the innermost `package` file:line that raised it.
    Shared with the draft probes."""
    import traceback

    where = None
    for frame in traceback.extract_tb(exc.__traceback__):
        if f"/{package}/" in frame.filename:
            where = f"{package}/{frame.filename.split(f'/{package}/', 1)[1]}:{frame.lineno}"
    return {"type": type(exc).__name__, "message": " ".join(str(exc).split())[:400], "where": where}


@contextlib.contextmanager
def _triton_cpu_met():
    """`triton_cpu_stand_in` while the release's default engine config is built, and no longer: Triton's absence
    decides other paths of the model code (its kernels' placeholders), which the capture probe keeps as they are."""
    try:
        import vllm.triton_utils as triton_utils
    except ImportError:  # a release before it: nothing to stand in
        yield
        return
    had = triton_utils.HAS_TRITON
    triton_cpu_stand_in()
    try:
        yield
    finally:
        triton_utils.HAS_TRITON = had


def triton_cpu_stand_in() -> None:
    """From 0.34.0 the CPU platform refuses an x86 host without triton-cpu ("vLLM on x86 CPUs requires Triton
    (triton-cpu).", platforms/cpu.py:242-243), which is not on the package index: the records answer for a GPU host,
    so the check is answered as met (the release's default `VllmConfig()` builds again). Before 0.34.0 Triton
    decided the model runner on a CPU (V1 without it, the CPU's own behaviour): those releases are left as they are."""
    from vllm.platforms.cpu import CpuPlatform

    if "requires Triton (triton-cpu)" in inspect.getsource(CpuPlatform.check_and_update_config):
        import vllm.triton_utils as triton_utils

        triton_utils.HAS_TRITON = True


def setup(engine: str) -> None:
    """What the release's model files need to import on this CPU machine beside its own code (shims for names
    newer torch and transformers dropped, stubs of GPU-only packages); then vLLM's CPU platform. Shared with
    draft_probe.py."""
    logging.disable(logging.WARNING)
    sys.path.append(str(Path(__file__).with_name("stubs")))  # after site-packages: a real install wins
    import torch

    # SGLang 0.4.9-0.5.x and vLLM 0.17 ask torch about the CPU's AMX tiles and AVX-512 under names torch 2.13 no
    # longer has: what the CPU has (the answer an older torch gave), not the capture code
    if not hasattr(torch._C._cpu, "_is_amx_tile_supported"):
        torch._C._cpu._is_amx_tile_supported = lambda: _cpu_flag("amx_tile")
    if not hasattr(torch._C._cpu, "_is_avx512_supported"):
        torch._C._cpu._is_avx512_supported = lambda: _cpu_flag("avx512f")
    if engine == "sglang":
        # GPU-only packages SGLang's model files import at module level (stubs/sglang: cutlass, cuda)
        sys.path.append(str(Path(__file__).with_name("stubs") / "sglang"))
        try:  # the CPU build of SGLang's kernels lacks CUDA ops older model files import by name (quantization,
            # MoE): import-time names only, each raising if called; the capture code calls none of them
            import sgl_kernel

            def _cuda_only(name: str):
                if name.startswith("__"):
                    raise AttributeError(name)

                def op(*args, **kwargs):
                    raise NotImplementedError(f"sgl_kernel.{name}: a CUDA op (not in the CPU build)")

                return op

            sgl_kernel.__getattr__ = _cuda_only
        except ImportError:
            pass
        try:  # 0.4.5-0.4.8 import helpers newer triton dropped: where its caches live (never used by capture)
            import triton.runtime.cache as cache

            for name in ("default_cache_dir", "default_dump_dir", "default_override_dir"):
                if not hasattr(cache, name):
                    setattr(
                        cache, name, lambda name=name: os.path.join(tempfile.gettempdir(), "triton", name)
                    )
        except ImportError:
            pass
    import transformers

    # vision helpers transformers 5 dropped, which older releases import at module level beside the text decoder
    # (vLLM's Mistral3/Pixtral, SGLang's Qwen2.5-VL/Qwen3-VL): import-time names only, each raising if called
    for module, name in DROPPED:
        try:
            found = importlib.import_module(module)
        except ImportError:
            continue
        if not hasattr(found, name):
            setattr(found, name, type(name, (), {"__init__": _dropped(name)}))
    # older releases register config classes under names transformers 5 now has (vLLM's, SGLang 0.5.11-0.5.19's
    # `qwen3_asr`): the release's own class is registered over it, as it was beside the transformers those releases
    # pinned (none of them is a target tested here)
    register = transformers.AutoConfig.register
    transformers.AutoConfig.register = staticmethod(
        lambda name, cfg, exist_ok=False: register(name, cfg, True)
    )
    if engine == "vllm":
        from vllm import platforms
        from vllm.platforms.cpu import CpuPlatform

        platforms.current_platform = CpuPlatform()
        try:  # without a GPU triton, vLLM imports kernels through its placeholder `tl`, which lacks names newer
            # kernel files bind at import (0.10.2-0.11.0's `exp = tl.exp`, Qwen3-Next): import-time names only
            from vllm.triton_utils.importing import TritonLanguagePlaceholder
        except ImportError:
            pass
        else:

            def _tl_name(self, name: str):
                if name.startswith("__"):
                    raise AttributeError(name)
                return None

            TritonLanguagePlaceholder.__getattr__ = _tl_name


def main(request_path: str, result_path: str) -> int:
    with open(request_path) as f:
        request = json.load(f)
    engine = request["engine"]
    one = _sglang_case if engine == "sglang" else _vllm_case
    setup(engine)
    if any(c.get("forward") for c in request["cases"]):
        STOOD_IN_GROUPS.extend(one_rank_groups(importlib.import_module(PARALLEL_STATE[engine])))
    version = importlib.import_module(engine).__version__
    CHECKPOINT_TYPES.update(
        {c["arch"]: tuple(c["checkpoint_type"]) for c in request["cases"] if c.get("checkpoint_type")}
    )
    results = [one(case) for case in request["cases"]]
    with open(result_path + ".tmp", "w") as f:
        json.dump({"engine": engine, "version": version, "results": results}, f)
    os.replace(result_path + ".tmp", result_path)
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1], sys.argv[2]))
