"""The in-memory drafter checkpoint every format is read into and written from.

Tensor names are canonical (the speculators/vLLM layout): `layers.{i}.*` (layer 0 carries `hidden_norm` and
2H-wide q/k/v), `fc.weight`, `norm.weight`, `lm_head.weight`, `embed_tokens.weight`, `d2t`, `t2d`,
`input_norm.weight` (norm_before_fc) and `fc_norm.{i}.weight`. Each format maps its own names at the edge.
"""

from __future__ import annotations

import copy
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path

import torch

from eaglewire.errors import InputError

PROVENANCE_KEY = "eaglewire"  # config.json key holding eaglewire's provenance (engines ignore unknown keys)


@dataclass
class DrafterArch:
    """Everything the drafter's forward pass needs, independent of the on-disk format."""

    hidden_size: int
    intermediate_size: int
    num_layers: int
    num_heads: int
    num_kv_heads: int
    head_dim: int
    rms_norm_eps: float
    vocab_size: int  # the target's vocabulary (embedding rows, t2d length)
    draft_vocab_size: int
    target_hidden_size: int
    n_aux: int  # taps concatenated into fc: fc in-width = n_aux * target_hidden_size
    max_position_embeddings: int = 4096
    rope_parameters: dict = field(default_factory=lambda: {"rope_type": "default", "rope_theta": 10000.0})
    hidden_act: str = "silu"
    attention_bias: bool = False
    mlp_bias: bool = False
    fc_bias: bool = False
    layer_type: str = "llama"  # "llama" or "qwen3" (q_norm/k_norm)
    norm_before_residual: bool = False
    fc_norm: bool = False
    norm_before_fc: bool = False
    norm_output: bool = False
    embed_norm: bool = True  # modelopt use_input_layernorm_in_first_layer=False turns the embedding norm off

    def to_dict(self) -> dict:
        return asdict(self)


@dataclass
class Provenance:
    """What eaglewire records in every checkpoint it writes, so a drafter can be checked with no target."""

    taps: str | None = None  # training wiring, e.g. "h0,h3,h31"
    target: dict | None = None  # TargetInfo.identity()
    draft_vocab: dict | None = None
    training: dict | None = None  # metrics (per-step accuracy, loss, steps, ...)
    written_by: str | None = None
    taps_basis: str | None = None  # where the taps came from when the writer did not train the drafter
    taps_known: bool | None = (
        None  # whether that basis was a known fact (None: written by the trainer itself)
    )
    taps_assumptions: list[str] | None = None  # what knowing them assumed (carried to the copy's verdicts)

    @classmethod
    def from_config(cls, config: dict) -> Provenance | None:
        block = config.get(PROVENANCE_KEY)
        if not isinstance(block, dict) or not isinstance(block.get("provenance"), dict):
            return None
        p = block["provenance"]
        keys = ("taps", "target", "draft_vocab", "training", "written_by", "taps_basis", "taps_known",
                "taps_assumptions")  # fmt: skip
        known = {k: p.get(k) for k in keys}
        return cls(**known)

    def to_config(self) -> dict:
        return {"provenance": {k: v for k, v in asdict(self).items() if v is not None}}


@dataclass
class DrafterCheckpoint:
    format: str  # "eagle" | "speculators" | "modelopt"
    arch: DrafterArch | None  # None when the layout is known but not runnable here (e.g. an MLA drafter)
    tensors: dict[str, torch.Tensor]
    config: dict  # config.json as the engines read it
    configs: dict[str, dict] = field(default_factory=dict)  # every *config*.json of the folder, by file name
    path: Path | None = None
    weight_files: list[str] = field(default_factory=list)
    provenance: Provenance | None = None
    notes: list[str] = field(default_factory=list)
    disk_names: dict[str, str] = field(
        default_factory=dict
    )  # canonical tensor name -> name in the files read
    # num_hidden_layers as config.json declares it where the weights hold fewer layers (`arch.num_layers` is then
    # the layers held): what an engine builds from the config (SpecForge#129, a config copied from the target)
    config_layers: int | None = None

    def copy(self) -> DrafterCheckpoint:
        return DrafterCheckpoint(
            format=self.format,
            arch=copy.deepcopy(self.arch),
            tensors=dict(self.tensors),
            config=copy.deepcopy(self.config),
            configs=copy.deepcopy(self.configs),
            path=self.path,
            weight_files=list(self.weight_files),
            provenance=copy.deepcopy(self.provenance),
            notes=list(self.notes),
            disk_names=dict(self.disk_names),
            config_layers=self.config_layers,
        )

    @property
    def has_weights(self) -> bool:
        return bool(self.tensors)

    @property
    def fc_in_width(self) -> int | None:
        w = self.tensors.get("fc.weight")
        return int(w.shape[1]) if w is not None else None

    def where(self, name: str = "config.json") -> str:
        return str(self.path / name) if self.path else name


# ---- config value readers that name the key on failure ---------------------------------------------------


