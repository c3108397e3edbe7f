"""vLLM's speculative-config rules, each function beside its table row(s), in the order vLLM applies them.

Sources: the vllm wheels 0.8.5-0.33.0 from PyPI, unzipped and read (`versions.VLLM_CHECKED`); each row cites file
and lines. vLLM drafts EAGLE-3 as a chain of `num_speculative_tokens`; its settings live in one JSON
`--speculative-config` (plus dotted keys, and `--spec-*` shorthands from 0.22.0).
"""

from __future__ import annotations

import ast
import functools
import json
from collections.abc import Callable

from packaging.specifiers import SpecifierSet

from eaglewire.engines.vllm import draft as vllm_draft
from eaglewire.engines.vllm import methods as vllm_methods
from eaglewire.engines.vllm import sampling as vllm_sampling
from eaglewire.engines.vllm.args import VL_ARGS, VL_CFG, VL_LEGACY, VL_SHORT, VLLM
from eaglewire.engines.vllm.config import (
    VL_INTERNAL,
    speculators_tokens,
    vl_fix_dashes,
    vl_fix_draft_tp,
    vl_fix_into_config,
    vl_fix_method,
    vl_fix_model,
    vl_fix_remove_keys,
    vl_fix_short_conflict,
    vl_fix_tokens,
    vl_fix_tp_key,
    vl_key_edit,
    vllm_key_known,
)
from eaglewire.errors import InputError
from eaglewire.rules import parsers
from eaglewire.rules.context import drafter_kind, heads_tp_fix, heads_unsplit, local_config
from eaglewire.rules.flags import FlagRule, State, row
from eaglewire.rules.launch import INFO, PROBLEM, WARNING, Change, Edit, FlagFix, as_int

rule = functools.partial(row, VLLM)
RULES: list[FlagRule] = []


def _vl_legacy(rule: FlagRule, st: State) -> None:
    for o in st.cmd.options:
        if o.flag in VL_LEGACY:
            key = VL_LEGACY[o.flag][0]
            st.emit(
                rule,
                o.flag,
                o.value,
                None,
                f"{o.flag} was removed (last in vLLM 0.8.0): argparse rejects it at startup; the setting is "
                f"--speculative-config key {key!r}",
            )


RULES += [
    rule("vllm.legacy_flags", ">=0.8.5", PROBLEM,
       "vllm 0.8.0 engine/arg_utils.py:779-878 defines --speculative-model, --num-speculative-tokens, ...; "
       "0.8.5+ engine/arg_utils.py has only --speculative-config",
       "removed individual speculative flags", _vl_legacy, vl_fix_into_config, fails=True),
]  # fmt: skip


def _vl_short_unknown(rule: FlagRule, st: State) -> None:
    for o in st.cmd.options:
        if o.flag in VL_SHORT:
            st.emit(
                rule,
                o.flag,
                o.value,
                None,
                f"{o.flag} does not exist before vLLM 0.22.0: argparse rejects it; use --speculative-config "
                f"key {VL_SHORT[o.flag]!r}",
            )


RULES += [
    rule("vllm.short_flags_unknown", ">=0.8.5,<0.22.0", PROBLEM,
       "vllm 0.21.0 engine/arg_utils.py has no --spec-method/--spec-model/--spec-tokens (0.22.0 adds them)",
       "--spec-* flags do not exist yet", _vl_short_unknown, vl_fix_into_config, fails=True),
]  # fmt: skip


def _vl_short_merge(rule: FlagRule, st: State) -> None:
    for o in st.cmd.options:
        if o.flag not in VL_SHORT:
            continue
        key = VL_SHORT[o.flag]
        if key in (st.cmd.speculative_config or {}):
            continue  # the conflict rule reports it
        st.emit(
            rule,
            o.flag,
            o.value,
            st.v["spec"].get(key),
            f"{o.flag} is merged into --speculative-config as {key!r}",
        )


RULES += [
    rule("vllm.short_flags", ">=0.22.0", INFO,
       f"{VL_ARGS}:1868-1873 (flags), 2100-2121 create_speculative_config",
       "--spec-* flags merge into the config", _vl_short_merge),
]  # fmt: skip


def _vl_short_conflict(rule: FlagRule, st: State) -> None:
    for o in st.cmd.options:
        key = VL_SHORT.get(o.flag)
        if key is not None and key in (st.cmd.speculative_config or {}):
            st.emit(
                rule,
                o.flag,
                o.value,
                None,
                f"{o.flag} and --speculative-config['{key}'] are mutually exclusive: ValueError at startup",
            )


