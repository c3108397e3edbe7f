"""SGLang's CUDA graphs before 0.5.11: a launch that feeds the drafter the default taps on every replayed step.

`CudaGraphRunner.__init__` calls `set_eagle3_layers_to_capture()` without ids before it captures, and the model
runner applies the drafter's ids only after the graphs (sglang PR #22836, fixed in 0.5.11): every decode and verify
step replayed from a graph captures the default h{2, L//2, L-3}, prefill the configured taps (or, on per-layer-flag
models, both). The launch starts and serves; acceptance collapses. The taps table holds the fact (the rows'
`ignores_ids`, `ignores_on="cuda"`); this row applies it to a launch whose drafter is local: by the target's row
where the target is local too, else by the ids alone (the largest id fixes the only target whose default they could
be), and its fix is the launch flag that keeps every step eager. Executed: the model-code records from 0.4.5 to 0.5.10.post1 run
each case as a CUDA launch makes both calls (`platform: cuda`).
"""

from __future__ import annotations

import functools

from eaglewire.engines.sglang.args import SGLANG
from eaglewire.engines.sglang.taps import MODEL_FILES, ROWS
from eaglewire.errors import InputError
from eaglewire.rules.flags import FlagRule, State, row
from eaglewire.rules.launch import PROBLEM, Change, Edit, FlagFix
from eaglewire.rules.row import Spec, match
from eaglewire.rules.taps import Convention, resolve

rule = functools.partial(row, SGLANG)
DISABLE = "--disable-cuda-graph"


def _served(st: State) -> tuple[Convention, int] | None:
    """The taps row a CUDA launch of this release serves the local target with, and its layer count: by the
    target's model_type where it names a family the table lists (SGLang's families are its model types; a wrapper's
    text model keeps its layers in text_config)."""
    config = st.target_config or {}
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    model = MODEL_FILES.get(str(config.get("model_type") or ""))
    layers = text.get("num_hidden_layers")
    if model is None or not isinstance(layers, int) or isinstance(layers, bool) or layers < 1:
        return None
    rows = [r for r in match(ROWS, Spec(SGLANG, st.version, "cuda")) if r.covers_model(model)]
    return (rows[0], layers) if rows else None


def _sg_graph_default_taps(rule: FlagRule, st: State) -> None:
    if st.drafter is None or str(st.v.get("algorithm") or "").upper() != "EAGLE3":
        return
    if st.cmd.get("--device") not in (None, "cuda") or st.cmd.has(DISABLE):
        return  # a CPU's graph runner makes no capture call of its own; no graphs, no replay
    found = _served(st)
    if found is None:  # no local target of a listed family: the ids alone can still say it
        _never_the_default(rule, st)
        return
    served, layers = found
    try:
        res = resolve(served, st.drafter, layers)
    except InputError:
        return  # a drafter config whose ids are malformed: `check` names the key
    if (
        not served.ignores_ids
        or res.taps is not None
        or not (res.failure or "").startswith(served.ignores_ids)
    ):
        return
    default = resolve(served, {}, layers).taps
    st.emit(rule, DISABLE, None, f"graphs replay {default}",
            f"the drafter's {res.source_key} differ from the default, and SGLang {st.version} captures its CUDA "
            f"graphs with the default ids before it applies them: {res.failure}. Acceptance collapses on every "
            "replayed decode and verify step, with no error")  # fmt: skip


def _nested_ids(drafter: dict) -> list[int] | None:
    """The drafter's `eagle_config.eagle_aux_hidden_state_layer_ids` where it is a non-empty list of integers (the
    only ids SGLang reads; anything else is `check`'s to name)."""
    nested = drafter.get("eagle_config")
    ids = nested.get("eagle_aux_hidden_state_layer_ids") if isinstance(nested, dict) else None
    if (
        not isinstance(ids, list)
        or not ids
        or not all(isinstance(v, int) and not isinstance(v, bool) for v in ids)
    ):
        return None
    return ids


def _could_be_default(ids: list[int]) -> bool:
    """Whether the ids, after SGLang's +1 (every row before 0.5.11), are the default h2,L//2,L-3 of some target:
    the largest fixes L (c + 4), so only [1, L//2-1, L-4] is (SpecForge's default, e.g. [1, 29, 57] for L=61)."""
    if len(set(ids)) != 3:
        return False
    a, b, c = sorted(set(ids))
    return a == 1 and b == (c + 4) // 2 - 1


def _never_the_default(rule: FlagRule, st: State) -> None:
    ids = _nested_ids(st.drafter or {})
    if ids is None or _could_be_default(ids):
        return
    st.emit(rule, DISABLE, None, "graphs replay the default taps",
            f"the drafter's eagle_config ids {ids} are the default ids of no target (SGLang's default h2,L//2,L-3 "
            f"is ids [1, L//2-1, L-4] after its +1), and SGLang {st.version} captures its CUDA graphs with the "
            "default ids before it applies them (sglang PR #22836): every replayed decode and verify step feeds "
            f"the default's taps, not h{','.join(str(v + 1) for v in sorted(set(ids)))}. Acceptance collapses, "
            "with no error")  # fmt: skip


def _fix_graph_default_taps(st: State, change: Change) -> FlagFix:
    edit = Edit(DISABLE)
    return FlagFix(change.rule, (edit,),
                   f"{edit.render()}: every step eager, so every step captures the drafter's taps (slower decode)",
                   alternative="or serve on SGLang >= 0.5.11, whose graphs capture the configured ids")  # fmt: skip


RULES: list[FlagRule] = [
    rule("sglang.cuda_graph_default_taps", ">=0.4.9,<0.5.11", PROBLEM,
         "sglang 0.4.9 model_executor/cuda_graph_runner.py:297-298, model_runner.py:314 vs 341; 0.5.10 "
         "cuda_graph_runner.py:643-648, model_runner.py:655-669; PR #22836 (0.5.11); executed: "
         "engines/sglang/data/observed/sglang-V-model-code.json, cases with platform cuda",
         "graph-replayed steps feed the default taps", _sg_graph_default_taps, _fix_graph_default_taps),
]  # fmt: skip
