"""vLLM's Transformers modeling backend, as capture_probe runs it: the release's own capture request and forward
around a real (tiny, random-weight) transformers decoder.

The backend serves an architecture with transformers' own modeling code (`TransformersForCausalLM` and the
registry's aliases: OLMo, Phi, GPT-NeoX, Seed-OSS, SmolLM3... at 0.32-0.33), so there is no vLLM decoder loop to
stand in. Its EAGLE-3 capture is an `OutputRecorder` per id on the decoder layer named `_layer_names[id - 1]`
(`set_aux_hidden_state_layers`, transformers/base.py:845-865 @0.33.0), filled by the release's `recursive_replace`
as it walks the model. So the probe builds the transformers model the backend builds (`AutoModel.from_config`),
runs the release's lines of `recursive_replace` that name the layers on it, asks for capture through the release's
runner entry, runs the release's `forward` on three tokens, and tells each returned state apart by comparing it
with every layer's output (h_k: the output of layer k-1, h_0 the embeddings). Attention stays transformers' eager
implementation (the release substitutes vLLM's): which layer's state is captured does not depend on it.

Imported by capture_probe inside the engine venv (no eaglewire there).
"""

from __future__ import annotations

import inspect
import sys
import textwrap
from types import SimpleNamespace
from typing import Any

TOKENS = (1, 2, 3)
# a width every decoder accepts (heads x head_dim = hidden), small enough to build 31 cases in seconds
TINY = {"hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2, "num_key_value_heads": 2,
        "head_dim": 8, "vocab_size": 64, "max_position_embeddings": 64, "moe_intermediate_size": 16,
        "num_experts": 4, "num_local_experts": 4, "n_routed_experts": 4, "num_experts_per_tok": 2,
        "shared_expert_intermediate_size": 16, "n_inner": 32, "pad_token_id": 0}  # fmt: skip
# the backend's generic classes name no model type: a checkpoint's config.json brings one; these stand for it. Its
# generic multimodal classes have none: what they capture depends on the checkpoint's transformers wrapper (0.33.0
# with transformers 5.19: Llava's forward records none of the recorders the release adds, Emu3's records them), so
# only the architectures the registry names are built
GENERIC_MODEL_TYPES = {"TransformersForCausalLM": "llama", "TransformersMoEForCausalLM": "qwen3_moe"}
# the towers and encoders of a multimodal config, as small as their own keys allow (the capture is the text
# model's; a tower runs only on inputs the probe does not give)
TOWER_TINY = {"hidden_size": 16, "intermediate_size": 32, "num_attention_heads": 2, "num_key_value_heads": 2,
              "head_dim": 8, "num_hidden_layers": 2, "depth": 2, "num_layers": 2, "embed_dim": 16,
              "projection_dim": 16, "out_hidden_size": 16, "image_size": 32, "patch_size": 16,
              "vision_output_dim": 16, "projector_input_dim": 16, "projector_output_dim": 16}  # fmt: skip


class NotBuilt(Exception):
    """The probe could not build what the release builds (not the engine's answer)."""


def is_backend(module_name: str) -> bool:
    """Whether a registry entry's module is the Transformers modeling backend (`transformers`, a file before
    0.22 and a package after)."""
    return module_name == "transformers" or module_name.startswith("transformers.")


def hf_config(model_type: str, num_layers: int):
    """A tiny config of the model type with L layers: built with the sizes as arguments, so a config that derives
    per-layer lists from them (`layer_types`) derives them for L."""
    from transformers import AutoConfig

    config = AutoConfig.for_model(model_type, num_hidden_layers=num_layers, **TINY)
    config = config.get_text_config()
    config._attn_implementation = "eager"
    return config


# keys a multimodal family's checkpoints carry in config.json that its transformers config does not default, and
# that its model's __init__ reads: Emu3's vocabulary map (its end-of-line and image tokens)
MM_CHECKPOINT_KEYS = {"emu3": {"vocabulary_map": {"<|extra_200|>": 62, "<image>": 63}}}
# and the text config's: HunYuan-VL's multimodal RoPE axes, whose sections its rotary embedding splits the head by
# (HunYuan-VL's config.json: four sections of 16 over head_dim 128; here four of 1 over the tiny head's half)
MM_TEXT_CHECKPOINT_KEYS = {
    "hunyuan_vl": {
        "rope_parameters": {"rope_type": "default", "rope_theta": 10000.0, "mrope_section": [1, 1, 1, 1]}
    }
}


