"""Every engine's draft-embedding rows (rules/draft_weights.py), gathered from their homes, and the matcher: what a
release feeds a drafter as its token embedding."""

from __future__ import annotations

from packaging.version import Version

from eaglewire.engines.sglang.draft import EMBEDDING_ROWS as SG
from eaglewire.engines.vllm.draft import EMBEDDING_ROWS as VL
from eaglewire.rules.draft_weights import DraftEmbedding, EmbeddingChoice
from eaglewire.rules.row import Spec, match

ROWS: tuple[DraftEmbedding, ...] = SG + VL


def draft_embedding(
    engine: str, version: str, drafter_config: dict, target_hidden: int | None
) -> EmbeddingChoice:
    """What `engine` at `version` feeds a drafter (its config.json) as its token embedding, beside a target of
    hidden size `target_hidden` (None: unknown, the widths are taken to match)."""
    found = match(ROWS, Spec(engine, Version(version)))
    if not found:
        return EmbeddingChoice("own", None)
    row = found[0]
    width = drafter_config.get("hidden_size")
    declared = drafter_config.get("target_hidden_size")
    differs = (declared is not None and declared != width) or (
        target_hidden is not None and width is not None and target_hidden != width
    )
    if row.embedding == "target" and row.own_when_widths_differ and differs:
        return EmbeddingChoice("own", row)
    return EmbeddingChoice(row.embedding, row)