RULES += [
    rule("vllm.short_flags_conflict", ">=0.22.0", PROBLEM,
       f"{VL_ARGS}:2117-2120 ('{{flag}} and --speculative-config[...] are mutually exclusive')",
       "a --spec-* flag and the same JSON key", _vl_short_conflict, vl_fix_short_conflict, fails=True),
]  # fmt: skip


def _vl_dotted_replaces(rule: FlagRule, st: State) -> None:
    whole = [o for o in st.cmd.options if o.flag == "--speculative-config" and o.key is None]
    dotted = [o for o in st.cmd.options if o.flag == "--speculative-config" and o.key is not None]
    if whole and dotted:
        st.emit(
            rule,
            "--speculative-config",
            whole[-1].value,
            json.dumps(st.cmd.speculative_config),
            "dotted --speculative-config.KEY arguments are appended as a second --speculative-config after "
            "everything else, and argparse keeps the last one: the JSON given is dropped",
        )


RULES += [
    rule("vllm.dotted_config_replaces_json", ">=0.10.0", WARNING,
       "vllm 0.33.0 utils/argparse_utils.py:405-499 FlexibleArgumentParser.parse_args (dict args appended last); "
       "0.10.0-0.11.0 utils/__init__.py the same",
       "dotted keys drop the JSON", _vl_dotted_replaces),
]  # fmt: skip


def _vl_speculators_served(merged: bool) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        config, _ = local_config(st.cmd.model)
        if not config or config.get("speculators_config") is None:
            return
        k = speculators_tokens(config)
        method = config.get("speculators_model_type")
        user = dict(st.cmd.speculative_config or {})
        if merged:
            spec = {**user, "method": method, "num_speculative_tokens": user.get("num_speculative_tokens", k)}
            msg = (
                "the served model is a speculators checkpoint: vLLM takes method and num_speculative_tokens from "
                "its speculators_config, merges --speculative-config over them (method and model locked), and "
                "serves its verifier as the target"
            )
        else:
            spec = {"method": method, "num_speculative_tokens": k}
            msg = (
                "the served model is a speculators checkpoint: vLLM builds the speculative config from its "
                "speculators_config and serves its verifier as the target"
                + ("; your --speculative-config is replaced, not merged" if user else "")
            )
        spec["model"] = st.cmd.model
        st.emit(rule, "--speculative-config", user or None, spec, msg)
        st.v["spec"] = spec
        st.spec_intended = dict(spec)
        if st.drafter is None:
            st.drafter, st.drafter_source = config, st.cmd.model
            st.drafter_kind = drafter_kind(config)

    return apply


RULES += [
    rule("vllm.speculators_served", ">=0.10.1,<0.29.0", WARNING,
       "vllm 0.11.0-0.28.0 transformers_utils/config.py maybe_override_with_speculators (returns the speculators "
       "config; the user's is dropped); absent in 0.10.0",
       "a speculators checkpoint served directly", _vl_speculators_served(False)),
    rule("vllm.speculators_served", ">=0.29.0", INFO,
       "vllm 0.33.0 transformers_utils/config.py:800-860 maybe_override_with_speculators (merges the user's config, "
       "locks method and model); 0.29.0 first with the merge",
       "a speculators checkpoint served directly", _vl_speculators_served(True)),
]  # fmt: skip


def _vl_dashes(normalized: bool) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        spec = st.v["spec"]
        for key in [k for k in spec if "-" in k]:
            new = key.replace("-", "_")
            msg = (
                f"vLLM rewrites the key {key!r} to {new!r}"
                if normalized
                else f"{key!r} is not a field (vLLM reads {new!r}; keys are not normalized before 0.27.0): startup "
                "fails with an unexpected-keyword error"
            )
            st.emit(rule, f"--speculative-config.{key}", key, new if normalized else None, msg)
            spec[new] = spec.pop(key)

    return apply


RULES += [
    rule("vllm.config_key_dashes", ">=0.8.5,<0.27.0", PROBLEM,
       "vllm 0.24.0 engine/arg_utils.py create_speculative_config passes keys unchanged (0.27.0 adds "
       "k.replace('-', '_'))",
       "dashed keys are unknown", _vl_dashes(False), vl_fix_dashes, fails=True),
    rule("vllm.config_key_dashes", ">=0.27.0", INFO,
       f"{VL_ARGS}:2125-2128 (`k.replace('-', '_')`)", "dashed keys are normalized", _vl_dashes(True)),
]  # fmt: skip


