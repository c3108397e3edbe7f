"""SGLang's draft-model settings and the speculative arguments it silently drops: how the draft's quantization and
context length follow the target's, arguments that only another algorithm (or a missing companion flag) reads,
and flags a release does not define.

Read in the sglang wheels 0.4.5-0.5.23 (`scripts/speculative_args.py` found the arguments; the rows below cite
where each is used). `engines/arguments.py` lists, per argument, which of these rows covers it.
"""

from __future__ import annotations

import functools
from collections.abc import Callable

from packaging.version import Version

from eaglewire.engines.sglang.args import SG_FLAGS, SGLANG
from eaglewire.rules import scanned
from eaglewire.rules.context import heads_tp_fix, heads_unsplit
from eaglewire.rules.draft_weights import DraftEmbedding, DraftHead
from eaglewire.rules.flags import FlagRule, ReadWhen, State, row
from eaglewire.rules.launch import PROBLEM, WARNING, Change, Edit, FlagFix

rule = functools.partial(row, SGLANG)
RULES: list[FlagRule] = []


def _separate_draft(st: State) -> bool:
    """The drafter is its own checkpoint (EAGLE/EAGLE3/STANDALONE with a path other than the target's)."""
    draft = st.given["draft_model"]
    return draft is not None and draft != st.cmd.model


# ---- the draft's quantization -------------------------------------------------------------------------------


def _sg_draft_quantization(known_drafter: bool) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        quant = st.v.get("quantization")
        if quant is None or st.v.get("draft_quantization") is not None or not _separate_draft(st):
            return
        if (st.drafter is not None) != known_drafter:
            return
        if st.drafter is not None and st.drafter.get("quantization_config"):
            return  # a quantized head: SGLang detects its own method (model_config.py _verify_quantization)
        head = (
            f"the drafter ({st.drafter_source}) carries no quantization_config, so SGLang quantizes"
            if known_drafter
            else "if the drafter (not local here) carries no quantization_config, SGLang quantizes"
        )
        st.emit(rule, "--speculative-draft-model-quantization", None, quant,
                f"--quantization {quant} is inherited by the draft model: {head} the EAGLE head to {quant} on the "
                "fly (or fails to load it, for checkpoint-only formats), and the head drafts with other numerics "
                "than it was trained with")  # fmt: skip

    return apply


def _fix_draft_quantization(flag_exists: bool) -> Callable[[State, Change], FlagFix]:
    def fix(st: State, change: Change) -> FlagFix:
        if flag_exists:
            edit = Edit("--speculative-draft-model-quantization", "unquant")
            return FlagFix(change.rule, (edit,), f"{edit.render()}: the head runs in its own dtype")
        return FlagFix(
            change.rule,
            (Edit("--quantization", remove=True),),
            "this release has no flag for the draft's quantization: serve a pre-quantized target checkpoint "
            "(its own config selects the method) instead of --quantization, or SGLang >= 0.5.7 with "
            "--speculative-draft-model-quantization unquant",
            mechanical=False,
        )

    return fix


_QUANT_SRC = (
    "sglang 0.4.5 managers/tp_worker.py:60-73 (the draft's ModelConfig gets quantization=server_args.quantization); "
    "0.5.4 configs/model_config.py:209-230 from_server_args"
)
_QUANT_SRC_057 = (
    "sglang 0.5.7 server_args.py:772-777 (`if self.speculative_draft_model_quantization is None: ... = "
    "self.quantization`; 'unquant' -> None), same in 0.5.8-0.5.18; 0.5.23 arg_groups/serving_hook.py:676-710, "
    "configs/model_config.py:945-966"
)
QUANT_RECORDS = (
    "model-code: engines/sglang/data/draft-settings/sglang-V.json, case 'eagle3/--quantization fp8'"
)


