"""Drafter checkpoints of real published shapes, written as sparse safetensors files: the header is real, the
big tensors are holes in the file (zeros, no disk, no memory), the small ones (vocab maps) hold real values."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import torch

SIZES = {"F32": 4, "BF16": 2, "F16": 2, "I64": 8, "BOOL": 1}
TORCH = {"F32": torch.float32, "BF16": torch.bfloat16, "I64": torch.int64, "BOOL": torch.bool}


def write_sparse(
    path: Path, shapes: dict[str, tuple[list[int], str]], values: dict[str, torch.Tensor]
) -> Path:
    """`shapes`: name -> (shape, safetensors dtype); `values`: the tensors whose bytes are written."""
    header, offset = {}, 0
    for name, (shape, dtype) in shapes.items():
        n = SIZES[dtype]
        for d in shape:
            n *= d
        header[name] = {"dtype": dtype, "shape": list(shape), "data_offsets": [offset, offset + n]}
        offset += n
    blob = json.dumps(header).encode()
    blob += b" " * (-len(blob) % 8)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as f:
        f.write(struct.pack("<Q", len(blob)))
        f.write(blob)
        base = 8 + len(blob)
        for name, t in values.items():
            f.seek(base + header[name]["data_offsets"][0])
            t = t.to(TORCH[shapes[name][1]]).contiguous()
            f.write(
                t.view(torch.int16).numpy().tobytes() if t.dtype == torch.bfloat16 else t.numpy().tobytes()
            )
        f.truncate(base + offset)
    return path


def drafter(
    directory: Path,
    config: dict,
    *,
    target_hidden: int,
    n_aux: int = 3,
    embed: bool = False,
    lm_head: bool = True,
    d2t: torch.Tensor | None = None,
    t2d: torch.Tensor | None = None,
    prefix: str = "midlayer.",
    fc: bool = True,
) -> Path:
    """An EAGLE/SGLang-format drafter folder: `config` as config.json, weights of the shapes it declares (`fc`
    False: no fc, an EAGLE-1-style head)."""
    h = config["hidden_size"]
    heads = config["num_attention_heads"]
    kv = config.get("num_key_value_heads", heads)
    hd = config.get("head_dim") or h // heads
    inter = config["intermediate_size"]
    vocab, dv = config["vocab_size"], config.get("draft_vocab_size") or config["vocab_size"]

    def layer(p: str, width: int) -> dict:
        """One decoder layer's tensors; the first layer takes [embedding, hidden], 2 x h wide."""
        out = {f"{p}self_attn.{n}_proj.weight": ([rows, width], "BF16")
               for n, rows in (("q", heads * hd), ("k", kv * hd), ("v", kv * hd))}  # fmt: skip
        out |= {f"{p}self_attn.o_proj.weight": ([h, heads * hd], "BF16"),
                f"{p}mlp.gate_proj.weight": ([inter, h], "BF16"), f"{p}mlp.up_proj.weight": ([inter, h], "BF16"),
                f"{p}mlp.down_proj.weight": ([h, inter], "BF16")}  # fmt: skip
        return out | {
            f"{p}{n}.weight": ([h], "BF16") for n in ("input_layernorm", "post_attention_layernorm")
        }

    shapes = layer(prefix, 2 * h) | {
        f"{prefix}hidden_norm.weight": ([h], "BF16"),
        "fc.weight": ([h, n_aux * target_hidden], "BF16"),
        "norm.weight": ([h], "BF16"),
    }
    for i in range(1, config.get("num_hidden_layers", 1)):  # later layers take the hidden state alone
        shapes |= layer(f"layers.{i}.", h)
    if not fc:
        del shapes["fc.weight"]
    values = {}
    if config.get("fc_norm"):
        for i in range(n_aux):
            shapes[f"fc_norm.{i}.weight"] = ([target_hidden], "BF16")
    nested = config.get("eagle_config") or {}
    if config.get("norm_before_fc") or nested.get("norm_before_fc"):
        shapes["input_norm.weight"] = ([n_aux * target_hidden], "BF16")
    if lm_head:
        shapes["lm_head.weight"] = ([dv, h], "BF16")
    if embed:
        shapes["embed_tokens.weight"] = ([vocab, h], "BF16")
    if dv < vocab:
        d2t = d2t if d2t is not None else torch.arange(dv) * 3 - torch.arange(dv)  # every third target id
        if t2d is None:
            t2d = torch.zeros(vocab, dtype=torch.bool)
            t2d[torch.arange(dv) + d2t] = True
        shapes["d2t"], shapes["t2d"] = ([dv], "I64"), ([vocab], "BOOL")
        values["d2t"], values["t2d"] = d2t, t2d
    for name in shapes:
        if name.endswith("norm.weight") or name.startswith("fc_norm."):
            values[name] = torch.ones(shapes[name][0])
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    write_sparse(directory / "model.safetensors", shapes, values)
    return directory


def target(directory: Path, config: dict) -> Path:
    directory.mkdir(parents=True, exist_ok=True)
    (directory / "config.json").write_text(json.dumps(config))
    return directory