def _vl_tp_key(rule: FlagRule, st: State) -> None:
    if "tensor_parallel_size" in st.v["spec"]:
        value = st.v["spec"]["tensor_parallel_size"]
        st.emit(
            rule,
            "--speculative-config.tensor_parallel_size",
            value,
            None,
            "'tensor_parallel_size' is not a valid argument in the speculative_config (ValueError from 0.20.0, "
            "an unexpected-keyword error before): the draft's is 'draft_tensor_parallel_size'",
        )


RULES += [
    rule("vllm.tensor_parallel_size_key", ">=0.8.5", PROBLEM,
       f"{VL_CFG}:430-433, 1939-1944 _verify_args (ValueError from 0.20.0; before, SpeculativeConfig has no such "
       "field: unexpected keyword)",
       "tensor_parallel_size in the speculative config", _vl_tp_key, vl_fix_tp_key, fails=True),
]  # fmt: skip


# fields vLLM sets itself (`field(init=False)`): a value given is an unexpected keyword argument
NOT_INIT = {"custom_method": ">=0.34.0"}


def _vl_unknown_keys(rule: FlagRule, st: State) -> None:
    spec = st.v["spec"]
    unknown = [k for k in spec if k != "tensor_parallel_size" and not vllm_key_known(k, st.version)]
    unknown = [k for k in unknown if k not in VL_INTERNAL]
    own = [k for k in spec if k in NOT_INIT and st.version in SpecifierSet(NOT_INIT[k])]
    if own:
        st.emit(rule, "--speculative-config", own, None,
                f"{', '.join(map(repr, own))}: a field vLLM {st.version} sets itself (init=False), not an argument: "
                "'Unexpected keyword argument' at startup")  # fmt: skip
    if unknown:
        st.emit(
            rule,
            "--speculative-config",
            unknown,
            None,
            f"unknown --speculative-config key(s) {', '.join(map(repr, unknown))} in vLLM {st.version}: "
            "SpeculativeConfig forbids extra fields, startup fails",
        )


RULES += [
    rule("vllm.unknown_keys", ">=0.8.5", PROBLEM,
       "SpeculativeConfig fields per version (vllm 0.8.5-0.33.0 config class bodies); vllm 0.33.0 config/utils.py:"
       "70-71 ConfigDict(extra='forbid'); 0.8.5 SpeculativeConfig.from_dict = cls(**dict); 0.34.0 "
       "config/speculative.py:479 (custom_method: field(init=False))",
       "unknown speculative config keys", _vl_unknown_keys, vl_fix_remove_keys, fails=True),
    *vllm_methods.METHOD_RULES,
]  # fmt: skip


def _vl_model_missing(rule: FlagRule, st: State) -> None:
    spec = st.v["spec"]
    if spec.get("model") is None and spec.get("method") in (None, "eagle", "eagle3", "draft_model"):
        st.emit(
            rule,
            "--speculative-config.model",
            None,
            None,
            "no draft model: vLLM raises 'num_speculative_tokens was provided but without speculative model' "
            "(EAGLE heads are never taken from the target)",
        )


RULES += [
    rule("vllm.model_missing", ">=0.8.5", PROBLEM,
       f"{VL_CFG}:1252-1295 ('num_speculative_tokens was provided but without speculative model')",
       "no draft model", _vl_model_missing, vl_fix_model, fails=True),
]  # fmt: skip


def _vl_method_detect(patterns: tuple[tuple[str, str], ...]) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        spec = st.v["spec"]
        model = spec.get("model")
        if spec.get("method") is not None or model is None:
            return
        name = str(model).lower()
        method = next((m for pattern, m in patterns if pattern in name), "draft_model")
        found = " or ".join(repr(p) for p, m in patterns if m == method)
        how = f"the model name contains {found}" if method != "draft_model" else "no name pattern matched"
        st.emit(
            rule,
            "--speculative-config.method",
            None,
            method,
            f"method not given: detected as {method!r} ({how})",
        )
        spec["method"] = method

    return apply


RULES += [
    rule("vllm.method_detect", ">=0.8.5,<0.10.2", INFO,
       "vllm 0.8.5-0.10.1.1 config.py SpeculativeConfig.__post_init__: `elif 'eagle-' in ... or 'eagle3-' in ...: "
       "self.method = 'eagle'`",
       "method from the model name (eagle3- gives eagle)",
       _vl_method_detect((("eagle-", "eagle"), ("eagle3-", "eagle")))),
    rule("vllm.method_detect", ">=0.10.2,<0.33.0", INFO,
       f"{VL_CFG}:1429-1448 ('eagle-' -> eagle, 'eagle3' -> eagle3, else draft_model)",
       "method from the model name", _vl_method_detect((("eagle-", "eagle"), ("eagle3", "eagle3")))),
    *vllm_methods.DETECT_RULES,
]  # fmt: skip