def _sg_draft_heads_tp(rule: FlagRule, st: State) -> None:
    tp = st.v["tp_size"] or 1
    found = heads_unsplit(st.drafter, int(tp)) if st.drafter is not None else None
    if found is not None:
        st.emit(rule, "--tp-size", tp, None,
                f"{found[0]}: SGLang's draft worker runs at the target's TP and the head's attention asserts at "
                "load (an AssertionError)")  # fmt: skip


RULES += [
    rule("sglang.draft_heads_tp", ">=0.4.5", PROBLEM,
         "sglang models/llama.py:118, 124-128 @0.4.5, :183, 189-193 @0.5.23 (the attention's head asserts; the "
         "draft worker at the target's tp_size)",
         "the draft's heads must split over the TP", _sg_draft_heads_tp,
         lambda st, c: heads_tp_fix(st.drafter, int(st.v["tp_size"] or 1), "--tp-size", c.rule), fails=True,
         stage="load"),
]  # fmt: skip


RULES += [
    rule("sglang.draft_quantization_inherited", ">=0.4.5,<0.5.7", PROBLEM, _QUANT_SRC,
         "the draft inherits --quantization (no draft flag)", _sg_draft_quantization(True),
         _fix_draft_quantization(False), observed=QUANT_RECORDS),
    rule("sglang.draft_quantization_inherited", ">=0.5.7", PROBLEM, _QUANT_SRC_057,
         "the draft inherits --quantization", _sg_draft_quantization(True), _fix_draft_quantization(True),
         observed=QUANT_RECORDS),
    rule("sglang.draft_quantization_inherited_unknown_drafter", ">=0.4.5", WARNING,
         f"{_QUANT_SRC}; {_QUANT_SRC_057}", "the draft inherits --quantization (drafter not local)",
         _sg_draft_quantization(False)),
]  # fmt: skip


# ---- the draft's context length ------------------------------------------------------------------------------

# sglang 0.5.23 utils/hf_transformers/common.py:668-694 get_context_length (same keys and rule in 0.4.5).
CONTEXT_LENGTH_KEYS = ("max_sequence_length", "seq_length", "max_seq_len", "model_max_length",
                       "max_position_embeddings")  # fmt: skip


def context_length(config: dict | None) -> int | None:
    """SGLang's derived context length of a config.json (its text config for a wrapper); None when the config
    has none of the keys (SGLang then assumes 2048: not a fact to decide on)."""
    if not isinstance(config, dict):
        return None
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else config
    rope = text.get("rope_scaling") or {}
    factor = rope.get("factor", 1) if isinstance(rope, dict) else 1
    if isinstance(rope, dict) and (
        "original_max_position_embeddings" in rope or rope.get("rope_type") == "llama3"
    ):
        factor = 1
    for key in CONTEXT_LENGTH_KEYS:
        value = text.get(key)
        if isinstance(value, int) and not isinstance(value, bool):
            return int(factor * value)
    return (
        None  # SGLang would assume 2048; a config without the keys (e.g. speculators') is not decided on that
    )


def _target_context(st: State) -> tuple[int | None, str]:
    given = st.v.get("context_length")
    if given is not None:
        return int(given), "--context-length"
    derived = context_length(st.target_config)
    return derived, "the target's config"


def _sg_draft_context(refuses: bool, allowed_by_default: bool) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        if not _separate_draft(st) or st.drafter is None:
            return
        target, where = _target_context(st)
        draft = context_length(st.drafter)
        if target is None or draft is None or target <= draft:
            return
        allowed = st.env_true("SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN", allowed_by_default)
        if allowed == refuses:
            return
        if refuses:
            msg = (f"the draft model runs at the target's context length {target} ({where}), above the "
                   f"drafter's own {draft} ({st.drafter_source}): ValueError \"Target model's context_length "
                   f"({target}) is greater than the derived context_length ({draft})\" when the draft loads")  # fmt: skip
        elif st.version < ROTARY_RAISED:
            msg = (f"the draft model's context length is raised to the target's {target} ({where}), above the "
                   f"{draft} the drafter ({st.drafter_source}) declares, while its rotary table keeps {draft} rows "
                   f"(max_position_embeddings is not raised before SGLang {ROTARY_RAISED}): positions past {draft} "
                   "index outside the table")  # fmt: skip
        else:
            msg = (f"the draft model's context length is raised to the target's {target} ({where}), above the "
                   f"{draft} the drafter ({st.drafter_source}) declares: its RoPE runs past the length it was "
                   "trained on")  # fmt: skip
        st.emit(rule, "--context-length", st.v.get("context_length"), None if refuses else target, msg)

    return apply


