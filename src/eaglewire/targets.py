"""Targets: what eaglewire needs to know about the model a drafter accelerates.

The config part reads a target `config.json` (or its directory) with no weights: architecture, family, layer
count L, hidden size, vocab size. Wrappers are unwrapped (Kimi-K2.5 `text_config`, other
`*ForConditionalGeneration`), because engines place the EAGLE-3 capture in the text model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path

from eaglewire.errors import InputError
from eaglewire.jsonio import read_json_object, str_list


@dataclass(frozen=True)
class Family:
    """A target family: the architectures and model types that name it. Which engine model file runs it, and so
    which convention row applies, is each engine's `MODEL_FILES` (gathered in `engines.models`)."""

    architectures: frozenset[str]
    model_types: frozenset[str]
    wrapper: bool = False  # a multimodal / wrapper class whose text model sits under `text_config`


def _f(archs: set[str], types: set[str], wrapper: bool = False) -> Family:
    return Family(frozenset(archs), frozenset(types), wrapper)


# Every family with a published EAGLE-3 drafter (docs/conventions.md (a)); anything else reads as "generic".
FAMILIES: dict[str, Family] = {
    "llama": _f({"LlamaForCausalLM"}, {"llama"}),
    "llama4": _f({"Llama4ForConditionalGeneration", "Llama4ForCausalLM"}, {"llama4", "llama4_text"}, True),
    "mistral": _f({"MistralForCausalLM"}, {"mistral"}),
    "mistral3": _f({"Mistral3ForConditionalGeneration"}, {"mistral3"}, True),
    "qwen2": _f({"Qwen2ForCausalLM"}, {"qwen2"}),
    "qwen2_5_vl": _f({"Qwen2_5_VLForConditionalGeneration"}, {"qwen2_5_vl", "qwen2_5_vl_text"}, True),
    "qwen2_vl": _f({"Qwen2VLForConditionalGeneration"}, {"qwen2_vl", "qwen2_vl_text"}, True),
    "qwen3": _f({"Qwen3ForCausalLM"}, {"qwen3"}),
    "qwen3_moe": _f({"Qwen3MoeForCausalLM"}, {"qwen3_moe"}),
    "qwen3_next": _f({"Qwen3NextForCausalLM"}, {"qwen3_next"}),
    "qwen3_vl": _f({"Qwen3VLForConditionalGeneration"}, {"qwen3_vl", "qwen3_vl_text"}, True),
    "qwen3_vl_moe": _f({"Qwen3VLMoeForConditionalGeneration"}, {"qwen3_vl_moe", "qwen3_vl_moe_text"}, True),
    "gpt_oss": _f({"GptOssForCausalLM"}, {"gpt_oss"}),
    "deepseek_v2": _f({"DeepseekV2ForCausalLM"}, {"deepseek_v2"}),
    "deepseek_v3": _f({"DeepseekV3ForCausalLM"}, {"deepseek_v3"}),
    "deepseek_v32": _f({"DeepseekV32ForCausalLM"}, {"deepseek_v32"}),
    "deepseek_v4": _f({"DeepseekV4ForCausalLM"}, {"deepseek_v4"}),
    "kimi_k2": _f(set(), {"kimi_k2"}),
    "kimi_k25": _f({"KimiK25ForConditionalGeneration"}, {"kimi_k25"}, True),
    "glm4_moe": _f({"Glm4MoeForCausalLM"}, {"glm4_moe"}),
    "minimax_m2": _f({"MiniMaxM2ForCausalLM"}, {"minimax_m2"}),
}
GENERIC = (
    "generic"  # an architecture eaglewire has no facts for: read as a generic decoder, verdicts unverified
)

# Keys other configs use for the three numbers eaglewire needs (GPT-2 style, Falcon, MPT, ...).
LAYER_KEYS = ("num_hidden_layers", "n_layer", "num_layers", "n_layers")
HIDDEN_KEYS = ("hidden_size", "n_embd", "d_model", "dim")
VOCAB_KEYS = ("vocab_size", "padded_vocab_size", "n_vocab")