def _vl_eagle3_as_draft_model(rule: FlagRule, st: State) -> None:
    spec = st.v["spec"]
    if spec.get("method") == "draft_model" and st.drafter_kind == "eagle3":
        st.emit(
            rule,
            "--speculative-config.method",
            st.spec_intended.get("method"),
            "draft_model",
            f"the drafter ({st.drafter_source}) is EAGLE-3 but runs as an independent draft_model: its fc and "
            "aux hidden states are never wired (load fails or acceptance collapses)",
        )


RULES += [
    rule("vllm.eagle3_drafter_as_draft_model", ">=0.8.5", PROBLEM,
       f"{VL_CFG}:1429-1510 (draft_model keeps the checkpoint's own architecture; EAGLEConfig wrapping only for "
       "eagle/eagle3)",
       "an EAGLE-3 head run as a draft model", _vl_eagle3_as_draft_model, vl_fix_method),
]  # fmt: skip


def _vl_method_undetected(rule: FlagRule, st: State) -> None:
    spec = st.v["spec"]
    if (
        spec.get("method") == "draft_model"
        and st.spec_intended.get("method") is None
        and st.drafter_kind is None
    ):
        st.emit(
            rule,
            "--speculative-config.method",
            None,
            "draft_model",
            "method not given and not detected: the model runs as an independent draft model; if it is an "
            'EAGLE-3 head, set "method": "eagle3"',
        )


RULES += [
    rule("vllm.method_undetected", ">=0.8.5", WARNING,
       f"{VL_CFG}:1429-1500", "method fell back to draft_model", _vl_method_undetected),
]  # fmt: skip


def _vl_eagle_with_eagle3(rule: FlagRule, st: State) -> None:
    if st.v["spec"].get("method") == "eagle" and st.drafter_kind == "eagle3":
        st.emit(
            rule,
            "--speculative-config.method",
            st.spec_intended.get("method"),
            "eagle",
            f"the drafter ({st.drafter_source}) is EAGLE-3 but method is 'eagle': no aux hidden states are "
            "captured and the architecture is mapped to an EAGLE-1 class (load fails or accept length ~1.0)",
        )


RULES += [
    rule("vllm.eagle_with_eagle3_drafter", ">=0.8.5", PROBLEM,
       "vllm 0.33.0 transformers_utils/configs/eagle.py:43-66 (method 'eagle' maps architectures to Eagle<arch>); "
       "aux hidden states only for eagle3 (config/speculative.py use_eagle/compute_hash)",
       "method eagle with an EAGLE-3 drafter", _vl_eagle_with_eagle3, vl_fix_method, fails=True),
]  # fmt: skip


def _vl_tokens_from_n_predict(rule: FlagRule, st: State) -> None:
    spec = st.v["spec"]
    drafter = st.drafter or {}
    n_predict = drafter.get("n_predict")
    if n_predict is None and spec.get("method") == "mtp":  # speculative.py:755-763: n_predict := MTP layers
        n_predict = drafter.get("num_nextn_predict_layers")
    if spec.get("num_speculative_tokens") is None and isinstance(n_predict, int) and n_predict > 0:
        st.emit(
            rule,
            "--speculative-config.num_speculative_tokens",
            None,
            n_predict,
            f"num_speculative_tokens not given: taken from the draft config's n_predict = {n_predict}",
        )
        spec["num_speculative_tokens"] = n_predict


RULES += [
    rule("vllm.num_speculative_tokens_from_draft", ">=0.8.5", INFO,
       f"{VL_CFG}:1584-1604 (`if self.num_speculative_tokens is None: self.num_speculative_tokens = n_predict`)",
       "num_speculative_tokens from n_predict", _vl_tokens_from_n_predict),
]  # fmt: skip


def _vl_tokens_missing(rule: FlagRule, st: State) -> None:
    spec = st.v["spec"]
    if spec.get("num_speculative_tokens") is not None:
        return
    k = speculators_tokens(st.drafter)
    extra = ""
    if k is not None:
        extra = (
            f"; the drafter's speculators_config proposes {k}, but vLLM reads it only when the checkpoint is "
            "served itself (vllm serve <speculator dir>), not as --speculative-config model"
        )
    st.emit(
        rule,
        "--speculative-config.num_speculative_tokens",
        None,
        None,
        "num_speculative_tokens not given and the draft config has no n_predict: ValueError "
        f"'num_speculative_tokens was not provided' at startup{extra}",
    )