def _fix_draft_context(st: State, change: Change) -> FlagFix:
    draft = context_length(st.drafter)
    edit = Edit("--context-length", str(draft))
    return FlagFix(change.rule, (edit,), f"{edit.render()}: serve at the drafter's context length",
                   alternative="SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1 keeps the target's length and "
                   "stretches the drafter's RoPE past its trained length")  # fmt: skip


# the release that raises the draft config's max_position_embeddings with its context length (model-code records:
# 0.4.5-0.5.2 keep the drafter's, 0.5.3+ raise it)
ROTARY_RAISED = Version("0.5.3")
CTX_RECORDS = (
    "model-code: engines/sglang/data/draft-settings/sglang-V.json, cases 'eagle3/drafter context 2048*'"
)
CTX_SOURCE = (
    "sglang 0.4.5-0.5.14 speculative/eagle_worker.py (`server_args.context_length = target_worker.model_runner."
    "model_config.context_len` before the draft worker); 0.5.15+ `context_length=target_worker...context_len` "
    "(0.5.23 speculative/eagle_worker_v2.py:229, managers/tp_worker.py:468-482); the check in configs/"
    "model_config.py _derive_context_length (0.5.23:1291-1318)"
)
RULES += [
    rule("sglang.draft_context_length", ">=0.4.5,<0.5.1", PROBLEM,
         f"{CTX_SOURCE}; 0.4.5-0.4.10 SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN defaults to True",
         "the draft's context length is the target's: refused (env set false)", _sg_draft_context(True, True),
         _fix_draft_context, fails=True, stage="load", observed=CTX_RECORDS),
    rule("sglang.draft_context_length", ">=0.5.1", PROBLEM,
         f"{CTX_SOURCE}; from 0.5.1 SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN defaults to False",
         "the draft's context length is the target's: refused", _sg_draft_context(True, False),
         _fix_draft_context, fails=True, stage="load", observed=CTX_RECORDS),
    rule("sglang.draft_context_length_raised", ">=0.4.5,<0.5.1", WARNING, CTX_SOURCE,
         "the draft's context length is raised to the target's", _sg_draft_context(False, True),
         observed=CTX_RECORDS),
    rule("sglang.draft_context_length_raised", ">=0.5.1", WARNING,
         f"{CTX_SOURCE}; from 0.5.3 the draft's max_position_embeddings is raised too (0.5.23 model_config.py:"
         "1308-1312)", "the draft's context length is raised to the target's", _sg_draft_context(False, False),
         observed=CTX_RECORDS),
]  # fmt: skip


# ---- the draft's token embedding -----------------------------------------------------------------------------

# every row below, run: the release's loader builds and loads each drafter copy, then its EAGLE worker's own code
# shares the target's weights (tests/engines/draft_weights_sglang.py; replayed by tests/test_draft_weights_model_code.py)
WEIGHTS_EXECUTED = (
    "; model code, executed at every release 0.4.5-0.5.23: engines/sglang/data/draft-weights/sglang-V.json"
)

