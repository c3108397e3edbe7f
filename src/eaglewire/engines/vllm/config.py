"""vLLM's SpeculativeConfig: what a fix proposes, and the fix builders that edit the `--speculative-config` JSON
(one key at a time). Data and edits only; the rules are in `vllm.py`. The keys each release accepts are read from
its wheel (`scanned.vllm_key_known`)."""

from __future__ import annotations

from typing import Any

from eaglewire.engines.vllm.args import VL_LEGACY, VL_SHORT
from eaglewire.rules.flags import State
from eaglewire.rules.launch import Change, Edit, FlagFix
from eaglewire.rules.scanned import vllm_key_known

VL_INTERNAL = (
    "target_model_config",
    "target_parallel_config",
    "draft_model_config",
    "draft_parallel_config",
)
VLLM_DEFAULT_TOKENS = (
    3  # what a fix proposes when nothing says k: the speculators EAGLE-3 converter's default
)


def speculators_tokens(config: dict | None) -> int | None:
    try:
        value = config["speculators_config"]["proposal_methods"][0]["speculative_tokens"]  # type: ignore[index]
    except (KeyError, IndexError, TypeError):
        return None
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def vl_key_edit(key: str, value: Any = None, remove: bool = False) -> Edit:
    return Edit("--speculative-config", value, key=key, remove=remove)


def vl_fix_method(st: State, change: Change) -> FlagFix:
    edit = vl_key_edit("method", "eagle3")
    return FlagFix(change.rule, (edit,), f"{edit.render()}: the drafter is EAGLE-3")


def vl_fix_tokens(st: State, change: Change) -> FlagFix:
    k = speculators_tokens(st.drafter)
    edit = vl_key_edit("num_speculative_tokens", k or VLLM_DEFAULT_TOKENS)
    why = (
        f"the {k} its speculators config proposes"
        if k
        else f"{VLLM_DEFAULT_TOKENS} (the speculators EAGLE-3 converter's default; tune it)"
    )
    return FlagFix(change.rule, (edit,), f"{edit.render()}: {why}")


def vl_fix_model(st: State, change: Change) -> FlagFix:
    edit = vl_key_edit("model", "<path of the EAGLE-3 drafter>")
    return FlagFix(change.rule, (edit,), "give the drafter as the config's model", mechanical=False)


def vl_fix_draft_tp(st: State, change: Change) -> FlagFix:
    edit = vl_key_edit("draft_tensor_parallel_size", 1)
    return FlagFix(change.rule, (edit,), f"{edit.render()} (or the target's tensor parallel size)")


def vl_fix_remove_keys(st: State, change: Change) -> FlagFix:
    keys = change.given if isinstance(change.given, list) else [change.given]
    edits = tuple(vl_key_edit(k, remove=True) for k in keys)
    return FlagFix(change.rule, edits, f"remove {', '.join(keys)} from --speculative-config")


def vl_fix_tp_key(st: State, change: Change) -> FlagFix:
    value = change.given
    edits = [vl_key_edit("tensor_parallel_size", remove=True)]
    if "draft_tensor_parallel_size" not in st.spec_intended and value in (1, st.v["target_tp"]):
        edits.append(vl_key_edit("draft_tensor_parallel_size", value))
    return FlagFix(change.rule, tuple(edits), "the key is draft_tensor_parallel_size")


def vl_fix_dashes(st: State, change: Change) -> FlagFix:
    key = str(change.given)
    new = key.replace("-", "_")
    edits = (vl_key_edit(key, remove=True), vl_key_edit(new, st.spec_intended.get(key)))
    return FlagFix(change.rule, edits, f"write the key as {new}")


def vl_fix_into_config(st: State, change: Change) -> FlagFix:
    flag = change.flag
    key = VL_SHORT.get(flag) or VL_LEGACY[flag][0]
    value = st.spec_intended.get(key)
    edits: tuple[Edit, ...] = (Edit(flag, remove=True),)
    if vllm_key_known(key, st.version):
        edits += (vl_key_edit(key, value),)
        description = f"move {flag} into --speculative-config as {key!r}"
    else:
        edits += (vl_key_edit(key, remove=True),)
        description = f"remove {flag}: vLLM {st.version} has no {key!r} key"
    return FlagFix(change.rule, edits, description)


def vl_fix_short_conflict(st: State, change: Change) -> FlagFix:
    return FlagFix(
        change.rule, (Edit(change.flag, remove=True),), f"remove {change.flag}: the JSON already sets it"
    )