RULES += [
    rule("vllm.num_speculative_tokens_missing", ">=0.8.5", PROBLEM,
       f"{VL_CFG}:1614-1618, 1946-1951; speculators proposal_methods read only by transformers_utils/config.py "
       "maybe_override_with_speculators (served model)",
       "num_speculative_tokens missing", _vl_tokens_missing, vl_fix_tokens, fails=True),
]  # fmt: skip


def _vl_tokens_positive(rule: FlagRule, st: State) -> None:
    value = st.v["spec"].get("num_speculative_tokens")
    if value is not None and as_int("--speculative-config.num_speculative_tokens", value) <= 0:
        st.emit(
            rule,
            "--speculative-config.num_speculative_tokens",
            value,
            None,
            "num_speculative_tokens must be greater than zero (ValueError at startup)",
        )


RULES += [
    rule("vllm.num_speculative_tokens_positive", ">=0.8.5", PROBLEM,
       f"{VL_CFG}:413 (Field gt=0), 1967-1971; vllm 0.8.5 config.py:2550-2552",
       "num_speculative_tokens <= 0", _vl_tokens_positive, vl_fix_tokens, fails=True),
    *vllm_methods.VOCAB_RULES,
]  # fmt: skip


def _vl_draft_tp(rule: FlagRule, st: State) -> None:
    value = st.v["spec"].get("draft_tensor_parallel_size")
    target = st.v["target_tp"]
    if value is None:
        return
    if as_int("--speculative-config.draft_tensor_parallel_size", value) not in (1, target):
        st.emit(
            rule,
            "--speculative-config.draft_tensor_parallel_size",
            value,
            None,
            f"draft_tensor_parallel_size can only be 1 or the target's tensor parallel size ({target}): "
            "ValueError at startup",
        )


RULES += [
    rule("vllm.draft_tensor_parallel_size", ">=0.8.5", PROBLEM,
       f"{VL_CFG}:1849-1870 _verify_and_get_draft_tp; vllm 0.8.5 config.py:2489-2515",
       "draft TP must be 1 or the target TP", _vl_draft_tp, vl_fix_draft_tp, fails=True),
]  # fmt: skip


def _vl_draft_heads_tp(rule: FlagRule, st: State) -> None:
    tp = st.v["target_tp"]
    if st.drafter is None or not isinstance(tp, int) or not vllm_draft.eagle_proposer(st):
        return
    found = heads_unsplit(st.drafter, tp)
    if found is None:
        return
    what, which = found
    words = (f"'Total number of attention heads must be divisible by tensor parallel size ({tp})' when the draft's "
             "config is checked at startup (with draft_tensor_parallel_size 1, an AssertionError in the head's "
             "attention at load)" if which == "heads" else "an AssertionError in the head's attention at load")  # fmt: skip
    st.emit(rule, "--tensor-parallel-size", tp, None,
            f"{what}: vLLM builds an EAGLE head at the target's TP: {words}")  # fmt: skip


def _vl_draft_tp_default(rule: FlagRule, st: State) -> None:
    spec = st.v["spec"]
    if spec.get("draft_tensor_parallel_size") is None and spec.get("model") not in (None, "ngram", "suffix"):
        target = st.v["target_tp"]
        st.emit(
            rule,
            "--speculative-config.draft_tensor_parallel_size",
            None,
            target,
            f"draft_tensor_parallel_size not given: the draft runs at the target's tensor parallel size {target}",
        )
        spec["draft_tensor_parallel_size"] = target


RULES += [
    rule("vllm.draft_heads_tp", ">=0.8.5", PROBLEM,
       "vllm config.py:2555 @0.8.5, config/speculative.py:901 @0.20.0, :1684 @0.34.0 (the draft's config checked "
       "at the draft TP, the target's by default), config/model.py:1119-1130 @0.20.0 ('Total number of attention "
       "heads (...) must be divisible by tensor parallel size (...)'); models/llama.py:117, 123-127 @0.8.5, :145, "
       ":151-155 @0.34.0 (the head's attention asserts)",
       "the draft's heads must split over the target's TP", _vl_draft_heads_tp,
       lambda st, c: heads_tp_fix(st.drafter, st.v["target_tp"], "--tensor-parallel-size", c.rule), fails=True),
    rule("vllm.draft_tensor_parallel_size_default", ">=0.8.5", INFO,
       f"{VL_CFG}:1856-1861", "draft TP defaults to the target TP", _vl_draft_tp_default),
]  # fmt: skip