@dataclass(frozen=True)
class TargetInfo:
    """A target's identity, as recorded in provenance and used by the convention table."""

    architecture: str  # as the engines see it: the top-level `architectures[0]`
    text_architecture: str  # the architecture of the text model (differs for wrappers)
    model_type: str
    family: str  # key of FAMILIES, or GENERIC
    num_layers: int
    hidden_size: int
    vocab_size: int
    source: str = ""  # the file it was read from
    tokenizer_sha256: str | None = None
    wrapped: bool = False
    extra: dict = field(default_factory=dict, compare=False)
    config: dict = field(default_factory=dict, compare=False, repr=False)  # the text model's config.json
    # the checkpoint's quantization method (`quantization_config.quant_method`, top level or the text model's):
    # a pre-quantized target, whose scheme some engine releases also build the draft model with
    quantization: str | None = None

    @property
    def known_family(self) -> bool:
        return self.family in FAMILIES

    def identity(self) -> dict:
        """The provenance record: enough to tell a drafter's target from another one without weights."""
        return {
            "architecture": self.architecture,
            "family": self.family,
            "num_layers": self.num_layers,
            "hidden_size": self.hidden_size,
            "vocab_size": self.vocab_size,
            "tokenizer_sha256": self.tokenizer_sha256,
        }


def _family_of(archs: list[str], model_type: str) -> str | None:
    for name, fam in FAMILIES.items():
        if model_type in fam.model_types:
            return name
    for name, fam in FAMILIES.items():
        if any(a in fam.architectures for a in archs):
            return name
    return None


def _int_key(cfg: dict, keys: tuple[str, ...], path: Path, fallback: dict | None = None) -> int:
    """The first of `keys` present (in the text config, else the top-level one), a positive integer."""
    for where in (cfg, fallback or {}):
        for key in keys:
            if key in where:
                value = where[key]
                if isinstance(value, bool) or not isinstance(value, int) or value <= 0:
                    raise InputError(f"{path}: key {key!r} must be a positive integer, found {value!r}")
                return value
    raise InputError(f"{path}: key {keys[0]!r} must be a positive integer, found None")


def _string(cfg: dict, key: str, path: Path) -> str:
    value = cfg.get(key) or ""
    if not isinstance(value, str):
        raise InputError(f"{path}: key {key!r} must be a string, found {value!r}")
    return value


def config_path(path: Path) -> Path:
    from eaglewire.hub import resolve

    path = resolve(path, "target")
    if path.is_dir():
        cfg = path / "config.json"
        if not cfg.exists():
            raise InputError(f"{path}: no config.json in this target directory")
        return cfg
    if not path.exists():
        raise InputError(f"{path}: target config not found")
    return path


def tokenizer_sha256(directory: Path) -> str | None:
    """Hash of `tokenizer.json` (the vocabulary and merges): the same tokenizer gives the same hash."""
    tok = directory / "tokenizer.json"
    if not tok.is_file():
        return None
    return hashlib.sha256(tok.read_bytes()).hexdigest()