EMBEDDING_ROWS: tuple[DraftEmbedding, ...] = (
    DraftEmbedding(
        name="sglang.eagle3-embedding-from-target",
        engine=SGLANG,
        versions=">=0.4.5",
        embedding="target",
        why="the EAGLE worker hands the draft the target's embedding (`set_embed(embed)`), which replaces the "
        "drafter's own embed_tokens weight unless the drafter's target_hidden_size differs from its hidden_size",
        source="sglang 0.4.5 speculative/eagle_worker.py:122-124, models/llama.py:623-631 (set_embed); 0.5.23 "
        "speculative/eagle_worker_v2.py:353-363, models/llama.py:910-918" + WEIGHTS_EXECUTED,
        observed="sglang-0.5.23-cpu-draft-weights.json (tests/sglang_engine/records: SGLang 0.5.23 on the CPU "
        "served a copy of the zoo drafter with a random embedding; its reading, 2.653, is the walk under the "
        "target's embedding, not under its own, 1.130)",
    ),
)

# the lm_head the EAGLE-3 draft scores with, in the order LlamaForCausalLMEagle3.__init__ decides it (the first row
# whose case the drafter has wins; a drafter that has none scores with its own lm_head)
HEAD_ROWS: tuple[DraftHead, ...] = (
    DraftHead(
        name="sglang.eagle3-head-tied",
        engine=SGLANG,
        versions=">=0.4.5",
        case="tied",
        head="embedding",
        why="tie_word_embeddings makes lm_head the draft's embed_tokens module, whose weight the EAGLE worker then "
        "replaces with the target's embedding (set_embed): the checkpoint's lm_head is never read",
        source="sglang 0.4.5 models/llama_eagle3.py:167-168; 0.5.2 :202-203; 0.5.23 :302-303",
    ),
    DraftHead(
        name="sglang.eagle3-head-vocab-absent",
        engine=SGLANG,
        versions=">=0.4.5",
        case="vocab-absent",
        head="fails",
        why="AttributeError: 'LlamaConfig' object has no attribute 'draft_vocab_size' (the draft model reads "
        "config.draft_vocab_size, which only a config.json that names the key has)",
        fix='name the key: "draft_vocab_size": the lm_head\'s rows (the vocabulary size for a '
        "full-vocabulary head)",
        source="sglang 0.4.5 models/llama_eagle3.py:171; 0.5.2 :205; 0.5.23 :306" + WEIGHTS_EXECUTED,
        observed="sglang-0.5.23-cpu-draft-weights.json (tests/sglang_engine/records: the server exited at load with "
        "this AttributeError)",
    ),
    DraftHead(
        name="sglang.eagle3-head-vocab-null-fails",
        engine=SGLANG,
        versions=">=0.4.5,<0.5.2",
        case="vocab-null",
        head="fails",
        why="the draft's lm_head is built as ParallelLMHead(None, hidden_size): a TypeError at load",
        fix="give draft_vocab_size its value (the lm_head's rows), or serve SGLang >= 0.5.2, which lends "
        "the target's lm_head",
        source="sglang 0.4.5 models/llama_eagle3.py:170-175; 0.5.1.post3 :191-196 (no load_lm_head_from_target)"
        + WEIGHTS_EXECUTED,
    ),
    DraftHead(
        name="sglang.eagle3-head-from-target",
        engine=SGLANG,
        versions=">=0.5.2",
        case="vocab-null",
        head="target",
        why="load_lm_head_from_target: the draft gets a full-vocabulary head and the EAGLE worker replaces it with "
        "the target's lm_head (set_embed_and_head), whatever the checkpoint's lm_head holds",
        source="sglang 0.5.2 models/llama_eagle3.py:201-207, speculative/eagle_worker.py:146-149; 0.5.23 "
        "models/llama_eagle3.py:302-308, speculative/eagle_worker_v2.py:355-360" + WEIGHTS_EXECUTED,
        observed="sglang-0.5.23-cpu-draft-weights.json (tests/sglang_engine/records: SGLang 0.5.23 on the CPU "
        "served copies of the zoo drafter with a random lm_head and with none; its reading, 2.073, is the walk "
        "under the target's lm_head, 2.081, not under its own, 1.016)",
    ),
    DraftHead(
        name="sglang.eagle3-head-unloaded",
        engine=SGLANG,
        versions=">=0.4.5",
        case="head-missing",
        head="unloaded",
        why="the draft's lm_head is allocated (torch.empty) and no checkpoint tensor fills it: SGLang's loader does "
        "not check for unloaded parameters, so the draft scores with uninitialised memory",
        fix='ship the lm_head the drafter was trained with, or say "draft_vocab_size": null to score with '
        "the target's (from 0.5.2)",
        source="sglang 0.4.5 models/llama_eagle3.py:178-215 (load_weights skips what the checkpoint lacks); 0.5.23 "
        ":325-378",
    ),
)