def _vl_token_tree(rule: FlagRule, st: State) -> None:
    tree = st.v["spec"].get("speculative_token_tree")
    if tree is None:
        return
    try:
        nodes = ast.literal_eval(str(tree))
        st.v["tree"] = (len(nodes), max(len(n) for n in nodes))
    except (ValueError, SyntaxError, TypeError):
        raise InputError(
            f"--speculative-config.speculative_token_tree: not a list of tuples: {tree!r}"
        ) from None
    st.emit(
        rule,
        "--speculative-config.speculative_token_tree",
        tree,
        tree,
        f"tree drafting: {st.v['tree'][0]} drafts per verify, depth {st.v['tree'][1]} (not a chain)",
    )


RULES += [
    rule("vllm.speculative_token_tree", ">=0.10.2,<0.21.0", INFO,
       "vllm 0.14.0 config/speculative.py:441-451 (chain unless speculative_token_tree is given); the GPU reads it "
       "from 0.10.2 (v1/spec_decode/eagle.py:125; 0.9.0-0.10.1.1: Neuron only, vllm.key_not_read); removed in "
       "0.21.0",
       "tree drafting", _vl_token_tree),
]  # fmt: skip


# ---- KV-sharing fast prefill (Gemma-3n-style KV sharing) beside an EAGLE draft ----------------------------------


def _vl_kv_fast_prefill(rule: FlagRule, st: State) -> None:
    if st.cmd.switch("--kv-sharing-fast-prefill") and vllm_draft.eagle_proposer(st):
        st.emit(rule, "--kv-sharing-fast-prefill", True, None,
                f"vLLM {st.version} refuses KV-sharing fast prefill beside an EAGLE draft at startup: 'ValueError: "
                "Fast prefill optimization for KV sharing is not compatible with EAGLE as EAGLE requires correct "
                "logits for all tokens while fast prefill gives incorrect logits for prompt tokens.'")  # fmt: skip


RULES += [
    rule("vllm.kv_sharing_fast_prefill_eagle", ">=0.10.2", PROBLEM,
         "vllm 0.10.2 config/__init__.py:3417-3430 (speculative_config.use_eagle()), 0.11.0 :390-398, 0.20.0 "
         "config/vllm.py:1102-1111, 0.33.0 :2018-2027, 0.34.0 :1930-1940 (uses_target_hidden_states); the flag "
         "from 0.10.1 (data/options.json), not refused there", "KV-sharing fast prefill with EAGLE",
         _vl_kv_fast_prefill,
         lambda st, c: FlagFix(c.rule, (Edit("--kv-sharing-fast-prefill", remove=True),),
                               "(remove --kv-sharing-fast-prefill): EAGLE needs the prompt's logits"), fails=True),
]  # fmt: skip


# ---- asynchronous scheduling beside speculative decoding (VllmConfig.__post_init__, once the config is built) ----
# --async-scheduling / --no-async-scheduling exist from 0.10.0 (BooleanOptionalAction; data/options.json). Off by
# default before 0.14.0; from it None, decided by the engine: on for EAGLE/MTP unless disable_padded_drafter_batch
# (vllm#31998; from 0.33.0 on the V1 model runner only). vllm#24799 (0.11.1) let EAGLE/MTP run with it.


def _vl_async_speculative(rule: FlagRule, st: State) -> None:
    if vllm_draft.scheduling_given(st):
        st.emit(rule, "--async-scheduling", True, None,
                f"vLLM {st.version} refuses --async-scheduling with any speculative config at startup: "
                "ValueError 'Currently, speculative decoding is not supported with async scheduling.' "
                f"(EAGLE/MTP may from {PADDED_ASYNC_FROM})")  # fmt: skip


def _vl_async_padded(said: str, runner: str | None) -> Callable[[FlagRule, State], None]:
    """--async-scheduling beside an EAGLE/MTP config with disable_padded_drafter_batch (another method is refused
    first, for its method: not read here). `runner`: None, refused on every runner; "v1", the launch runs V1 (a
    problem); "either", the platform picks the runner (a warning naming V1)."""

    def apply(rule: FlagRule, st: State) -> None:
        if not (vllm_draft.scheduling_given(st) and vllm_draft.padded_drafter_off(st)):
            return
        if runner is not None and vllm_draft.v1_runner(st) is not {"v1": True, "either": None}[runner]:
            return
        where = "" if runner != "either" else (" on the V1 model runner (a CPU; CUDA with "
                                               "VLLM_USE_V2_MODEL_RUNNER=0); CUDA's default Model Runner V2 "
                                               "starts and ignores the key")  # fmt: skip
        st.emit(rule, "--async-scheduling", True, None,
                f"--async-scheduling with disable_padded_drafter_batch=True is refused at startup{where}: "
                f"ValueError {said}")  # fmt: skip

    return apply


