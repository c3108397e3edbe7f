"""vLLM's methods beyond EAGLE-3: the method name check, mtp (the target's own MTP layers), ngram, suffix and
draft_model (a whole small model), and what SpeculativeConfig fills in for each: model, num_speculative_tokens,
draft tensor parallel size.

Read in vllm 0.33.0 (`vllm/config/speculative.py`) and checked against that code by `make test-engines`.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

from packaging.version import Version

from eaglewire.engines.vllm.args import VLLM
from eaglewire.engines.vllm.config import vl_key_edit
from eaglewire.rules import engine_data
from eaglewire.rules.context import local_config
from eaglewire.rules.flags import FlagRule, State, row
from eaglewire.rules.launch import INFO, PROBLEM, WARNING, Change, FlagFix

rule = functools.partial(row, VLLM)
CFG = "vllm 0.33.0 vllm/config/speculative.py"


# speculative.py:38-82 SpeculativeMethod (a Literal: case matters) and MTPModelTypes.
def _mtp_types() -> frozenset[str]:
    """MTPModelTypes of the newest release read (data/registry.json "mtp", from the wheel)."""
    data = json.loads(engine_data(VLLM, "registry.json").read_text())["releases"]
    return frozenset(data[max(data, key=Version)]["mtp"]["model_types"])


MTP_TYPES = _mtp_types()
METHODS = frozenset({"ngram", "draft_model", "suffix", "custom_class", "eagle", "eagle3", "extract_hidden_states",
                     "dflash", "ngram_gpu", "dspark", *MTP_TYPES})  # fmt: skip
# speculative.py:711-1100 hf_config_override: target model types whose config vLLM rewrites into an MTP draft
# (some only when the config carries MTP layers). Model types of dense families that have none:
MTP_SOURCES = frozenset({
    "deepseek_v3", "deepseek_v32", "glm_moe_dsa", "deepseek_v4", "pangu_ultra_moe", "kimi_k3", "mimo", "mimo_v2",
    "mimo_v2_flash", "glm4_moe", "glm4_moe_lite", "glm_ocr", "ernie4_5_moe", "nemotron_h", "qwen3_next", "qwen4_exp",
    "qwen4_exp_text", "bailing_hybrid", "exaone_moe", "exaone4_5", "qwen3_5", "qwen3_5_moe", "qwen3_5_text",
    "qwen3_5_moe_text", "longcat_flash", "step3p5", "step3p7", "step5", "step5_vl", "hy_v3", "hy_v4",
    "inkling_model", "inkling_mm_model", "dots3_note",
})  # fmt: skip
NO_MTP = frozenset({"llama", "qwen2", "qwen3", "qwen3_moe", "mistral", "gemma", "gemma2", "gemma3", "phi3",
                    "granite", "olmo2", "deepseek_v2"})  # fmt: skip
MODEL_FREE = {"ngram": "ngram", "ngram_gpu": "ngram_gpu", "suffix": "suffix"}


def _spec(st: State) -> dict:
    return st.v["spec"]


# 0.34.0: `method: SpeculativeMethod | str | None`, custom_class gone; its field validator refuses a name neither built
# in nor registered by a plugin (register_speculative_method)
METHODS_034 = METHODS - {"custom_class"}


def _vl_method_unknown(methods: frozenset[str], refusal: str) -> Callable[[FlagRule, State], None]:
    """A method not among `methods` (the release's), refused at startup with `refusal` ({method}: its repr)."""

    def apply(rule: FlagRule, st: State) -> None:
        method = _spec(st).get("method")
        if method is None or method in methods or method == "[ngram]":
            return
        hint = f" (did you mean {method.lower()!r}?)" if method.lower() in methods else ""
        st.emit(rule, "--speculative-config.method", method, None,
                f"method {method!r} is not one of vLLM's methods{hint}: {refusal.format(method=repr(method))}")  # fmt: skip

    return apply


def _fix_method_case(st: State, change: Change) -> FlagFix | None:
    low = str(change.given).lower()
    if low not in METHODS:
        return FlagFix(
            change.rule, (vl_key_edit("method", "eagle3"),), "a method vLLM knows", mechanical=False
        )
    return FlagFix(change.rule, (vl_key_edit("method", low),), f"method {low!r}: methods are lower case")


def _vl_model_free(rule: FlagRule, st: State) -> None:
    spec = _spec(st)
    method, model = spec.get("method"), spec.get("model")
    if method is None and model in ("ngram", "[ngram]"):
        st.emit(
            rule, "--speculative-config.method", None, "ngram", "model 'ngram' without a method: method ngram"
        )
        spec["method"] = "ngram"
    elif method == "[ngram]":
        spec["method"] = "ngram"
    method = spec.get("method")
    if method in MODEL_FREE and model is None and spec.get("num_speculative_tokens") is not None:
        st.emit(rule, "--speculative-config.model", None, MODEL_FREE[method],
                f"{method} needs no draft model: model is {MODEL_FREE[method]!r}")  # fmt: skip
        spec["model"] = MODEL_FREE[method]


def _vl_mtp_model(rule: FlagRule, st: State) -> None:
    spec = _spec(st)
    if (
        spec.get("method") == "mtp"
        and spec.get("model") is None
        and spec.get("num_speculative_tokens") is not None
    ):
        st.emit(rule, "--speculative-config.model", None, st.cmd.model,
                "mtp drafts with the target's own MTP layers: model is the target")  # fmt: skip
        spec["model"] = st.cmd.model
        if st.drafter is None and st.target_config is not None:
            st.drafter, st.drafter_source, st.drafter_kind = st.target_config, st.cmd.model, None


def _vl_suffix(native: bool) -> Callable[[FlagRule, State], None]:
    """Suffix decoding and its default draft count: before 0.34.0 arctic-inference's, k := its tree depth (a maximum,
    the number drafted dynamic); from 0.34.0 (`native`) vLLM's own speculator, k := min(8, tree depth), every slot
    verified."""

    def apply(rule: FlagRule, st: State) -> None:
        spec = _spec(st)
        if spec.get("method") != "suffix":
            return
        if not native:
            st.emit(rule, "--speculative-config.method", "suffix", "suffix",
                    "suffix decoding needs the arctic-inference package (pip install arctic-inference==0.1.1) on the "
                    "serving host: without it vLLM raises ImportError at startup")  # fmt: skip
            st.notes.append(
                "suffix decoding starts only where arctic-inference is installed (not checked here)"
            )
        if spec.get("num_speculative_tokens") is not None:
            return
        depth = spec.get("suffix_decoding_max_tree_depth", 24)
        if native:
            k = min(8, depth) if isinstance(depth, int) else 8
            said = f"min(8, suffix_decoding_max_tree_depth = {depth}) = {k}, every slot verified"
        else:
            k, said = (
                depth,
                f"suffix_decoding_max_tree_depth = {depth}, a maximum (the number drafted is dynamic)",
            )
        st.emit(rule, "--speculative-config.num_speculative_tokens", None, k,
                f"suffix decoding: num_speculative_tokens defaults to {said}")  # fmt: skip
        spec["num_speculative_tokens"] = k

    return apply


def _draft_model_type(st: State) -> str | None:
    config = st.drafter
    if config is None:
        return None
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    return config.get("model_type") or text.get("model_type")


def _detect(spec: dict, st: State) -> str:
    """speculative.py:1429-1500: after the draft config is read, the name and model type pick the method."""
    method, name = spec.get("method"), str(spec.get("model")).lower()
    if method in ("eagle", "eagle3", "dflash", "dspark"):
        return method
    if "eagle-" in name:
        return "eagle"
    if "eagle3" in name:
        return "eagle3"
    if "dflash" in name:
        return "dflash"
    if "dspark" in name:
        return "dspark"
    model_type = _draft_model_type(st)
    if model_type in MTP_TYPES or model_type in MTP_SOURCES:
        return "mtp"
    return method or "draft_model"


def _vl_detect_033(rule: FlagRule, st: State) -> None:
    spec = _spec(st)
    method, model = spec.get("method"), spec.get("model")
    if model is None or model in MODEL_FREE.values() or method not in (None, "draft_model", "mtp"):
        return
    found = _detect(spec, st)
    if found != method:
        why = ("the model name" if found in ("eagle", "eagle3", "dflash", "dspark")
               else f"the draft config's model_type {_draft_model_type(st)!r}" if found == "mtp"
               else "no name pattern or MTP model type matched")  # fmt: skip
        st.emit(
            rule,
            "--speculative-config.method",
            method,
            found,
            f"method {'not given' if method is None else repr(method)}: vLLM detects {found!r} from {why}",
        )
        spec["method"] = found


def _vl_detect_034(rule: FlagRule, st: State) -> None:
    """0.34.0 detects a method only where none is configured: an explicit draft_model or mtp is kept as given (and
    checked against the speculator the draft model declares)."""
    if _spec(st).get("method") is None:
        _vl_detect_033(rule, st)


def _mtp_target_case(st: State) -> tuple[str, str] | None:
    """Why `mtp` has no MTP layer to draft with: ("no-layers", model type) for a DeepSeek-family checkpoint whose
    num_nextn_predict_layers is 0, ("no-mtp", model type) for an architecture without MTP; None otherwise (with a
    note where the draft config is not local)."""
    spec = _spec(st)
    if spec.get("method") != "mtp" or spec.get("model") is None:
        return None
    model_type = _draft_model_type(st)
    layers = (st.drafter or {}).get("num_nextn_predict_layers")
    if model_type in ("deepseek_v3", "deepseek_v32", "glm_moe_dsa", "deepseek_mtp") and layers == 0:
        return "no-layers", model_type
    if model_type is None:
        note = "mtp: the draft config is not local, so its MTP layers were not checked"
        if note not in st.notes:
            st.notes.append(note)
    return ("no-mtp", model_type) if model_type in NO_MTP else None


def _vl_mtp_target(cases: tuple[str, ...]) -> Callable[[FlagRule, State], None]:
    """The rule for the `cases` of _mtp_target_case it reports: before 0.34.0 both fail at startup; from 0.34.0 the
    config accepts an architecture without MTP and loads it whole as the draft."""

    def apply(rule: FlagRule, st: State) -> None:
        found = _mtp_target_case(st)
        if found is None or found[0] not in cases:
            return
        (case, model_type), model = found, _spec(st)["model"]
        if case == "no-layers":
            said = (f"mtp needs MTP layers; {model} has num_nextn_predict_layers 0 (n_predict 0): ZeroDivisionError "
                    "(or num_speculative_tokens 0) at startup")  # fmt: skip
        elif st.version >= Version("0.34.0"):
            said = (f"mtp needs a checkpoint with MTP layers; {model} is model_type {model_type!r}. vLLM {st.version}'s "
                    "config no longer refuses it: its MTP speculator loads that checkpoint whole as the draft (a second "
                    "copy of the target, with no MTP layer to draft with)")  # fmt: skip
        else:
            said = (f"mtp needs a checkpoint with MTP layers; {model} is model_type {model_type!r}: "
                    "NotImplementedError \"Unsupported speculative method: 'mtp'\" at startup")  # fmt: skip
        st.emit(rule, "--speculative-config.method", "mtp", None, said)

    return apply


def _vl_mtp_tokens(rule: FlagRule, st: State) -> None:
    spec = _spec(st)
    if (
        spec.get("method") == "mtp"
        and spec.get("model") is not None
        and spec.get("num_speculative_tokens") is None
    ):
        st.emit(rule, "--speculative-config.num_speculative_tokens", None, None,
                "mtp without num_speculative_tokens: `self.num_speculative_tokens > 1` compares None with an int, "
                "TypeError at startup (the n_predict default comes later)")  # fmt: skip


def _fix_mtp_target(st: State, change: Change) -> FlagFix:
    return FlagFix(change.rule, (vl_key_edit("method", "eagle3"), vl_key_edit("model", "<path of the EAGLE-3 drafter>")),
                   "this target has no MTP layers: use an EAGLE-3 drafter", mechanical=False)  # fmt: skip


def _vocab(config: dict | None) -> int | None:
    if config is None:
        return None
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    value = config.get("vocab_size", text.get("vocab_size"))
    return value if isinstance(value, int) else None


def _vl_vocab(rule: FlagRule, st: State) -> None:
    spec = _spec(st)
    if spec.get("method") != "draft_model" or spec.get("use_heterogeneous_vocab"):
        return
    draft, _ = local_config(spec.get("model"))
    target, drafted = _vocab(st.target_config), _vocab(draft or st.drafter)
    if target is None or drafted is None:
        st.notes.append(
            "draft_model: the vocabulary sizes were not both readable here, so they were not compared"
        )
        return
    if target != drafted:
        st.emit(rule, "--speculative-config.model", spec.get("model"), None,
                f"Target and draft model should have the same vocabulary size ({target} vs {drafted}): ValueError "
                "at startup")  # fmt: skip


def _fix_vocab(st: State, change: Change) -> FlagFix:
    return FlagFix(change.rule, (vl_key_edit("model", "<a draft model with the target's tokenizer>"),),
                   "a draft model with the target's vocabulary", mechanical=False)  # fmt: skip


METHOD_RULES = [
    rule("vllm.method_choices", ">=0.33.0,<0.34.0", PROBLEM,
       f"{CFG}:38-82 (SpeculativeMethod is a Literal: lower case, exact names)",
       "unknown or upper-case method", _vl_method_unknown(METHODS, "pydantic ValidationError at startup"),
       _fix_method_case, fails=True),
    rule("vllm.method_choices", ">=0.34.0", PROBLEM,
       "vllm 0.34.0 config/speculative.py:90-97, 461 (`SpeculativeMethod | str`: no custom_class), 1623-1634 "
       "(_validate_method: 'Unknown speculative method' unless built in or registered by a plugin)",
       "unknown or upper-case method", _vl_method_unknown(METHODS_034, "'Unknown speculative method {method}. "
       "Built-in methods: [...]' (pydantic ValidationError) at startup, unless a plugin registers it "
       "(register_speculative_method)"), _fix_method_case, fails=True),
    rule("vllm.model_free_methods", ">=0.33.0", INFO,
       f"{CFG}:1240-1244 (model 'ngram' -> method ngram), 1276-1283 (ngram/suffix need no model)",
       "ngram and suffix need no draft model", _vl_model_free),
    rule("vllm.mtp_model", ">=0.33.0", INFO,
       f"{CFG}:1252-1268 (mtp without a model drafts with the target)", "mtp uses the target", _vl_mtp_model),
    rule("vllm.suffix_decoding", ">=0.33.0,<0.34.0", WARNING,
       f"{CFG}:1333-1334, 1726-1739 _validate_suffix_decoding (arctic-inference; k := max tree depth 24)",
       "suffix decoding needs arctic-inference", _vl_suffix(native=False)),
    rule("vllm.suffix_decoding", ">=0.34.0", INFO,
       "vllm 0.34.0 v1/worker/gpu/spec_decode/suffix/config.py:24-32 (k := min(8, max tree depth)), "
       "suffix/speculator.py:23-41 (vLLM's own speculator: no arctic-inference)",
       "suffix decoding's default draft count", _vl_suffix(native=True)),
]  # fmt: skip
DETECT_RULES = [
    rule("vllm.method_detect", ">=0.33.0,<0.34.0", INFO,
       f"{CFG}:1429-1500 (after the draft config: 'eagle-' -> eagle, 'eagle3' -> eagle3, dflash, dspark, MTP "
       "model types -> mtp; also for an explicit draft_model or mtp)",
       "method from the model name and draft model type", _vl_detect_033),
    rule("vllm.method_detect", ">=0.34.0", INFO,
       "vllm 0.34.0 v1/worker/gpu/spec_decode/speculator_config.py:400-445 _resolve_checkpoint_config_class "
       "(detected only when no method is configured: the draft's declared speculator, else 'eagle-', 'eagle3', "
       "dflash, dspark, MTP in that order; a configured method is kept), eagle/config.py:41-63 (name patterns)",
       "method from the model name and draft model type, when not given", _vl_detect_034),
    rule("vllm.mtp_tokens_required", ">=0.33.0", PROBLEM,
       f"{CFG}:1473-1495 (`if self.num_speculative_tokens > 1 and ...` right after detecting mtp)",
       "mtp needs num_speculative_tokens", _vl_mtp_tokens,
       lambda st, c: FlagFix(c.rule, (vl_key_edit("num_speculative_tokens", 1),), "num_speculative_tokens 1 "
                             "(one per MTP layer)"), fails=True),
    rule("vllm.mtp_unsupported_target", ">=0.33.0,<0.34.0", PROBLEM,
       f"{CFG}:1474-1500 (`else: raise NotImplementedError(f\"Unsupported speculative method: '{{self.method}}'\")`), "
       "755-763 and 1597-1610 (n_predict := num_nextn_predict_layers; k % n_predict)",
       "mtp on a checkpoint without MTP layers", _vl_mtp_target(("no-layers", "no-mtp")), _fix_mtp_target, fails=True),
    rule("vllm.mtp_unsupported_target", ">=0.34.0", PROBLEM,
       "vllm 0.34.0 v1/worker/gpu/spec_decode/speculator_config.py:274-290 (k % n_predict with n_predict 0; its "
       "argument code, run by make test-engines: ZeroDivisionError at :285)",
       "mtp on a DeepSeek checkpoint with no MTP layer", _vl_mtp_target(("no-layers",)), _fix_mtp_target, fails=True),
    rule("vllm.mtp_target_as_draft", ">=0.34.0", PROBLEM,
       "vllm 0.34.0 v1/worker/gpu/spec_decode/mtp/config.py:42-54 (the draft is the target's checkpoint), "
       "mtp/speculator.py:15-20 and eagle/utils.py:118-133 (load_eagle_model: get_model of the draft config, its "
       "architectures as written; the argument code, run by make test-engines, accepts mtp on Llama and Qwen3); "
       "what the first draft step does then is read, not run",
       "mtp on an architecture without MTP layers", _vl_mtp_target(("no-mtp",)), _fix_mtp_target),
]  # fmt: skip
VOCAB_RULES = [
    rule("vllm.draft_model_vocab", ">=0.33.0", PROBLEM,
       f"{CFG}:2036-2056 verify_equal_vocab_size_if_draft_model", "draft_model vocab must equal the target's",
       _vl_vocab, _fix_vocab, fails=True),
]  # fmt: skip