def cfg_int(cfg: dict, key: str, where: str, default: int | None = None, positive: bool = True) -> int:
    value = cfg.get(key, default)
    if value is None:
        raise InputError(f"{where}: missing key {key!r}")
    if isinstance(value, bool) or not isinstance(value, int) or (positive and value <= 0):
        raise InputError(f"{where}: key {key!r} must be a positive integer, found {value!r}")
    return value


def cfg_float(cfg: dict, key: str, where: str, default: float) -> float:
    value = cfg.get(key, default)
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, float))
        or not math.isfinite(value)
        or value <= 0
    ):
        raise InputError(f"{where}: key {key!r} must be a positive number, found {value!r}")
    return float(value)


def cfg_bool(cfg: dict, key: str, where: str, default: bool = False) -> bool:
    value = cfg.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise InputError(f"{where}: key {key!r} must be true or false, found {value!r}")
    return value


def rope_parameters(cfg: dict, where: str) -> dict:
    """transformers 5 `rope_parameters`, or the 4.x `rope_theta` + `rope_scaling` pair."""
    rp = cfg.get("rope_parameters")
    if isinstance(rp, dict) and "rope_theta" in rp:
        out = dict(rp)
    else:
        scaling = cfg.get("rope_scaling") or {}
        if not isinstance(scaling, dict):
            raise InputError(f"{where}: rope_scaling must be an object, found {scaling!r}")
        out = dict(scaling)
        if "type" in out and "rope_type" not in out:
            out["rope_type"] = out.pop("type")
        out["rope_theta"] = cfg.get("rope_theta", 10000.0)
    out.setdefault("rope_type", "default")
    theta = out.get("rope_theta")
    if isinstance(theta, bool) or not isinstance(theta, (int, float)) or theta <= 0:
        raise InputError(f"{where}: rope_theta must be a positive number, found {theta!r}")
    if not isinstance(out["rope_type"], str):  # a name transformers does not know fails in drafter.Rotary
        raise InputError(f"{where}: rope_type must be a string, found {out['rope_type']!r}")
    return out


def layer_arch(cfg: dict, where: str) -> dict:
    """The decoder-layer fields shared by every format (from a LlamaConfig/Qwen3Config-like dict)."""
    hidden = cfg_int(cfg, "hidden_size", where)
    heads = cfg_int(cfg, "num_attention_heads", where)
    head_dim = cfg.get("head_dim") or hidden // heads
    if not isinstance(head_dim, int) or head_dim <= 0:
        raise InputError(f"{where}: key 'head_dim' must be a positive integer, found {head_dim!r}")
    model_type = cfg.get("model_type", "llama")
    if model_type not in ("llama", "qwen3", "qwen2", "mistral"):
        raise InputError(
            f"{where}: drafter layer model_type {model_type!r} is not supported (llama or qwen3)"
        )
    act = cfg.get("hidden_act", "silu")
    if act not in ("silu", "gelu", "gelu_pytorch_tanh", "relu"):
        raise InputError(f"{where}: key 'hidden_act' {act!r} is not supported")
    return dict(
        hidden_size=hidden,
        intermediate_size=cfg_int(cfg, "intermediate_size", where),
        num_layers=cfg_int(cfg, "num_hidden_layers", where, default=1),
        num_heads=heads,
        num_kv_heads=cfg_int(cfg, "num_key_value_heads", where, default=heads),
        head_dim=head_dim,
        rms_norm_eps=cfg_float(cfg, "rms_norm_eps", where, 1e-6),
        max_position_embeddings=cfg_int(cfg, "max_position_embeddings", where, default=4096),
        rope_parameters=rope_parameters(cfg, where),
        hidden_act=act,
        attention_bias=cfg_bool(cfg, "attention_bias", where),
        mlp_bias=cfg_bool(cfg, "mlp_bias", where),
        layer_type="qwen3" if model_type == "qwen3" else "llama",
    )


def layer_config_dict(arch: DrafterArch) -> dict:
    """The LlamaConfig/Qwen3Config-style fields of a drafter, for writing configs."""
    rp = dict(arch.rope_parameters)
    return {
        "model_type": "qwen3" if arch.layer_type == "qwen3" else "llama",
        "hidden_size": arch.hidden_size,
        "intermediate_size": arch.intermediate_size,
        "num_hidden_layers": arch.num_layers,
        "num_attention_heads": arch.num_heads,
        "num_key_value_heads": arch.num_kv_heads,
        "head_dim": arch.head_dim,
        "rms_norm_eps": arch.rms_norm_eps,
        "max_position_embeddings": arch.max_position_embeddings,
        "hidden_act": arch.hidden_act,
        "attention_bias": arch.attention_bias,
        "mlp_bias": arch.mlp_bias,
        "rope_theta": rp.get("rope_theta"),
        "rope_scaling": None
        if rp.get("rope_type", "default") == "default"
        else {k: v for k, v in rp.items() if k != "rope_theta"},
        "vocab_size": arch.vocab_size,
        "tie_word_embeddings": False,
    }


