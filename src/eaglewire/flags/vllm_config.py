"""vLLM's SpeculativeConfig: the keys each version accepts, what a fix proposes, and the fix builders that edit
the `--speculative-config` JSON (one key at a time). Data and edits only; the rules are in `vllm.py`."""

from __future__ import annotations

from typing import Any

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from eaglewire.flags.parse import VL_LEGACY, VL_SHORT
from eaglewire.flags.rule import State
from eaglewire.flags.values import Change, Edit, FlagFix

# SpeculativeConfig fields, by the versions they exist in (ast of the class body in every version read).
VLLM_CONFIG_KEYS: dict[str, str] = {
    "method": ">=0.8.5", "model": ">=0.8.5", "num_speculative_tokens": ">=0.8.5",
    "draft_tensor_parallel_size": ">=0.8.5", "quantization": ">=0.8.5", "max_model_len": ">=0.8.5",
    "revision": ">=0.8.5", "code_revision": ">=0.8.5", "prompt_lookup_max": ">=0.8.5",
    "prompt_lookup_min": ">=0.8.5",
    "acceptance_method": ">=0.8.5,<0.10.0", "disable_mqa_scorer": ">=0.8.5,<0.10.0",
    "posterior_alpha": ">=0.8.5,<0.10.0", "posterior_threshold": ">=0.8.5,<0.10.0",
    "disable_by_batch_size": ">=0.8.5,<0.20.0", "disable_log_stats": ">=0.8.5,<0.14.0",
    "disable_logprobs": ">=0.8.5,<0.14.0", "enable_chunked_prefill": ">=0.8.5,<0.14.0",
    "speculative_token_tree": ">=0.9.0,<0.21.0",
    "disable_padded_drafter_batch": ">=0.11.0", "enforce_eager": ">=0.11.0",
    "suffix_decoding_max_cached_requests": ">=0.14.0", "suffix_decoding_max_spec_factor": ">=0.14.0",
    "suffix_decoding_max_tree_depth": ">=0.14.0", "suffix_decoding_min_token_prob": ">=0.14.0",
    "draft_load_config": ">=0.20.0", "moe_backend": ">=0.20.0", "parallel_drafting": ">=0.20.0",
    "rejection_sample_method": ">=0.20.0", "synthetic_acceptance_length": ">=0.20.0",
    "synthetic_acceptance_rates": ">=0.20.0", "use_local_argmax_reduction": ">=0.20.0",
    "tensor_parallel_size": ">=0.20.0",  # exists only to raise "not a valid argument"
    "attention_backend": ">=0.21.0", "draft_sample_method": ">=0.21.0",
    "num_speculative_tokens_per_batch_size": ">=0.24.0",
    "kv_cache_dtype": ">=0.27.0", "use_heterogeneous_vocab": ">=0.27.0",
    "dspark_draft_topk": ">=0.28.0", "enable_adaptive_verification": ">=0.28.0",
    "index_share_for_mtp_iteration": ">=0.29.0", "disable_eagle_block_drop": ">=0.30.0",
    "disable_lookahead_block_hashes": ">=0.33.0", "draft_lm_head_quantization": ">=0.33.0",
    "fly_entropy_threshold": ">=0.33.0", "fly_entropy_top_k": ">=0.33.0", "fly_window_size": ">=0.33.0",
    "xpress_topc": ">=0.33.0",
}  # fmt: skip
VL_INTERNAL = (
    "target_model_config",
    "target_parallel_config",
    "draft_model_config",
    "draft_parallel_config",
)
VLLM_DEFAULT_TOKENS = (
    3  # what a fix proposes when nothing says k: the speculators EAGLE-3 converter's default
)


def vllm_key_known(key: str, version: Version) -> bool:
    spec = VLLM_CONFIG_KEYS.get(key)
    return spec is not None and SpecifierSet(spec).contains(version, prereleases=True)


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