# ---- arguments only another algorithm (or a missing companion flag) reads ------------------------------------


def _algorithm(*names: str) -> Callable[[State], bool]:
    return lambda st: st.v["algorithm"] in names


SPEC = "sglang 0.5.23"
ARGUMENT_READERS: tuple[ReadWhen, ...] = (
    ReadWhen(SGLANG, "--speculative-ngram-match-type", ">=0.5.3,<0.5.10", lambda st: False,
             "never: no code reads it (the n-gram cache keeps its default match type 'BFS')",
             "sglang 0.5.3-0.5.9: declared in server_args.py and read nowhere; speculative/cpp_ngram/ngram_cache.py:"
             "32 defaults match_type='BFS' (0.5.10 speculative/ngram_worker.py is the first reader)"),
    ReadWhen(SGLANG, "--decrypted-draft-config-file", ">=0.5.5,<0.5.9", lambda st: False, "never: no code reads it",
             "sglang 0.5.5-0.5.8: declared in server_args.py and read nowhere (0.5.9 is the first reader)"),
    ReadWhen(SGLANG, "--spec-trace-dir", ">=0.5.15", lambda st: False, "never: no code reads it",
             "sglang 0.5.15-0.5.23: declared (0.5.23 arg_groups/fields/spec.py:245) and read nowhere "
             "(engine_args/sglang.json: reads 0)"),
    ReadWhen(SGLANG, "--speculative-ngram-", ">=0.5.3", _algorithm("NGRAM"), "with --speculative-algorithm NGRAM",
             f"{SPEC} speculative/ngram_worker.py:100-124 (their only reader; 0.5.3-0.5.9 speculative/"
             "ngram_worker.py too)"),
    ReadWhen(SGLANG, "--speculative-dflash-block-size", ">=0.5.11", _algorithm("DFLASH"), "with DFLASH",
             f"{SPEC} arg_groups/speculative_hook.py:368 (_handle_dflash only)"),
    ReadWhen(SGLANG, "--speculative-domino-candidate-pool-size", ">=0.5.20", _algorithm("DFLASH"), "with DFLASH",
             f"{SPEC} speculative/dflash_worker_v2.py:462 (its only reader)"),
    ReadWhen(SGLANG, "--speculative-dspark-", ">=0.5.16", _algorithm("DSPARK"), "with DSPARK",
             f"{SPEC} arg_groups/speculative_hook.py:807-878 (_handle_dspark), speculative/dspark_components/"
             "dspark_planner.py:87-92, 1049"),
    ReadWhen(SGLANG, "--uno-lora-path", ">=0.5.20", _algorithm("UNO"), "with UNO",
             f"{SPEC} arg_groups/speculative_hook.py:459 (_handle_uno), speculative/uno_lora.py:28"),
    ReadWhen(SGLANG, "--speculative-adaptive-config", ">=0.5.11", lambda st: bool(st.v["adaptive"]),
             "with --speculative-adaptive",
             f"{SPEC} arg_groups/speculative_hook.py:1392-1399, speculative/eagle_worker_v2.py:1347-1353, "
             "spec_info.py:277-285 (each behind `if speculative_adaptive`); 0.5.11 speculative/eagle_worker.py:120"),
    ReadWhen(SGLANG, "--speculative-draft-window-size", ">=0.5.12", _algorithm("EAGLE", "EAGLE3", "DFLASH"),
             "with EAGLE, EAGLE3, NEXTN or DFLASH",
             f"{SPEC} arg_groups/speculative_hook.py:197-214 ('--speculative-draft-window-size has no effect with "
             "speculative_algorithm=...'), models/llama_eagle3.py:289, speculative/spec_utils.py:336"),
    ReadWhen(SGLANG, "--speculative-draft-sink-size", ">=0.5.21", _algorithm("EAGLE"),
             "by the built-in EAGLE/NEXTN/MTP draft-decode path (the Llama EAGLE-3 and DFLASH windows ignore it)",
             f"{SPEC} fields/spec.py:169 (help), speculative/spec_utils.py:336-355 (its only reader outside "
             "validation); models/llama_eagle3.py:289 reads the window only"),
)  # fmt: skip


