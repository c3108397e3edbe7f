"""vLLM's verify-side keys of the speculative config: how a verify accepts drafts (`rejection_sample_method`) and how
the draft samples (`draft_sample_method`).

Their values are Literals whose sets changed at 0.21.0 ('strict' became 'standard'), 0.22.0 ('gumbel' became
'probabilistic'), 0.25.0 ('block') and 0.33.0 ('fly'): a value from another release is refused at startup. Two
methods take keys that `SpeculativeConfig._verify_args` checks at startup, and both are lossy: a 'synthetic'
verify accepts each draft at the rate you give, whatever the target says; a 'fly' one accepts some drafts the target
rejects. A server of either reports an acceptance that is not its drafter's, and its output is not the target's.

Read in vllm 0.18.0-0.34.0 config/speculative.py (every minor release; `_resolve_synthetic_acceptance_rates` and its
call are the same code from 0.20.0 to 0.34.0; patch releases declare both keys on their minor's line, with its
default: data/arguments.json) and 0.34.0 v1/worker/gpu/spec_decode/rejection_sampler_utils.py.
"""

from __future__ import annotations

import functools

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from eaglewire.engines.vllm.args import VLLM
from eaglewire.engines.vllm.config import vl_key_edit
from eaglewire.errors import InputError
from eaglewire.rules.flags import FlagRule, State, row
from eaglewire.rules.launch import PROBLEM, WARNING, Change, FlagFix, as_float, as_int

rule = functools.partial(row, VLLM)
CFG = "config/speculative.py"

# (releases, the Literal's values), per key; the key is unknown before its first range (vllm.unknown_keys)
VALUES: dict[str, tuple[tuple[str, tuple[str, ...]], ...]] = {
    "rejection_sample_method": (
        (">=0.18.0,<0.19.0", ("strict", "probabilistic")),
        (">=0.19.0,<0.21.0", ("strict", "probabilistic", "synthetic")),
        (">=0.21.0,<0.25.0", ("standard", "synthetic")),
        (">=0.25.0,<0.33.0", ("standard", "synthetic", "block")),
        (">=0.33.0", ("standard", "synthetic", "block", "fly")),
    ),
    "draft_sample_method": (
        (">=0.21.0,<0.22.0", ("greedy", "gumbel")),
        (">=0.22.0", ("greedy", "probabilistic")),
    ),
}
# the same behaviour under another release's name (0.21.0 renamed strict; 0.22.0 renamed gumbel)
RENAMED = {("rejection_sample_method", "strict"): "standard", ("rejection_sample_method", "standard"): "strict",
           ("draft_sample_method", "gumbel"): "probabilistic", ("draft_sample_method", "probabilistic"): "gumbel"}  # fmt: skip
SYNTHETIC_KEYS = ("synthetic_acceptance_rates", "synthetic_acceptance_length")


def allowed(key: str, version: Version) -> tuple[str, ...] | None:
    """The values `key` takes at `version`; None where the release has no such key."""
    return next((values for spec, values in VALUES[key] if version in SpecifierSet(spec)), None)


def first_with(key: str, value: str) -> str | None:
    """The first release whose `key` takes `value`."""
    return next((spec.split(",")[0][2:] for spec, values in VALUES[key] if value in values), None)


def _k(st: State) -> int | None:
    k = st.v["spec"].get("num_speculative_tokens")
    return k if isinstance(k, int) and not isinstance(k, bool) else None


def _method(st: State) -> object:
    return st.spec_intended.get("rejection_sample_method")


def _vl_value(rule: FlagRule, st: State) -> None:
    for key in VALUES:
        value, values = st.spec_intended.get(key), allowed(key, st.version)
        if value is None or values is None or value in values:
            continue
        since = first_with(key, value) if isinstance(value, str) else None
        where = f" (new in {since})" if since and Version(since) > st.version else ""
        st.emit(rule, f"--speculative-config.{key}", value, None,
                f"{key} {value!r} is not one of vLLM {st.version}'s {', '.join(map(repr, values))}{where}: the "
                "config's validation refuses it at startup")  # fmt: skip