def _vl_fix_async(st: State, change: Change) -> FlagFix:
    edit = Edit("--async-scheduling", remove=True)
    if change.rule == "vllm.async_scheduling_speculative":
        return FlagFix(change.rule, (edit,), f"{edit.render()}: synchronous scheduling",
                       alternative=f"or serve vLLM {PADDED_ASYNC_FROM}+ (EAGLE/MTP with it)")  # fmt: skip
    return FlagFix(change.rule, (edit,), f"{edit.render()}: synchronous scheduling, vLLM's own choice for this "
                   "config from 0.14.0", alternative="or drop disable_padded_drafter_batch to keep asynchronous "
                   "scheduling")  # fmt: skip


def _vl_async_off(said: str, v1_only: bool) -> Callable[[FlagRule, State], None]:
    """Neither flag given, an EAGLE/MTP config with disable_padded_drafter_batch: the engine turns asynchronous
    scheduling off with a log line (`v1_only`: where the V1 runner may run)."""

    def apply(rule: FlagRule, st: State) -> None:
        if vllm_draft.scheduling_given(st) is not None or not vllm_draft.padded_drafter_off(st):
            return
        runs_v1 = vllm_draft.v1_runner(st)
        if v1_only and runs_v1 is False:
            return
        where = ("" if not v1_only or runs_v1 else
                 " on the V1 model runner (a CPU; CUDA with VLLM_USE_V2_MODEL_RUNNER=0; CUDA's default Model Runner "
                 "V2 keeps it on and ignores the key)")  # fmt: skip
        st.emit(rule, "--async-scheduling", None, False,
                f"asynchronous scheduling, vLLM {st.version}'s default for {st.v['spec'].get('method')}, is turned "
                f"off{where} because disable_padded_drafter_batch=True, said only in a log line ('{said}'): "
                "pass --no-async-scheduling to launch as it runs, or drop disable_padded_drafter_batch to keep "
                "it")  # fmt: skip

    return apply


PADDED_ASYNC_FROM = "0.11.1"
_PADDED = ("'Async scheduling is not compatible with disable_padded_drafter_batch=True.' (0.11.1-0.13.0: "
           "'...disable_padded_drafter_batch=True is not supported for this situation now. please set "
           "disable_padded_drafter_batch=Fasle')")  # fmt: skip
_PADDED_V1 = (
    "'Async scheduling is not supported by the V1 model runner with disable_padded_drafter_batch=True.'"
)
_OFF = "Async scheduling is not compatible with disable_padded_drafter_batch=True and will be disabled."
_OFF_V1 = ("Async scheduling is disabled because the V1 model runner does not support it with "
           "disable_padded_drafter_batch=True.")  # fmt: skip
_V33_V1 = ("vllm 0.33.0 config/vllm.py:1650-1666 (v1_async_sched_incompat only `if not self.use_v2_model_runner`; "
           "use_v2_model_runner :730-767)")  # fmt: skip
RULES += [
    rule("vllm.async_scheduling_speculative", f">=0.10.0,<{PADDED_ASYNC_FROM}", PROBLEM,
         "vllm 0.10.0 engine/arg_utils.py:1148-1153, 0.10.2 :1295-1300, 0.11.0 :1299-1304 (`if "
         "self.speculative_config is not None: raise ValueError(...)` under `if self.async_scheduling`); vllm#24799",
         "--async-scheduling with speculative decoding", _vl_async_speculative, _vl_fix_async, fails=True),
    rule("vllm.async_scheduling_padded_drafter", f">={PADDED_ASYNC_FROM},<0.33.0", PROBLEM,
         "vllm 0.11.1 config/vllm.py:371-393, 0.13.0 :542-564, 0.14.0 :562-581, 0.20.0 :774-793, 0.32.0 :1553-1580 "
         "(`if self.scheduler_config.async_scheduling`: EAGLE/MTP methods only, then disable_padded_drafter_batch; "
         "every runner)",
         "--async-scheduling with disable_padded_drafter_batch", _vl_async_padded(_PADDED, None), _vl_fix_async,
         fails=True),
    rule("vllm.async_scheduling_padded_drafter", ">=0.33.0,<0.34.0", PROBLEM, f"{_V33_V1}, 1668-1679",
         "--async-scheduling with disable_padded_drafter_batch (V1 runner)", _vl_async_padded(_PADDED_V1, "v1"),
         _vl_fix_async, fails=True),
    rule("vllm.async_scheduling_padded_drafter_v1", ">=0.33.0,<0.34.0", WARNING, f"{_V33_V1}, 1668-1679",
         "--async-scheduling with disable_padded_drafter_batch, refused on the V1 runner",
         _vl_async_padded(_PADDED_V1, "either")),
    rule("vllm.async_scheduling_off_padded_drafter", ">=0.14.0,<0.33.0", WARNING,
         "vllm 0.14.0 config/vllm.py:588-617, 0.20.0 :798-829, 0.32.0 :1585-1619 (`elif ... async_scheduling is "
         "None`: EAGLE/MTP on, unless disable_padded_drafter_batch); scheduler.py async_scheduling None from 0.14.0 "
         "(vllm#31998)",
         "disable_padded_drafter_batch turns async scheduling off", _vl_async_off(_OFF, False)),
    rule("vllm.async_scheduling_off_padded_drafter", ">=0.33.0,<0.34.0", WARNING, f"{_V33_V1}, 1685-1719",
         "disable_padded_drafter_batch turns async scheduling off (V1 runner)", _vl_async_off(_OFF_V1, True)),
]  # fmt: skip