def read_target(path: Path | str) -> TargetInfo:
    """Read a target config.json or directory; unwrap `text_config`; raise InputError naming the key."""
    cfg_file = config_path(Path(path))
    cfg = read_json_object(cfg_file, "target config")
    archs = str_list(cfg, "architectures", cfg_file)
    model_type = _string(cfg, "model_type", cfg_file)
    text = cfg
    wrapped = False
    if isinstance(cfg.get("text_config"), dict):
        text = cfg["text_config"]
        wrapped = True
    where = Path(f"{cfg_file}{' text_config' if wrapped else ''}")
    text_archs = str_list(text, "architectures", where) or archs
    text_type = _string(text, "model_type", where) or model_type
    # A known wrapper (Kimi-K2.5, Llama-4, Qwen-VL) names its own family; otherwise the text model decides.
    family = _family_of(list(archs), model_type) if wrapped else None
    family = (
        family or _family_of(list(text_archs), text_type) or _family_of(list(archs), model_type) or GENERIC
    )
    top = cfg if wrapped else None
    quant = cfg.get("quantization_config", text.get("quantization_config"))
    if quant is not None and not isinstance(quant, dict):
        raise InputError(f"{cfg_file}: quantization_config must be an object, got {type(quant).__name__}")
    return TargetInfo(
        architecture=archs[0] if archs else (text_archs[0] if text_archs else model_type or family),
        text_architecture=text_archs[0] if text_archs else (archs[0] if archs else family),
        model_type=text_type or model_type,
        family=family,
        num_layers=_int_key(text, LAYER_KEYS, where, top),
        hidden_size=_int_key(text, HIDDEN_KEYS, where, top),
        vocab_size=_int_key(text, VOCAB_KEYS, where, top),
        source=str(cfg_file),
        tokenizer_sha256=tokenizer_sha256(cfg_file.parent),
        wrapped=wrapped,
        config=dict(text),
        quantization=str(quant.get("quant_method") or "unknown") if quant else None,
    )


# ---- loading a target and capturing every tap in one forward pass -------------------------------------------


@dataclass
class LoadedTarget:
    """A transformers causal LM with the facts eaglewire needs; `layers` are its decoder layers. `device` is
    where its inputs go (the embedding's device when the model is spread over several GPUs)."""

    model: object
    tokenizer: object | None
    info: TargetInfo
    path: Path
    device: object = None  # torch.device; None = the device of the first parameter

    def __post_init__(self) -> None:
        if self.device is None:
            self.device = next(self.model.parameters()).device

    @property
    def layers(self):
        return decoder_layers(self.model)

    @property
    def dtype(self):
        return next(self.model.parameters()).dtype

    def text_config(self):
        """The text model's transformers config (a wrapper's `text_config`)."""
        return getattr(self.model.config, "text_config", None) or self.model.config

    def input_embedding(self):
        """The input embedding matrix [vocab, hidden] (a drafter shares or copies it)."""
        return self.model.get_input_embeddings().weight.detach()

    def lm_head(self):
        """The output head [vocab, hidden] (a release may score the draft with it: rules.draft_weights)."""
        return self.model.get_output_embeddings().weight.detach()


def decoder_layers(model):
    """The decoder layer list of a causal LM (text model of a wrapper included)."""
    for path in (
        "model.layers",
        "model.language_model.layers",
        "language_model.model.layers",
        "transformer.h",
    ):
        node = model
        for part in path.split("."):
            node = getattr(node, part, None)
            if node is None:
                break
        if node is not None:
            return node
    raise InputError(f"cannot find the decoder layers of {type(model).__name__}")


def final_norm_and_head(model):
    """(final norm, lm_head) of a causal LM: what turns the pre-norm h_L into logits."""
    inner = getattr(model, "model", None)
    norm = getattr(inner, "norm", None) or getattr(getattr(inner, "language_model", None), "norm", None)
    head = model.get_output_embeddings()
    if norm is None or head is None:
        raise InputError(f"cannot find the final norm / lm_head of {type(model).__name__}")
    return norm, head


def text_section(cfg: dict) -> dict:
    return cfg["text_config"] if isinstance(cfg.get("text_config"), dict) else cfg


def resolve_dtype(path: Path | str, name: str = "auto"):
    """The torch dtype to run a target in (`--dtype`). `auto` = the dtype its weights are stored in when that is
    bf16 (on CPUs with AVX512-BF16 it is also the faster one), else fp32 (fp16 matmuls are slow on CPUs)."""
    import torch

    from eaglewire.devices import parse_dtype

    dtype = parse_dtype(name)
    if dtype is not None:
        return dtype
    cfg = read_json_object(config_path(Path(path)), "target config")
    text = text_section(cfg)
    stored = text.get("dtype") or text.get("torch_dtype") or cfg.get("dtype") or cfg.get("torch_dtype")
    return torch.bfloat16 if stored == "bfloat16" else torch.float32