def _fix_value(st: State, change: Change) -> FlagFix:
    key = change.flag.split(".", 1)[1]
    values = allowed(key, st.version) or ()
    new = RENAMED.get((key, change.given)) if isinstance(change.given, str) else None
    if new in values:
        return FlagFix(
            change.rule, (vl_key_edit(key, new),), f"{key} {new!r}: vLLM {st.version}'s name for it"
        )
    if key == "rejection_sample_method" and change.given == "probabilistic" and "standard" in values:
        draft = next(
            v for v in allowed("draft_sample_method", st.version) or ("probabilistic",) if v != "greedy"
        )
        edits = (vl_key_edit(key, "standard"), vl_key_edit("draft_sample_method", draft))
        return FlagFix(change.rule, edits, f"'standard' verifies with the draft's logits when draft_sample_method is "
                       f"{draft!r} (0.21.0 split 'probabilistic' into the two keys)")  # fmt: skip
    return FlagFix(change.rule, (vl_key_edit(key, remove=True),),
                   f"remove {key}: vLLM {st.version} then takes its default ({values[0]!r})")  # fmt: skip


def _vl_synthetic_alone(rule: FlagRule, st: State) -> None:
    given = [k for k in SYNTHETIC_KEYS if st.spec_intended.get(k) is not None]
    if given and _method(st) != "synthetic":
        st.emit(rule, "--speculative-config", given, None,
                f"{' and '.join(given)} without rejection_sample_method 'synthetic': 'ValueError: "
                "synthetic_acceptance_rates / synthetic_acceptance_length are only valid with "
                "rejection_sample_method='synthetic'.' at startup")  # fmt: skip


def _fix_synthetic_alone(st: State, change: Change) -> FlagFix:
    return FlagFix(change.rule, tuple(vl_key_edit(k, remove=True) for k in change.given),
                   f"remove {' and '.join(change.given)}: they set the synthetic (lossy) verify's rates")  # fmt: skip


def synthetic_refusal(k: int | None, rates: list[float] | None, length: float | None) -> str | None:
    """`SpeculativeConfig._resolve_synthetic_acceptance_rates(k, rates, length)`'s ValueError, or None where it
    returns (k None: the checks that need it are not made)."""
    if (rates is None) == (length is None):
        return ("rejection_sample_method='synthetic' requires exactly one of synthetic_acceptance_rates or "
                "synthetic_acceptance_length.")  # fmt: skip
    if rates is not None:
        if k is not None and len(rates) != k:
            return f"synthetic_acceptance_rates must have length {k}, got {rates}."
        if not all(0.0 <= r <= 1.0 for r in rates):
            return f"synthetic_acceptance_rates entries must be in [0, 1], got {rates}."
        if any(rates[i] > rates[i - 1] for i in range(1, len(rates))):
            return f"synthetic_acceptance_rates must be non-increasing, got {rates}."
        return None
    if k is not None and not 1.0 <= length <= float(k + 1):
        return f"synthetic_acceptance_length must be in [1, {k + 1}], got {length}."
    return None


def _synthetic_given(st: State) -> tuple[list[float] | None, float | None]:
    """The two keys as pydantic's lax numbers take them ("0.5" is 0.5); anything else a one-line error naming the
    key."""
    rates, length = (st.spec_intended.get(k) for k in SYNTHETIC_KEYS)
    flag = "--speculative-config.synthetic_acceptance_rates"
    if rates is not None and not isinstance(rates, list):
        raise InputError(f"{flag}: expected a list of numbers, got {rates!r}")
    rates = None if rates is None else [as_float(flag, r) for r in rates]
    length = None if length is None else as_float("--speculative-config.synthetic_acceptance_length", length)
    return rates, length


def _vl_synthetic_rates(rule: FlagRule, st: State) -> None:
    if _method(st) != "synthetic":
        return
    said = synthetic_refusal(_k(st), *_synthetic_given(st))
    if said:
        st.emit(rule, "--speculative-config.rejection_sample_method", "synthetic", None,
                f"'ValueError: {said}' at startup")  # fmt: skip


def _fix_synthetic_rates(st: State, change: Change) -> FlagFix:
    k = _k(st)
    span = f"[1, {k + 1}]" if k else "[1, num_speculative_tokens + 1]"
    return FlagFix(change.rule, (vl_key_edit("synthetic_acceptance_length", "<the mean accept length to simulate>"),),
                   f"give exactly one of synthetic_acceptance_length (in {span}) or synthetic_acceptance_rates "
                   f"({k or 'num_speculative_tokens'} non-increasing rates in [0, 1])", mechanical=False)  # fmt: skip


