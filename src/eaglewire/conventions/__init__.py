"""The convention table: how each framework, by version and engine model file, turns the ids in a drafter
config into taps, and the inverse (the config value that makes it feed given taps). See `model.py` for the
machinery, `sglang.py`, `vllm.py`, `trainers.py` for the rows (each citing its source), `models.py` for the map
from a target family to each engine's model file, and docs/conventions.md for the facts."""

from eaglewire.conventions.model import (
    DFLASH,
    NESTED,
    NESTED_LAYER_IDS,
    TOP,
    ConfigFix,
    Convention,
    EngineSpec,
    IdSource,
    Resolution,
    RowMatch,
    Rule,
    _default,
    config_value_for,
    current_rows,
    get_path,
    parse_spec,
    resolve,
    resolve_ids,
    rows_for,
)
from eaglewire.conventions.models import model_file
from eaglewire.conventions.runners import PLATFORMS, RUNNERS, RowChoice, select_rows, serving_row
from eaglewire.conventions.table import ENGINES, FRAMEWORKS, NEWEST, ROWS

__all__ = [
    "DFLASH", "ENGINES", "FRAMEWORKS", "NESTED", "NESTED_LAYER_IDS", "NEWEST", "PLATFORMS", "ROWS", "RUNNERS",
    "TOP", "ConfigFix", "Convention", "EngineSpec", "IdSource", "Resolution", "RowChoice", "RowMatch", "Rule",
    "_default", "config_value_for", "current_rows", "get_path", "model_file", "parse_spec", "resolve",
    "resolve_ids", "rows_for", "select_rows", "serving_row",
]  # fmt: skip
