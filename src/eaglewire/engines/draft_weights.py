"""Every engine's draft-weight rows (rules/draft_weights.py) and draft-context rows (rules/draft_context.py),
gathered from their homes, and the matchers: what a release feeds a drafter as its token embedding, the lm_head it
scores drafts with, and how long a sequence it drafts for."""

from __future__ import annotations

from packaging.version import Version

from eaglewire.engines.sglang.draft import EMBEDDING_ROWS as SG
from eaglewire.engines.sglang.draft import HEAD_ROWS as SG_HEAD
from eaglewire.engines.vllm.draft import CONTEXT_ROWS as VL_CONTEXT
from eaglewire.engines.vllm.draft import EMBEDDING_ROWS as VL
from eaglewire.engines.vllm.draft import HEAD_ROWS as VL_HEAD
from eaglewire.rules.draft_context import ContextChoice, ContextRow, choose
from eaglewire.rules.draft_weights import DraftEmbedding, DraftHead, EmbeddingChoice, HeadChoice
from eaglewire.rules.row import Spec, match

ROWS: tuple[DraftEmbedding, ...] = SG + VL
HEAD_ROWS: tuple[DraftHead, ...] = SG_HEAD + VL_HEAD
CONTEXT_ROWS: tuple[ContextRow, ...] = VL_CONTEXT


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


def head_cases(
    drafter_config: dict, has_head: bool, has_d2t: bool, draft_vocab: int | None, hf_config: bool = True
) -> set[str]:
    """The drafter shapes (rules.draft_weights.CASES) that hold for this checkpoint: its config.json, whether it
    carries an lm_head and a vocabulary map, and its draft vocabulary's size. `hf_config`: config.json is the
    Hugging Face config the engine builds the draft from (the EAGLE/SGLang format); the draft_vocab_size cases are
    about that file only."""
    cases = set()
    if drafter_config.get("tie_word_embeddings") is True:
        cases.add("tied")
    if hf_config and "draft_vocab_size" not in drafter_config:
        cases.add("vocab-absent")
    elif hf_config and drafter_config["draft_vocab_size"] is None:
        cases.add("vocab-null")
    if not has_head:
        cases.add("head-missing")
    if has_d2t:
        cases.add("d2t")
    vocab = drafter_config.get("vocab_size")
    if draft_vocab is not None and draft_vocab == vocab:
        cases.add("full-vocab")
    return cases


def checkpoint_cases(ckpt) -> set[str]:
    """`head_cases` of a drafter checkpoint (a `formats.DrafterCheckpoint`); one read without weights (config
    only) is taken to carry its lm_head."""
    arch = ckpt.arch
    draft_vocab = arch.draft_vocab_size if arch is not None else ckpt.config.get("draft_vocab_size")
    has_head = "lm_head.weight" in ckpt.tensors or not ckpt.has_weights
    return head_cases(ckpt.config, has_head, "d2t" in ckpt.tensors, draft_vocab, ckpt.format == "eagle")


def draft_head(engine: str, version: str, cases: set[str]) -> HeadChoice:
    """What `engine` at `version` scores a drafter's drafts with, given its shapes (`head_cases`): the first row of
    the engine's table, in order, whose case holds; the drafter's own lm_head where none does."""
    for row in match(HEAD_ROWS, Spec(engine, Version(version))):
        if set(row.case.split("+")) <= cases:
            return HeadChoice(row.head, row)
    return HeadChoice("own", None)


def draft_context(
    engine: str, version: str, runner: str | None, drafter_config: dict, served_length: int | None
) -> ContextChoice:
    """`rules.draft_context.choose` over every engine's context rows."""
    return choose(CONTEXT_ROWS, engine, version, runner, drafter_config, served_length)