def weights_bytes(path: Path, dtype) -> int:
    """The bytes the target's weights take in `dtype` (from the safetensors headers; nothing is read)."""
    from safetensors import safe_open

    total = 0
    for f in sorted(path.glob("*.safetensors")):
        with safe_open(str(f), "pt") as st:
            for name in st.keys():
                shape = st.get_slice(name).get_shape()
                n = 1
                for d in shape:
                    n *= d
                total += n * dtype.itemsize
    return total


def placement(path: Path, device: str, dtype) -> tuple[object, str | None]:
    """(the input device, the transformers device_map or None) for `--device`. `auto` takes one GPU when the
    target fits it, else spreads it over every GPU with device_map="auto" (accelerate), else the CPU."""
    import torch

    from eaglewire.devices import accelerate_installed, free_bytes, resolve_device

    dev = resolve_device(device)
    if str(device).strip().lower() != "auto" or dev.type != "cuda":
        return dev, None
    need, free = weights_bytes(path, dtype), free_bytes(dev) or 0
    if need * 1.15 <= free:
        return dev, None
    if not accelerate_installed():
        raise InputError(
            f"{path}: the target needs {need / 2**30:.1f} GiB, {dev} has {free / 2**30:.1f} GiB free; spreading it "
            "over GPUs (device_map='auto') needs accelerate, which is not installed: pip install accelerate"
        )
    return torch.device("cuda", 0), "auto"


