"""What every engine's server publishes about itself: the names of its speculative counters (`ROWS`, one
`rules.metrics.CounterRow` per engine and release range) and the endpoints that tell its version, model and
settings (`ENDPOINTS`, by engine). The rows are in each engine's folder (`<engine>/metrics.py`)."""

from __future__ import annotations

from eaglewire.engines.sglang import metrics as sglang
from eaglewire.engines.vllm import metrics as vllm
from eaglewire.rules.metrics import CounterRow, EndpointRow
from eaglewire.rules.row import Spec, match

ROWS: tuple[CounterRow, ...] = (*vllm.ROWS, *sglang.ROWS)
ENDPOINTS: dict[str, EndpointRow] = {e.engine: e for e in (vllm.ENDPOINTS, sglang.ENDPOINTS)}


def row_for(engine: str) -> CounterRow:
    """The counter names of `engine` ("vllm" or "sglang")."""
    return match(ROWS, Spec(engine))[0]