def _given_flags(st: State, entry: ReadWhen) -> list[str]:
    if entry.name.endswith("-"):
        return sorted({o.flag for o in st.cmd.options if o.flag.startswith(entry.name)})
    return [entry.name] if st.cmd.has(entry.name) else []


def _sg_not_read(entries: tuple[ReadWhen, ...]) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        done: set[str] = set()
        here = f"with --speculative-algorithm {st.v['algorithm']}"
        for entry in (e for e in entries if e.unread(st)):
            for flag in [f for f in _given_flags(st, entry) if f not in done]:
                done.add(flag)
                st.emit(rule, flag, st.cmd.get(flag), None, entry.message(flag, "SGLang", st.version, here))

    return apply


def _fix_not_read(st: State, change: Change) -> FlagFix:
    alternative = "or add --speculative-adaptive" if change.flag == "--speculative-adaptive-config" else None
    return FlagFix(change.rule, (Edit(change.flag, remove=True),), f"remove {change.flag}: it has no effect here",
                   alternative=alternative)  # fmt: skip


RULES += [
    rule("sglang.argument_not_read", ">=0.5.3", PROBLEM,
         "per argument, in ARGUMENT_READERS (sglang_draft.py): the code that reads it, read in sglang 0.5.23 and "
         "the release that added it", "an argument only another algorithm (or a missing flag) reads",
         _sg_not_read(ARGUMENT_READERS), _fix_not_read, families=("*",)),
]  # fmt: skip


# ---- flags a release does not define -------------------------------------------------------------------------


def _sg_flag_missing(rule: FlagRule, st: State) -> None:
    release = scanned.nearest(SGLANG, st.version)
    here = {f for a in scanned.arguments(SGLANG, release).values() for f in a["flags"]}
    known = {
        f
        for r in scanned.releases(SGLANG)
        for a in scanned.arguments(SGLANG, r).values()
        if a["kind"] == "speculative"
        for f in a["flags"]
    }
    for flag in dict.fromkeys(o.given_as.split("=")[0] for o in st.cmd.options):
        canonical = next((c for c, s in SG_FLAGS.items() if flag in s.aliases), flag)
        if flag in known and flag not in here and canonical not in here:
            first = next(r for r in scanned.releases(SGLANG)
                         if flag in {f for a in scanned.arguments(SGLANG, r).values() for f in a["flags"]})  # fmt: skip
            st.emit(rule, flag, st.cmd.get(canonical), None,
                    f"{flag} is not an argument of sglang {st.version} (read: {release}; it exists from "
                    f"{first} on, or was removed): argparse exits with 'unrecognized arguments'")  # fmt: skip


# Runs first (sglang.py): argparse refuses the command before any resolution.
RELEASE_RULES = [
    rule("sglang.flag_not_in_release", ">=0.4.5", PROBLEM,
         "engine_args/sglang.json (the arguments each release's server_args.py / arg_groups/fields define, "
         "scripts/speculative_args.py)", "a speculative flag the release does not define", _sg_flag_missing,
         lambda st, c: FlagFix(c.rule, (Edit(c.flag, remove=True),), f"remove {c.flag} (or upgrade SGLang)"),
         fails=True, families=("*",)),
]  # fmt: skip
