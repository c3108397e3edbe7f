"""The table's rows that a target's own capture, executed, fits: for an architecture the table does not list whose
model-code run captured otherwise than the generic capture, the rows of the same release and runner (every family's)
under which every case of that run is what the row says. SGLang's Glm4MoeLiteForCausalLM (GLM-4.7-Flash) runs
DeepSeek-V2's decoder: its cases are the DeepSeek rows', not the Llama rows' the generic capture assumes.

A case is one id list in one config shape (tests/engines/capture.py `configs`), as the record keeps it: the ids the
release's runner read, the taps its decoder's forward captured, or the engine's error. It fits a row as the
model-code records are judged (tests/engines/model_code.py `agrees`): equal taps; fewer distinct states than the
ids read, nothing captured, or the loop's own error where the row fails.
"""

from __future__ import annotations

from dataclasses import replace

from packaging.version import Version

from eaglewire.engines.table import ROWS
from eaglewire.rules.row import Spec, match
from eaglewire.rules.taps import Convention, Rule, resolve

# what the probe writes where it could not build the model (capture_probe.PROBE_FAILED): no claim
PROBE_FAILED = "probe could not build the model"
TOP, NESTED = "eagle_aux_hidden_state_layer_ids", "eagle_config.eagle_aux_hidden_state_layer_ids"


def case_config(engine: str, ids: list[int] | None, key: str) -> dict:
    """The drafter config a case was run with (tests/engines/capture.py `configs`)."""
    if ids is None or key == "no ids":
        return {"architectures": ["LlamaForCausalLMEagle3"]}
    if key == NESTED:
        return {"architectures": ["LlamaForCausalLMEagle3"], "eagle_config": {TOP: ids}}
    arch = "Eagle3Speculator" if engine == "vllm" else "LlamaForCausalLMEagle3"
    return {"architectures": [arch], TOP: ids}


def case_fits(row: Convention, engine: str, case: dict) -> bool:
    """Whether the row says what the case's forward did (a case of a model-code record, keyed by its columns)."""
    res = resolve(replace(row, ignores_ids=None), case_config(engine, case["ids"], case["config_key"]),
                  case["num_layers"])  # fmt: skip
    taps = list(res.taps.indices) if res.taps is not None else None
    got = case["forward_taps"]
    if got is not None:
        read = case["ids_read"]
        if not got or (read and len(set(got)) < len(read)):  # the drafter's fc gets fewer states than ids
            return taps is None
        return taps == sorted(set(got)) and res.failure is None
    return bool(case["error"]) and not case["error"].startswith(PROBE_FAILED) and taps is None


def fitting_rows(engine: str, release: str, runner: str, cases: list[dict]) -> tuple[Convention, ...]:
    """The rows at the release (for the runner; "": the engine's one) that every case fits, of every family, that
    read ids (a refusal fits no case that captured)."""
    # a generic run answers for the GPU server's class (not a CPU row of a class of the CPU's own)
    rows = [r for r in ROWS if r.framework == engine and (r.runner or "") == runner
            and r.rule is not Rule.UNSUPPORTED and r.holds_on("cuda")]  # fmt: skip
    return tuple(
        r for r in match(rows, Spec(engine, Version(release))) if all(case_fits(r, engine, c) for c in cases)
    )
