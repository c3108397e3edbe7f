"""The draft's context as an engine release serves it: how long a sequence the release lets the drafter draft for.

vLLM builds the draft model with its own max_model_len, derived from the drafter's config.json (its
max_position_embeddings, as for any model) and capped by the target's. Its V1 model runner runs the drafter only
while the sequences fit that length; past it, it verifies placeholder drafts (zeros) that are counted and rejected:
acceptance collapses to 1.0 for the rest of the request, for every request batched beside it, while every verify
still carries K tokens. A drafter exported with a short max_position_embeddings (yuhuili's EAGLE3-LLaMA3.1-Instruct-8B
says 2048, beside a 131,072-token target) is served that way however well it drafts. `test --engine` walks the
gate (metrics.ContextGate); `check` names the length and the config value that lifts it. Each engine's rows live in
its home (engines/<engine>/draft.py `CONTEXT_ROWS`), matched in engines/draft_weights.py.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from packaging.version import Version

from eaglewire.metrics import ContextGate
from eaglewire.rules.row import Row, Spec, match

# the keys vLLM derives a model's max length from (the smallest present wins): model_arch_config_convertor.py:396-421
# @0.32.0, config.py _get_and_verify_max_len before
LENGTH_KEYS = ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length", "model_max_length",
               "max_target_positions", "max_sequence_length", "max_seq_length", "seq_len")  # fmt: skip
# RoPE types whose max_position_embeddings is already the scaled length (the `factor` is not applied again):
# config/model.py:2595-2602 @0.32.0
SCALED_ROPE = ("su", "longrope", "llama3", "yarn", "deepseek_yarn", "deepseek_llama_scaling")


# What a release verifies once a sequence outgrows the draft's context: K zero tokens (counted as drafts and
# rejected: accept length 1.0), nothing (plain decoding: the counters stop, and so does the speed-up), the last
# drafts again (stale: counted, guessing positions already passed), drafts computed outside the draft's rotary table
# (garbage: counted, walked as matching nothing), or the drafter's own drafts (its rotary covers the served length:
# nothing collapses).
PAST = ("zeros", "nothing", "stale", "garbage", "drafts")
# the placeholder token the walk verifies for each (None: no draft; -1: a token that matches nothing)
PLACEHOLDER: dict[str, int | None] = {"zeros": 0, "nothing": None, "stale": -1, "garbage": -1}
# what a user reads for each
PAST_WORDS = {"zeros": "K zero tokens verified in the drafter's place", "nothing": "no drafts (plain decoding)",
              "stale": "the last drafts verified again", "garbage": "drafts computed outside the drafter's rotary table",
              "drafts": "the drafter drafts on"}  # fmt: skip


@dataclass(frozen=True)
class ContextRow(Row):
    """What a release does once a sequence outgrows the draft's context."""

    name: str
    engine: str
    versions: str
    past: str  # one of PAST
    # the batch's longest sequence decides for every request batched with it (vLLM's V1 model runner); else each
    # request on its own
    batch: bool
    why: str  # the mechanism, in the engine's terms
    source: str = ""
    observed: str | None = None
    platform: str | None = None
    runner: str | None = None

    def __post_init__(self) -> None:
        assert self.past in PAST, f"{self.name}: past {self.past!r} is not one of {PAST}"

    @property
    def collapses(self) -> bool:
        return self.past != "drafts"


def model_length(config: dict) -> int | None:
    """A model's max length as vLLM derives it from its config.json: the smallest of the length keys, times the
    RoPE scaling factor where the scaling does not already say the scaled length; None where no key is there."""
    found = [v for k in LENGTH_KEYS if isinstance(v := config.get(k), int) and not isinstance(v, bool)]
    if not found:
        return None
    rope = config.get("rope_scaling") or config.get("rope_parameters") or {}
    factor = 1.0
    if isinstance(rope, dict):
        kind = rope.get("rope_type") or rope.get("type") or "default"
        if kind not in SCALED_ROPE and isinstance(rope.get("factor"), int | float):
            factor = float(rope["factor"])
    return int(min(found) * factor)


def drafter_layer_config(config: dict) -> dict:
    """The config.json keys a drafter's layer is built from (speculators nests them in transformer_layer_config)."""
    nested = config.get("transformer_layer_config")
    return nested if isinstance(nested, dict) and config.get("speculators_model_type") else config


@dataclass(frozen=True)
class ContextChoice:
    """How long a sequence a release drafts for, for one drafter beside one served length, and the row that says
    what it does past that (None: no row covers the release)."""

    draft_length: int | None  # the draft model's length as the release derives it (None: the config has none)
    served_length: int | None  # the target's max_model_len it is served with
    row: ContextRow | None

    @property
    def short(self) -> bool:
        """The drafter's context ends before the served length: sequences can outgrow it."""
        return (
            self.draft_length is not None
            and self.served_length is not None
            and self.draft_length < self.served_length
        )

    @property
    def collapses(self) -> bool:
        return self.short and self.row is not None and self.row.collapses

    def gate(self) -> ContextGate | None:
        """What the walk applies (metrics.ContextGate), where the release stops drafting as the drafter wrote it."""
        if not self.collapses or self.row is None or self.draft_length is None:
            return None
        return ContextGate(self.draft_length, PLACEHOLDER[self.row.past], self.row.batch)


def choose(
    rows: Iterable[ContextRow],
    engine: str,
    version: str,
    runner: str | None,
    drafter_config: dict,
    served_length: int | None,
) -> ContextChoice:
    """What `engine` at `version` (with `runner`, None: any) does with a drafter (its config.json) served at
    `served_length` tokens: the draft's length, min of the drafter's own (as vLLM derives it) and the served one,
    and the first of `rows` that covers the release."""
    own = model_length(drafter_layer_config(drafter_config))
    length = own if served_length is None or own is None else min(own, served_length)
    found = match(rows, Spec(engine, Version(version), runner=runner))
    return ContextChoice(length, served_length, found[0] if found else None)
