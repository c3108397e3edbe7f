"""What a launch command points at, read from local disk when it can be: the target's architecture (a wrapper
and its text model) and whether the drafter is an EAGLE-3 head. Hub ids are not resolved here."""

from __future__ import annotations

from pathlib import Path

from eaglewire.jsonio import read_json_object
from eaglewire.rules.launch import Edit, FlagFix

# Wrapper architectures whose text model is another architecture (what SGLang would NOT key on).
WRAPPER_TEXT_ARCH = {
    "KimiK25ForConditionalGeneration": "DeepseekV3ForCausalLM",  # Kimi-K2.5: text_config is DeepSeek-V3
}
MODEL_TYPE_ARCH = {
    "deepseek_v3": "DeepseekV3ForCausalLM",
    "deepseek_v2": "DeepseekV2ForCausalLM",
    "kimi_k2": "DeepseekV3ForCausalLM",
    "llama": "LlamaForCausalLM",
    "qwen2": "Qwen2ForCausalLM",
    "qwen3": "Qwen3ForCausalLM",
    "qwen3_moe": "Qwen3MoeForCausalLM",
}


def local_config(path: str | None) -> tuple[dict | None, str | None]:
    """config.json of a local model directory, or (None, None) when `path` is not one (e.g. a hub id)."""
    if not path:
        return None, None
    p = Path(path).expanduser()
    if p.is_dir() and (p / "config.json").is_file():
        return read_json_object(p / "config.json", "config"), str(p / "config.json")
    if p.is_file() and p.name.endswith(".json"):
        return read_json_object(p, "config"), str(p)
    return None, None


def target_archs(config: dict) -> tuple[str | None, str | None]:
    archs = config.get("architectures") or [None]
    text = config.get("text_config")
    text_arch = None
    if isinstance(text, dict):
        text_arch = (text.get("architectures") or [None])[0] or MODEL_TYPE_ARCH.get(
            text.get("model_type", "")
        )
    return archs[0], text_arch


def heads_unsplit(config: dict, tp: int) -> tuple[str, str] | None:
    """Why the drafter's attention heads do not split over `tp` ranks, as (what, stage), or None: query heads must
    divide by TP; key-value heads must divide by it or divide it (each rank then holds a replica). The engines
    build an EAGLE head at the target's TP."""
    layer = config.get("transformer_layer_config") if config.get("speculators_model_type") else config
    layer = layer if isinstance(layer, dict) else {}
    heads, kv = layer.get("num_attention_heads"), layer.get("num_key_value_heads")
    if not isinstance(heads, int) or isinstance(heads, bool) or heads <= 0 or tp <= 1:
        return None
    kv = kv if isinstance(kv, int) and not isinstance(kv, bool) and kv > 0 else heads
    if heads % tp:
        return f"the draft's {heads} attention heads do not divide over tensor parallel size {tp}", "heads"
    if kv % tp and tp % kv:
        return (
            f"the draft's {kv} key-value heads neither divide over tensor parallel size {tp} nor divide it",
            "kv",
        )
    return None


def heads_tp_fix(config: dict, tp: int, flag: str, rule: str) -> FlagFix:
    """The largest tensor parallel size below `tp` the drafter's heads split over, as a fix (the target runs at it
    too), or a re-export of the head as the alternative."""
    fits = next((n for n in range(tp - 1, 0, -1) if heads_unsplit(config, n) is None), 1)
    return FlagFix(rule, (Edit(flag, fits),),
                   f"{flag} {fits}, the largest size the draft's heads split over (the target runs at it too)",
                   alternative=f"or keep {flag} {tp} with a head whose heads split over it (a retrained head)",
                   mechanical=False)  # fmt: skip


def drafter_kind(config: dict) -> str | None:
    """EAGLE-3 (`LlamaForCausalLMEagle3` + `eagle_config`, speculators `eagle3`), EAGLE-1, or None (unknown)."""
    archs = [str(a) for a in config.get("architectures") or []]
    spec_type = str(config.get("speculators_model_type") or "").lower()
    if spec_type == "eagle3" or any("eagle3" in a.lower() for a in archs) or "eagle_config" in config:
        return "eagle3"
    if spec_type == "eagle" or any(
        a.lower().startswith("eagle") or a.lower().endswith("eagle") for a in archs
    ):
        return "eagle"
    return None
