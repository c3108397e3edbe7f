"""TensorRT-LLM: the checkpoint structure it chokes on, one row per behaviour and version range, each citing its
source (docs/engine-facts.md; docs/conventions.md (b), (c)). The rows every engine shares are in
`engines/structure.py`, which also orders all rows; what a row is, in `rules/structure.py`.
"""

from __future__ import annotations

from eaglewire.rules.structure import Context, StructureRule, rule, unhonoured

RULES: list[StructureRule] = []

# ---- norm options -----------------------------------------------------------------------------------------------


@rule(RULES, "norm-before-fc", "trtllm", "", "problem", "TensorRT-LLM modeling_speculative.py Eagle3DecoderLayer (norm_before_fc only under eagle_config)")  # fmt: skip
def norm_before_fc(c: Context) -> str | None:
    return unhonoured(c, "norm_before_fc", c.nested.get("norm_before_fc") is True)
