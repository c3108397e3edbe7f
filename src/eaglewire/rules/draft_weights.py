"""What an engine release feeds the draft in place of its own weights: the token embedding it computes with, and
the lm_head it scores drafts with.

An EAGLE-3 checkpoint may carry its own `embed_tokens`; a release may replace it with the target's when it builds
the draft (SGLang's EAGLE worker always does, where the widths match; vLLM 0.9.0-0.11.0's proposer did; later vLLM
keeps a drafter's own one that differs). Where the drafter's own embedding differs from the target's (trained
unfrozen, or from another checkpoint of the target) the replacement changes every draft, and the acceptance the
engine measures is the walk's under the *target's* embedding. `test --engine` and `doctor` walk what the release
computes (jobs.pair.load_pair); each engine's rows live in its home (engines/<engine>/draft.py `EMBEDDING_ROWS`),
gathered and matched in engines/draft_weights.py.

The lm_head likewise (`HEAD_ROWS`): SGLang scores with the target's lm_head where the drafter's config says
`"draft_vocab_size": null` (from 0.5.2; the key absent is an AttributeError at load), and with its embedding where
it says `tie_word_embeddings`; vLLM shares the target's where the checkpoint has no lm_head. A drafter trained with
its own head and served with the target's drafts differently: the walk scores with the head the release feeds.
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


# ---- the lm_head the draft scores with ------------------------------------------------------------------------

# the drafter's shapes a release decides its head from: "tied" (config tie_word_embeddings true), "vocab-absent"
# (no draft_vocab_size key in config.json), "vocab-null" ("draft_vocab_size": null), "head-missing" (no lm_head in
# the checkpoint), "full-vocab" (the draft vocabulary is the whole vocabulary), "d2t" (the checkpoint carries a
# vocabulary map). A row's case is one of these or several joined by "+" (all must hold); a release's rows are
# tried in their table's order and the first whose case holds decides.
CASES = ("tied", "vocab-absent", "vocab-null", "head-missing", "full-vocab", "d2t")
# what the draft scores with: its own lm_head, the target's, its (served) embedding matrix tied as the head, a
# head no checkpoint tensor filled (garbage drafts), or nothing: the release refuses the drafter at load
HEADS = ("own", "target", "embedding", "unloaded", "fails")
REFUSED = ("fails", "unloaded")  # heads no walk can stand for


@dataclass(frozen=True)
class DraftHead(Row):
    name: str
    engine: str
    versions: str
    case: str  # CASES joined by "+": the drafter shape the row is about
    head: str  # one of HEADS
    why: str  # the mechanism, in the engine's terms (for "fails": the engine's error)
    source: str = ""
    # for a refusal or a garbage head: what to change in the drafter, or which release serves it
    fix: str = ""
    observed: str | None = None
    platform: str | None = None

    def __post_init__(self) -> None:
        assert set(self.case.split("+")) <= set(CASES), f"{self.name}: case {self.case!r} is not of {CASES}"
        assert self.head in HEADS, f"{self.name}: head {self.head!r} is not one of {HEADS}"


@dataclass(frozen=True)
class HeadChoice:
    """The lm_head a release's draft scores with, for one drafter, and the row that says so."""

    head: str  # one of HEADS
    row: DraftHead | None  # None: no row covers this drafter at the release (its own lm_head, as loaded)

    @property
    def refused(self) -> bool:
        return self.head in REFUSED

    def refusal(self, release: str) -> str:
        """What `release` (e.g. "sglang 0.5.23") does to a drafter it refuses or scores with garbage, its source
        and the fix."""
        r = self.row
        verb = (
            "refuses this drafter at load"
            if self.head == "fails"
            else "scores this drafter's drafts with garbage"
        )
        fix = f"; fix: {r.fix}" if r.fix else ""
        return f"{release} {verb}: {r.why} ({r.name}: {r.source}){fix}"
