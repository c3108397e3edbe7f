"""The row types of what a running engine publishes about itself: the names of its speculative-decoding counters
(`CounterRow`) and the endpoints that tell its version, served model and speculative settings (`EndpointRow`).
Each engine's rows are in `eaglewire.engines.<engine>.metrics`; `eaglewire.engines.metrics` gathers them and
`eaglewire.server` reads a server with them."""

from __future__ import annotations

from dataclasses import dataclass

from eaglewire.rules.row import Row


@dataclass(frozen=True)
class CounterRow(Row):
    """The Prometheus names of one engine's speculative counters, in a release range."""

    engine: str
    versions: str  # the releases the names were read in (PEP 440)
    drafts: str  # verify steps that carried drafts
    draft_tokens: str | None
    accepted: str | None
    per_pos: str | None  # labelled by position="0".."K-1"
    generated: str  # generated tokens
    requests: str  # finished requests (summed over every other label)
    source: str


@dataclass(frozen=True)
class EndpointRow(Row):
    """Where one engine's server tells what it is, beyond the OpenAI `GET /v1/models` every engine answers."""

    engine: str
    versions: str  # the releases the endpoints were read in (PEP 440; "" = every release)
    info: tuple[str, ...]  # the server-info paths, each tried in turn (the engine's version, its settings)
    model: tuple[str, ...]  # the model-info paths, each tried in turn (the path the model was loaded from)
    settings: tuple[str, ...]  # the speculative settings the server info reports, by key
    source: str