def multimodal(cls: type) -> bool:
    """Whether a class of the backend is a multimodal one: it builds the whole transformers model of the checkpoint
    (towers and text model from one config) and captures in its text model."""
    return any(k.__name__ == "MultiModalMixin" for k in cls.__mro__)


def check_named(arch: str, cls: type) -> None:
    """A generic multimodal class (no checkpoint names it; `GENERIC_MODEL_TYPES`) is not built."""
    if multimodal(cls) and arch == cls.__name__:
        raise NotBuilt(
            f"a generic multimodal class of the backend ({arch}): what it captures depends on the checkpoint's "
            "transformers wrapper, so only the architectures the registry names are built"
        )


def mm_config(model_type: str, num_layers: int):
    """A tiny multimodal config of the model type: its text model as `hf_config` builds one (L layers), each other
    sub-config (vision tower, audio or VQ encoder) its own defaults with `TOWER_TINY` where it has those keys."""
    from transformers import AutoConfig, PretrainedConfig

    try:
        base = AutoConfig.for_model(model_type)
        text = base.get_text_config()
        if text is base:
            raise NotBuilt(
                f"{model_type} is not a multimodal model type of transformers {transformers_version()}"
            )
        parts = {}
        for name, sub in vars(base).items():
            if not isinstance(sub, PretrainedConfig):
                continue
            if (
                sub is text
            ):  # its own class: a text model type the auto registry may not list (emu3_text_model)
                keys = TINY | MM_TEXT_CHECKPOINT_KEYS.get(model_type, {})
                parts[name] = type(text)(num_hidden_layers=num_layers, **keys).to_dict()
            else:
                own = sub.to_dict()
                parts[name] = own | {k: v for k, v in TOWER_TINY.items() if k in own}
        config = AutoConfig.for_model(model_type, **parts, **MM_CHECKPOINT_KEYS.get(model_type, {}))
    except NotBuilt:
        raise
    except Exception as exc:  # transformers' config, not the release's code: the probe's failure
        raise NotBuilt(f"transformers {transformers_version()} does not build a {model_type} config: "
                       f"{type(exc).__name__}: {exc}") from exc  # fmt: skip
    for sub in [config, *(v for v in vars(config).values() if isinstance(v, PretrainedConfig))]:
        sub._attn_implementation = "eager"
    return config


def build(cls: type, model_type: str, num_layers: int, init_attributes=None):
    """The backend model (`cls`, its __init__ skipped: it needs the engine's whole config and its attention
    layers) holding the transformers model its __init__ creates: the plain values the release's __init__ keeps
    (`init_attributes`, capture_probe's evaluation of its `self.x = ...` lines: 0.20's forward reads
    `embed_scale`), what the capture code reads set as __init__ sets it, then the layer names the release's
    `recursive_replace` records."""
    import torch
    from transformers import AutoModel

    mm = multimodal(cls)
    config = mm_config(model_type, num_layers) if mm else hf_config(model_type, num_layers)
    text_config = config.get_text_config()
    model = cls.__new__(cls)
    torch.nn.Module.__init__(model)
    if init_attributes is not None:
        init_attributes(model, config)
    init = {"config": config, "text_config": text_config, "ignore_unexpected_prefixes": [],
            "ignore_unexpected_suffixes": [], "_target_class": torch.nn.Module, "_layer_names": {},
            "_output_aux_hidden_states_kwargs": {},
            # vLLM's attention layers, which 0.14-0.22's forward hands the model (read only by the "vllm"
            # attention implementation, not the eager one the probe keeps)
            "attention_instances": {},
            "pp_group": SimpleNamespace(is_first_rank=True, is_last_rank=True, world_size=1, rank_in_group=0),
            # what a multimodal class's forward reads of the engine's model config (positions as given: 1-D)
            "model_config": SimpleNamespace(uses_mrope=False)}  # fmt: skip
    for name, value in init.items():
        setattr(model, name, value)
    torch.manual_seed(0)
    try:
        model.model = AutoModel.from_config(config).eval()
    except Exception as exc:  # transformers' model, not the release's code: the probe's failure
        raise NotBuilt(
            f"transformers {transformers_version()} does not build {model_type}: {type(exc).__name__}: {exc}"
        ) from exc
    model._probe_saved = _class_recorders(model.model)
    _name_layers(model)
    if not model._layer_names:
        raise NotBuilt(
            f"the release's recursive_replace named no decoder layer of {type(model.model).__name__}"
        )
    return model


