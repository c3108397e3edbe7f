"""What an engine release feeds the draft in place of its own weights: the token embedding it computes with.

An EAGLE-3 checkpoint may carry its own `embed_tokens`; a release may replace it with the target's when it builds
the draft (SGLang's EAGLE worker always does, where the widths match; vLLM 0.9.0-0.11.0's proposer did; later vLLM
keeps a drafter's own one that differs). Where the drafter's own embedding differs from the target's (trained
unfrozen, or from another checkpoint of the target) the replacement changes every draft, and the acceptance the
engine measures is the walk's under the *target's* embedding. `test --engine` and `doctor` walk what the release
computes (jobs.pair.load_pair); each engine's rows live in its home (engines/<engine>/draft.py `EMBEDDING_ROWS`),
gathered and matched in engines/draft_weights.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from eaglewire.rules.row import Row

SOURCES = ("target", "own")  # the embedding the draft computes with: the target's, or the checkpoint's own


@dataclass(frozen=True)
class DraftEmbedding(Row):
    name: str
    engine: str
    versions: str
    embedding: str  # one of SOURCES, where the checkpoint carries its own embed_tokens
    why: str  # the mechanism, in the engine's terms
    source: str = ""
    observed: str | None = None
    platform: str | None = None
    # the release keeps the drafter's own embedding when its width differs from the target's hidden size (SGLang
    # set_embed returns early when target_hidden_size != hidden_size; vLLM compares the two widths)
    own_when_widths_differ: bool = True

    def __post_init__(self) -> None:
        assert self.embedding in SOURCES, f"{self.name}: embedding {self.embedding!r} is not one of {SOURCES}"


@dataclass(frozen=True)
class EmbeddingChoice:
    """The embedding a release's draft computes with, for one drafter, and the row that says so."""

    embedding: str  # one of SOURCES
    # None: no row covers the release (the checkpoint's own is assumed, as read nowhere)
    row: DraftEmbedding | None

    @property
    def replaced(self) -> bool:
        return self.embedding == "target"