def load_target(
    path: Path | str, dtype=None, trust_remote_code: bool = False, device: str | object = "cpu"
) -> LoadedTarget:
    """Load a local transformers target (weights + tokenizer when present) on `device` (see `placement`).
    Never downloads. One device: loaded straight onto it with accelerate, else on the CPU and moved."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    from eaglewire.devices import accelerate_installed

    path = Path(path)
    info = read_target(path)
    if not path.is_dir():
        raise InputError(f"{path}: need the target folder with weights, not only its config.json")
    dtype = dtype or torch.float32
    dev, device_map = placement(path, device if isinstance(device, str) else str(device), dtype)
    kwargs = {}
    if device_map is not None:
        kwargs["device_map"] = device_map
    elif dev.type != "cpu" and accelerate_installed():
        kwargs["device_map"] = {"": str(dev)}
    try:
        model = AutoModelForCausalLM.from_pretrained(
            str(path), dtype=dtype, trust_remote_code=trust_remote_code, local_files_only=True, **kwargs
        )
    except (OSError, ValueError) as e:
        raise InputError(f"{path}: cannot load the target weights ({str(e).splitlines()[0][:200]})") from None
    if not kwargs:
        model.to(dev)
    model.eval()
    tokenizer = None
    if (path / "tokenizer.json").exists() or (path / "tokenizer_config.json").exists():
        tokenizer = AutoTokenizer.from_pretrained(
            str(path), local_files_only=True, trust_remote_code=trust_remote_code
        )
    first = model.get_input_embeddings().weight.device
    return LoadedTarget(model, tokenizer, info, path, first)


class TargetRunner:
    """The one way eaglewire runs a target: a transformers causal LM forward that captures taps the way serving
    engines do, with or without a KV cache, on whatever device the model is on.

    Tap h<k> for k < L is the input of decoder layer k (h0 = the embeddings as layer 0 sees them, so a VL wrapper's
    merged image embeddings count); h<L> is the output of the last layer before the final norm (transformers'
    own `hidden_states[L]` holds the post-norm tensor: engines capture pre-norm). Hooks, not
    `output_hidden_states`, so only the taps asked for are kept. Inputs go to the embedding's device and taps and
    logits come back there, so a target spread over GPUs (device_map="auto") answers on one device.

    Without a cache (`capture`) every call is a fresh forward. With one (`reset`, `forward`, `keep`) calls append
    to the cached tokens, optionally with a tree mask among the new ones (the reference decoder's verify pass)."""

    def __init__(self, model, taps: Iterable[int]):
        import inspect

        self.model = model
        layers = decoder_layers(model)
        self.L = len(layers)
        self.taps = tuple(int(t) for t in taps)
        bad = [t for t in self.taps if not 0 <= t <= self.L]
        if bad:
            raise InputError(
                f"tap h{bad[0]} out of range for a {self.L}-layer target (taps run h0..h{self.L})"
            )
        self._seen: dict[int, object] = {}
        self._hooks = []
        for t in sorted(set(self.taps)):
            if t < self.L:
                self._hooks.append(layers[t].register_forward_pre_hook(self._before(t), with_kwargs=True))
            else:
                self._hooks.append(layers[t - 1].register_forward_hook(self._after(t)))
        params = inspect.signature(model.forward).parameters
        self.cache_kw = "cache" if "cache" in params else "past_key_values"  # transformers 5.24 renamed it
        first = model.get_input_embeddings().weight
        self.dtype, self.device = first.dtype, first.device  # a model spread over GPUs answers on this one
        self.cache = None
        self.length = 0

    def _before(self, tap: int):
        def fn(_module, args, kwargs):
            self._seen[tap] = args[0] if args else kwargs["hidden_states"]

        return fn

    def _after(self, tap: int):
        def fn(_module, _inputs, output):
            self._seen[tap] = output[0] if isinstance(output, tuple) else output

        return fn

    def __enter__(self) -> TargetRunner:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def close(self) -> None:
        for h in self._hooks:
            h.remove()
        self._hooks = []

    def capture(self, input_ids):
        """One forward without a cache: (taps in the order asked, each [B, T, H]; logits [B, T, V])."""
        import torch

        self._seen.clear()
        with torch.no_grad():
            out = self.model(input_ids=input_ids.to(self.device), use_cache=False)
        return [self._seen[t].to(self.device) for t in self.taps], out.logits.to(self.device)

    def reset(self) -> None:
        """Start a new sequence (an empty KV cache)."""
        from transformers import DynamicCache

        self.cache = DynamicCache(config=self.model.config)
        self.length = 0

    def forward(self, ids, positions, tree_mask=None):
        """Run `ids` [1, n] after the cached tokens. tree_mask: [n, n] bool among the new tokens (None = causal).
        Returns (logits [n, V], the taps concatenated in the order asked [n, len(taps) * H])."""
        import torch

        n = ids.shape[1]
        kwargs = {
            "input_ids": ids.to(self.device),
            "position_ids": positions.to(self.device),
            self.cache_kw: self.cache,
            "use_cache": True,
        }
        if tree_mask is not None:
            full = torch.ones(n, self.length + n, dtype=torch.bool, device=self.device)
            full[:, self.length :] = tree_mask.to(self.device)
            kwargs["attention_mask"] = torch.zeros(
                1, 1, n, self.length + n, dtype=self.dtype, device=self.device
            ).masked_fill(~full, torch.finfo(self.dtype).min)
        self._seen.clear()
        with torch.no_grad():
            out = self.model(**kwargs)
        self.length += n
        taps = torch.cat([self._seen[t].to(self.device) for t in self.taps], dim=-1)[0] if self.taps else None
        return out.logits[0].to(self.device), taps

    def keep(self, index) -> None:
        """Keep the cache rows at `index` (absolute positions, ascending). A prefix (every chain, and a tree
        whose accepted path is its first branch) is a view, not a copy."""
        n = int(index.numel())
        prefix = int(index[-1]) == n - 1
        for layer in self.cache.layers:
            if prefix:
                layer.keys, layer.values = layer.keys[..., :n, :], layer.values[..., :n, :]
            else:
                idx = index.to(layer.keys.device)
                layer.keys = layer.keys.index_select(-2, idx)
                layer.values = layer.values.index_select(-2, idx)
        self.length = n


def forward_taps(target: LoadedTarget, input_ids, taps=None):
    """One target forward: (taps h0..h_L, or those asked for, with h_L PRE-norm; logits). See `TargetRunner`."""
    wanted = range(target.info.num_layers + 1) if taps is None else taps
    with TargetRunner(target.model, wanted) as runner:
        return runner.capture(input_ids)