def _vl_fly(rule: FlagRule, st: State) -> None:
    """FLy's checks in _verify_args; the window's lower bound is the field's own (ge=1), checked whatever the method."""
    k, window = _k(st), st.spec_intended.get("fly_window_size")
    if window is not None:
        window = as_int("--speculative-config.fly_window_size", window)
    key, given = "rejection_sample_method", _method(st)
    if window is not None and window < 1:
        key, given = "fly_window_size", window
        said = f"ValidationError: fly_window_size Input should be greater than or equal to 1 (got {window})"
    elif given != "fly":
        return
    elif k is not None and k < 2:
        said = "ValueError: FLy requires num_speculative_tokens to be at least 2."
    elif k is not None and window is not None and window >= k:
        said = "ValueError: FLy requires fly_window_size to be smaller than num_speculative_tokens."
    else:
        return
    st.emit(rule, f"--speculative-config.{key}", given, None, f"'{said}' at startup")


def _fix_fly(st: State, change: Change) -> FlagFix:
    k = _k(st)
    if k is not None and k < 2 and _method(st) == "fly":
        return FlagFix(change.rule, (vl_key_edit("num_speculative_tokens", 2),),
                       "num_speculative_tokens 2 or more: FLy defers a rejection over a window of later drafts",
                       mechanical=False)  # fmt: skip
    return FlagFix(change.rule, (vl_key_edit("fly_window_size", remove=True),),
                   f"remove fly_window_size: vLLM then takes min(6, num_speculative_tokens - 1) = {min(6, (k or 2) - 1)}")  # fmt: skip


def _vl_lossy(rule: FlagRule, st: State) -> None:
    method = _method(st)
    if method not in (allowed("rejection_sample_method", st.version) or ()):
        return  # refused (vllm.sample_method_value)
    if method == "synthetic":
        how = ("accepts draft i with the probability you gave, never asking the target: the output is not the "
               "target's, and the server's acceptance counters measure those rates, not the drafter")  # fmt: skip
    elif method == "fly":
        how = ("accepts a rejected draft when the next drafts in its window match and the target is unsure (entropy "
               "gate): the output can differ from the target's, and acceptance is above what the drafter earns under "
               "the lossless verify eaglewire's walk predicts")  # fmt: skip
    else:
        return
    st.emit(rule, "--speculative-config.rejection_sample_method", method, method,
            f"rejection_sample_method {method!r} is lossy: vLLM {how}")  # fmt: skip


RULES: list[FlagRule] = [
    rule("vllm.sample_method_value", ">=0.18.0", PROBLEM,
         f"vllm 0.18.0-0.34.0 {CFG} RejectionSampleMethod and DraftSampleMethod (Literals: 0.18.0 :60, 0.21.0 "
         ":68-69 'strict' renamed 'standard', 0.22.0 :69-70 'gumbel' renamed 'probabilistic', 0.25.0 :75 'block', "
         "0.33.0 :83 'fly'; 0.34.0 :98-99)", "a verify or draft sampling method the release does not name",
         _vl_value, _fix_value, fails=True),
    rule("vllm.synthetic_keys_alone", ">=0.20.0", PROBLEM,
         f"vllm 0.20.0 {CFG}:883-898, 0.33.0 :1973-1988, 0.34.0 :1666-1680 (_verify_args)",
         "synthetic acceptance keys without the synthetic verify", _vl_synthetic_alone, _fix_synthetic_alone,
         fails=True),
    rule("vllm.synthetic_rates", ">=0.20.0", PROBLEM,
         f"vllm 0.20.0 {CFG}:217-248, 0.34.0 :648-680 (_resolve_synthetic_acceptance_rates)",
         "the synthetic verify's rates", _vl_synthetic_rates, _fix_synthetic_rates, fails=True),
    rule("vllm.fly_settings", ">=0.33.0", PROBLEM,
         f"vllm 0.33.0 {CFG}:652 (fly_window_size ge=1), 2014-2033; 0.34.0 :704, 1700-1718",
         "FLy's window and draft count", _vl_fly, _fix_fly, fails=True),
    rule("vllm.lossy_verify", ">=0.19.0", WARNING,
         f"vllm 0.34.0 v1/worker/gpu/spec_decode/rejection_sampler_utils.py:631-632, 711-712 (synthetic: accepted "
         f"= u < rate), 725-745 (FLy's window); {CFG}:1715-1718 (FLy: 'a lossy speculative decoding method')",
         "a lossy verify: acceptance that is not the drafter's", _vl_lossy),
]  # fmt: skip
