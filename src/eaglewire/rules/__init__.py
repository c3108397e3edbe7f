"""The row type every engine fact shares, and the machinery of each kind of fact; no engine's data.

Each engine's folder (`eaglewire.engines.<engine>`) holds its rows and generated data; this package holds what a row
is (`row.py`: version range, platform/runner condition, source, observed-by, and the one matcher), and how each kind
of row is applied: tap rules (`taps.py`), launch-flag rules (`flags.py`, `launch.py`, `gpus.py`, `context.py`),
the scanned argument tables (`scanned.py`), what a running server publishes (`metrics.py`: counter names,
endpoints)."""

from __future__ import annotations

from pathlib import Path

ENGINES_DIR = Path(__file__).resolve().parents[1] / "engines"


def engine_data(engine: str, *parts: str) -> Path:
    """A file of an engine's generated data: `engines/<engine>/data/...` (read by path: no import of the engine)."""
    return ENGINES_DIR.joinpath(engine, "data", *parts)
