"""The speculative-decoding counters each engine publishes, read from its metrics text: the names are each engine's
rows (`eaglewire.engines.metrics`: a fact about another framework, with its source), the reader is here.

vLLM counts every verify step that carried drafts (`num_drafts`), the draft tokens proposed, the tokens accepted
and, per draft position i, the drafts whose position i was accepted: mean accept length = 1 + accepted / drafts
(bonus token included), per-position acceptance = accepted_per_pos[i] / drafts. SGLang's Prometheus counters hold
only the verify calls and the generated tokens of finished requests: its accept length is
generation_tokens / verify_calls (its own convention, the prefill's token included); per position it reports
only per request (`SpecTokensDetails`, see `workload.py`).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from eaglewire.engines.metrics import row_for
from eaglewire.errors import InputError
from eaglewire.server.prometheus import Sample


@dataclass
class SpecCounters:
    """One reading (or the difference of two) of an engine's speculative counters, for one model."""

    engine: str
    drafts: float
    generated: float
    requests: float
    draft_tokens: float | None = None
    accepted: float | None = None
    per_pos: list[float] | None = None  # vLLM: one entry per draft position
    labels: dict[str, str] = field(default_factory=dict)  # the label filter the numbers were summed under

    @property
    def k(self) -> int | None:
        """Draft tokens per verify, where the engine tells it (vLLM: the number of per-position counters)."""
        return len(self.per_pos) if self.per_pos else None

    @property
    def accept_length(self) -> float | None:
        """Mean accept length, bonus token included: vLLM 1 + accepted/drafts; SGLang generated/verify_calls."""
        if not self.drafts:
            return None
        if self.accepted is not None:
            return 1 + self.accepted / self.drafts
        return self.generated / self.drafts

    @property
    def per_position(self) -> list[float] | None:
        if not self.drafts or self.per_pos is None:
            return None
        return [a / self.drafts for a in self.per_pos]

    def __sub__(self, before: SpecCounters) -> SpecCounters:
        def d(a, b):
            return None if a is None or b is None else a - b

        pos = None
        if self.per_pos is not None and before.per_pos is not None:
            pos = [a - b for a, b in zip(self.per_pos, before.per_pos, strict=True)]
        return SpecCounters(
            self.engine,
            self.drafts - before.drafts,
            self.generated - before.generated,
            self.requests - before.requests,
            d(self.draft_tokens, before.draft_tokens),
            d(self.accepted, before.accepted),
            pos,
            dict(self.labels),
        )

    def to_dict(self) -> dict:
        def num(x):
            return None if x is None else round(x) if float(x).is_integer() else x

        return {
            "engine": self.engine,
            "drafts": num(self.drafts),
            "draft_tokens": num(self.draft_tokens),
            "accepted_tokens": num(self.accepted),
            "accepted_per_position": [num(x) for x in self.per_pos] if self.per_pos is not None else None,
            "generated_tokens": num(self.generated),
            "finished_requests": num(self.requests),
            "accept_length": self.accept_length,
            "per_position_acceptance": self.per_position,
            "labels": self.labels,
        }


def models_in(samples: list[Sample], engine: str) -> list[str]:
    """The `model_name` label values the engine's speculative counters carry."""
    row = row_for(engine)
    return sorted({s.label("model_name") or "" for s in samples if s.name == row.drafts})


def read_counters(
    samples: list[Sample], engine: str, model_name: str | None = None, where: str = "/metrics"
) -> SpecCounters | None:
    """The engine's speculative counters summed over engine/rank labels, for `model_name` (None: the only model
    the counters name; several is bad input naming them). None when the engine publishes no speculative counter
    (a server without speculative decoding)."""
    row = row_for(engine)
    names = models_in(samples, engine)
    if not names:
        return None
    if model_name is None:
        if len(names) > 1:
            raise InputError(
                f"{where}: counters for several models ({', '.join(names)}): name one with --model"
            )
        model_name = names[0]
    elif model_name not in names:
        raise InputError(
            f"{where}: no speculative counters for model {model_name!r} (found {', '.join(names)})"
        )

    def mine(s: Sample) -> bool:
        return (s.label("model_name") or "") == model_name

    def total(name: str | None) -> float | None:
        if name is None:
            return None
        found = [s.value for s in samples if s.name == name and mine(s)]
        return sum(found) if found else None

    per_pos = None
    if row.per_pos is not None:
        by_pos: dict[int, float] = {}
        for s in samples:
            if s.name == row.per_pos and mine(s):
                pos = s.label("position")
                if pos is None or not pos.isdigit():
                    raise InputError(f"{where}: {row.per_pos} has a sample without a numeric position label")
                by_pos[int(pos)] = by_pos.get(int(pos), 0.0) + s.value
        if by_pos:
            if sorted(by_pos) != list(range(len(by_pos))):
                raise InputError(f"{where}: {row.per_pos} positions {sorted(by_pos)} are not 0..K-1")
            per_pos = [by_pos[i] for i in range(len(by_pos))]
    engines = sorted({s.label("engine") for s in samples if s.name == row.drafts and mine(s)} - {None})
    labels = {"model_name": model_name} | ({"engine": ",".join(engines)} if engines else {})
    return SpecCounters(
        engine,
        total(row.drafts) or 0.0,
        total(row.generated) or 0.0,
        total(row.requests) or 0.0,
        total(row.draft_tokens),
        total(row.accepted),
        per_pos,
        labels,
    )
