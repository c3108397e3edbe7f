"""Which engine model file runs a target family: the convention rows are per model file, because each engine's
model file decides where the aux hidden states are captured (docs/conventions.md (a)). Each engine
keeps its own map beside its rows (`engines/<engine>/taps.py` `MODEL_FILES`); this module gathers them.

A family an engine table does not list is mapped to the engine's generic rule (the llama-style capture most model
files copy) and marked unknown, so a verdict built on it is `unverified`.
"""

from __future__ import annotations

from eaglewire.engines.sglang import taps as sglang
from eaglewire.engines.trtllm import taps as trtllm
from eaglewire.engines.vllm import taps as vllm

# framework -> target family (targets.FAMILIES) -> engine model file; each engine keeps its own map beside its
# rows (engines/<engine>/taps.py `MODEL_FILES`)
MODEL_FILES: dict[str, dict[str, str]] = {
    "sglang": sglang.MODEL_FILES,
    "vllm": vllm.MODEL_FILES,
    "trtllm": trtllm.MODEL_FILES,
}
MODEL_FILES["specforge"] = MODEL_FILES["sglang"]  # SpecForge captures through SGLang's model files
GENERIC = {"sglang": "llama", "vllm": "llama", "specforge": "llama", "trtllm": "llama"}
# An architecture the table does not list but the engine's registry serves through capture code whose taps are
# known (registries.py): (framework, capture) -> the model file whose rows are exactly that code (vllm.py: the
# "mixin" group, the EagleModelMixin from 0.17.0).
REGISTRY_CAPTURE = {("vllm", "mixin"): "eagle_model_mixin"}
# Short names older callers use for a model class.
ALIASES = {"deepseek": "deepseek_v3"}


def model_file(framework: str, family: str) -> tuple[str, bool]:
    """(the engine model file for `family`, whether the engine's table lists the family). Frameworks that
    capture through transformers hooks (speculators' data, modelopt, EAGLE, eaglewire) need no model file."""
    table = MODEL_FILES.get(framework)
    if table is None:
        return "*", True
    family = ALIASES.get(family, family)
    if family in table:
        return table[family], True
    if family in table.values():
        return family, True
    return GENERIC[framework], False