# The draft model's own settings (TP, revision, quantization of MTP layers) and keys no code reads here.
RULES += vllm_draft.RULES
# How a verify accepts drafts: the release's sampling method names, the synthetic and FLy keys, the lossy methods.
RULES += vllm_sampling.RULES


def _vl_chain(rule: FlagRule, st: State) -> None:
    spec = st.v["spec"]
    k = spec.get("num_speculative_tokens")
    if spec.get("method") in ("eagle", "eagle3") and isinstance(k, int) and k > 0 and "tree" not in st.v:
        st.emit(
            rule,
            "--speculative-config.num_speculative_tokens",
            k,
            k,
            f"vLLM drafts EAGLE-3 as a chain: k={k} proposes {k} tokens per verify, at most {k + 1} accepted; "
            f"SGLang equivalent --speculative-num-steps {k} --speculative-eagle-topk 1 "
            f"--speculative-num-draft-tokens {k + 1}",
        )


RULES += [
    rule("vllm.chain", ">=0.8.5", INFO,
       f"{VL_CFG} (one num_speculative_tokens, no topk); vllm-project/vllm#16035 (SGLang ndt - 1 = vLLM k)",
       "EAGLE-3 in vLLM is a chain", _vl_chain),
]  # fmt: skip


def _vl_speculators_unread(rule: FlagRule, st: State) -> None:
    served, _ = local_config(st.cmd.model)
    for flag, config in (("model", served), ("--speculative-config.model", st.drafter)):
        if config and config.get("speculators_model_type") is not None:
            where = "the served model" if flag == "model" else "the drafter"
            st.emit(
                rule,
                flag,
                st.cmd.model if flag == "model" else st.v["spec"].get("model", st.drafter_source),
                "refused at load",
                f"{where} is a speculators checkpoint, a format vLLM {st.version} does not read (from 0.10.1): "
                "its config.json has no model_type, and the engine refuses it at load ('Unrecognized model')",
            )
            return


def _vl_fix_speculators(st: State, change: Change) -> FlagFix:
    edit = vl_key_edit("model", "<the drafter converted: eaglewire convert SRC DST --to eagle>")
    return FlagFix(change.rule, (edit,), "serve the drafter in the EAGLE format (eaglewire convert --to eagle), "
                   "or upgrade to vLLM 0.10.1", mechanical=False)  # fmt: skip


RULES += [
    rule("vllm.speculators_unread", ">=0.8.5,<0.10.1", PROBLEM,
       "vllm 0.10.1 transformers_utils/config.py:81 (speculators config class; none before)", "a speculators "
       "checkpoint before 0.10.1", _vl_speculators_unread, _vl_fix_speculators, fails=True, stage="load",
       observed="vllm-0.8.5.post2-cpu.json, vllm-0.9.2.post2-cpu.json, vllm-0.10.0.post2-cpu.json (speculators/top, "
       "speculators/none)"),
]  # fmt: skip

# argparse: a prefix of a flag is that flag; an ambiguous prefix or a flag the release's parser does not define stops
# the launch (last, so an earlier row that knows a removed flag's history speaks for it)
PARSED_FIRST, PARSED_LAST = parsers.rows(VLLM)
RULES[:0] = PARSED_FIRST
RULES += PARSED_LAST