def _class_recorders(hf_model) -> dict[type, dict]:
    """Each model class's `_can_record_outputs` as it stands: a class attribute, which transformers' capture hooks
    read through a registry by class (modeling_utils.py:1289 @5.19.0), so the recorders the release adds to
    `self.model._can_record_outputs` stay on the class. An engine process builds one model; the probe builds one
    per case and puts each class back after it (`release`), so no case sees another's recorders."""
    return {type(m): dict(type(m)._can_record_outputs) for m in hf_model.modules()
            if isinstance(getattr(type(m), "_can_record_outputs", None), dict)}  # fmt: skip


def release(model) -> None:
    """Put back each class's recorders as they were before the case (`_class_recorders`)."""
    for cls, saved in getattr(model, "_probe_saved", {}).items():
        cls._can_record_outputs.clear()
        cls._can_record_outputs.update(saved)


def _name_layers(model) -> None:
    """The release's own block of `recursive_replace` that records each decoder layer's class and name (the block
    under the `isinstance(module, nn.ModuleList)` test, transformers/base.py:542-561 @0.33.0), taken from its
    source and run as it stands on every module of the model, as the method walks them."""
    # the class of the MRO whose recursive_replace names the layers (a mixin's override calls it: MoEMixin's)
    sources = [(m, inspect.getsource(m)) for k in type(model).__mro__
               if (m := k.__dict__.get("recursive_replace")) is not None]  # fmt: skip
    method, source = next(((m, src) for m, src in sources if "_layer_names" in src), (None, ""))
    lines = source.splitlines()
    at = next((i for i, ln in enumerate(lines) if "isinstance(module, nn.ModuleList)" in ln), None)
    if at is None:
        raise NotBuilt(
            "no recursive_replace of the release's backend names the decoder layers (`_layer_names`)"
        )
    while not lines[at].lstrip().startswith("if"):  # the `if (` opening a test that spans lines
        at -= 1
    indent = len(lines[at]) - len(lines[at].lstrip())
    block = [lines[at]]
    for ln in lines[at + 1 :]:
        if ln.strip() and len(ln) - len(ln.lstrip()) <= indent and not ln.strip().startswith(")"):
            break
        block.append(ln)
    code = compile(textwrap.dedent("\n".join(block)), "<recursive_replace>", "exec")
    namespace = dict(
        vars(sys.modules[method.__module__])
    )  # the method's globals, once (the block reads them)

    def walk(module, prefix: str) -> None:
        for child_name, child_module in module.named_children():
            qual_name = f"{prefix}.{child_name}"
            exec(code, namespace, {"self": model, "module": module, "child_name": child_name,
                                         "child_module": child_module, "qual_name": qual_name, "prefix": prefix})  # fmt: skip
            walk(child_module, qual_name)

    walk(model.model, "model")


def transformers_version() -> str:
    import transformers

    return transformers.__version__


def requested(model) -> list[int]:
    """The ids the release's request left on the model: one recorder key per id (`output_aux_hidden_state_<id>`)."""
    return [int(k.rsplit("_", 1)[1]) for k in model._output_aux_hidden_states_kwargs]


def forward_taps(model) -> dict[str, Any]:
    """The release's forward on three tokens: which state each returned aux state is (k where it equals h_k; None
    where it equals none), in the order returned."""
    import torch

    # the decoder layers the release named (`_layer_names`: "layers.0", or "language_model.layers.0" in a
    # multimodal model, whose towers have layer lists of their own)
    named = model._layer_names[0].rsplit(".", 1)[0]
    try:
        layers = model.model.get_submodule(named)
    except AttributeError:  # a release that kept the "model." prefix
        layers = model.model.get_submodule(named.removeprefix("model."))
    states: dict[int, torch.Tensor] = {}

    def first(value):
        return value[0] if isinstance(value, tuple) else value

    def before(module, args, kwargs):
        states[0] = (args[0] if args else kwargs["hidden_states"]).detach().clone()

    hooks = [layers[0].register_forward_pre_hook(before, with_kwargs=True)]
    for i, layer in enumerate(layers):
        hooks.append(layer.register_forward_hook(
            lambda m, a, out, k=i + 1: states.__setitem__(k, first(out).detach().clone())))  # fmt: skip
    try:
        with torch.no_grad():
            out = type(model).forward(
                model, input_ids=torch.tensor(TOKENS), positions=torch.arange(len(TOKENS))
            )
    finally:
        for h in hooks:
            h.remove()
    aux = out[1] if isinstance(out, tuple) and len(out) == 2 else []
    taps = []
    for state in aux:
        found = [k for k, s in sorted(states.items()) if s.shape[-2:] == state.shape[-2:]
                 and torch.equal(s.reshape(state.shape), state)]  # fmt: skip
        taps.append(found[0] if len(found) == 1 else None)
    return {"forward_taps": taps}