# ---- tensor checks shared by every format ------------------------------------------------------------------


def expected_shapes(arch: DrafterArch) -> dict[str, tuple[int, ...]]:
    """The exact shape of every tensor a runnable drafter needs (optional ones checked when present)."""
    h, hd = arch.hidden_size, arch.head_dim
    q, kv = arch.num_heads * hd, arch.num_kv_heads * hd
    shapes: dict[str, tuple[int, ...]] = {
        "fc.weight": (h, arch.n_aux * arch.target_hidden_size),
        "norm.weight": (h,),
    }
    for i in range(arch.num_layers):
        p = f"layers.{i}."
        width = 2 * h if i == 0 else h
        shapes.update(
            {
                p + "self_attn.q_proj.weight": (q, width),
                p + "self_attn.k_proj.weight": (kv, width),
                p + "self_attn.v_proj.weight": (kv, width),
                p + "self_attn.o_proj.weight": (h, q),
                p + "mlp.gate_proj.weight": (arch.intermediate_size, h),
                p + "mlp.up_proj.weight": (arch.intermediate_size, h),
                p + "mlp.down_proj.weight": (h, arch.intermediate_size),
                p + "post_attention_layernorm.weight": (h,),
            }
        )
        if i == 0:
            shapes[p + "hidden_norm.weight"] = (h,)
            if arch.embed_norm:
                shapes[p + "input_layernorm.weight"] = (h,)
        else:
            shapes[p + "input_layernorm.weight"] = (h,)
    return shapes


def optional_shapes(arch: DrafterArch) -> dict[str, tuple[int, ...]]:
    h, hd = arch.hidden_size, arch.head_dim
    q, kv = arch.num_heads * hd, arch.num_kv_heads * hd
    shapes: dict[str, tuple[int, ...]] = {
        "embed_tokens.weight": (arch.vocab_size, h),
        # optional: a release may score the draft with the target's head (rules.draft_weights HEAD_ROWS)
        "lm_head.weight": (arch.draft_vocab_size, h),
        "d2t": (arch.draft_vocab_size,),
        "t2d": (arch.vocab_size,),
        "fc.bias": (h,),
        "input_norm.weight": (arch.n_aux * arch.target_hidden_size,),
    }
    for j in range(arch.n_aux):
        shapes[f"fc_norm.{j}.weight"] = (arch.target_hidden_size,)
    for i in range(arch.num_layers):
        p = f"layers.{i}.self_attn."
        shapes.update({p + "q_proj.bias": (q,), p + "k_proj.bias": (kv,), p + "v_proj.bias": (kv,)})
        shapes.update({p + "q_norm.weight": (hd,), p + "k_norm.weight": (hd,)})
    return shapes


def check_tensors(ckpt: DrafterCheckpoint) -> None:
    """Shapes, presence and finiteness of every tensor; raise InputError naming the first bad one."""
    arch = ckpt.arch
    if arch is None or not ckpt.tensors:
        return
    where = ckpt.where(ckpt.weight_files[0] if ckpt.weight_files else "weights")
    fc = ckpt.tensors.get("fc.weight")
    if fc is not None and fc.dim() == 2 and fc.shape[1] != arch.n_aux * arch.target_hidden_size:
        raise InputError(
            f"{where}: fc.weight input width {fc.shape[1]} != n_aux x target hidden = {arch.n_aux} x "
            f"{arch.target_hidden_size}; the config's id list or target_hidden_size does not match the weights"
        )
    need = expected_shapes(arch)
    opt = optional_shapes(arch)
    for name, shape in need.items():
        t = ckpt.tensors.get(name)
        if t is None:
            raise InputError(f"{where}: missing tensor {ckpt_name(ckpt, name)!r}")
        if tuple(t.shape) != shape:
            raise InputError(
                f"{where}: tensor {ckpt_name(ckpt, name)!r} has shape {list(t.shape)}, expected {list(shape)}"
            )
    for name, t in ckpt.tensors.items():
        if name in opt and tuple(t.shape) != opt[name]:
            raise InputError(
                f"{where}: tensor {ckpt_name(ckpt, name)!r} has shape {list(t.shape)}, expected {list(opt[name])}"
            )
        if isinstance(t, torch.Tensor) and t.is_floating_point() and not bool(torch.isfinite(t).all()):
            raise InputError(f"{where}: tensor {ckpt_name(ckpt, name)!r} holds NaN or Inf values")
    if arch.fc_norm and "fc_norm.0.weight" not in ckpt.tensors:
        raise InputError(f"{where}: config sets fc_norm but the weights have no fc_norm.0.weight")
    if arch.norm_before_fc and "input_norm.weight" not in ckpt.tensors:
        raise InputError(f"{where}: config sets norm_before_fc but the weights have no input_norm.weight")


def ckpt_name(ckpt: DrafterCheckpoint, canonical: str) -> str:
    """The name a tensor has in the checkpoint's own files (for error messages)."""
    return ckpt.disk_names.get(canonical, canonical)
