"""SGLang: the checkpoint structure it chokes on, one row per behaviour and version range, each citing its source
(docs/engine-facts.md; docs/conventions.md (b), (c)). The rows every engine shares are in `engines/structure.py`,
which also orders all rows; what a row is, in `rules/structure.py`.
"""

from __future__ import annotations

from packaging.version import Version

from eaglewire.engines.sglang.draft import (
    CTX_RECORDS,
    CTX_SOURCE,
    EMBEDDING_ROWS,
    ROTARY_RAISED,
    context_length,
)
from eaglewire.rules.structure import (
    Context,
    StructureRule,
    copied,
    norm_output_meaning,
    rule,
    sliding,
    unhonoured,
)

RULES: list[StructureRule] = []

# ---- format and architecture routing -----------------------------------------------------------------------

EAGLE3 = ("LlamaForCausalLMEagle3",)
MLA = ("Eagle3DeepseekV2ForCausalLM",)


@rule(
    RULES,
    "format-unsupported",
    "sglang",
    "",
    "problem",
    "sglang 0.4.5-0.5.23: no speculators_model_type anywhere",
)
def speculators_format(c: Context) -> str | None:
    if c.speculators:
        return (
            "SGLang has no speculators-format support (no transformer_layer_config); convert the drafter with "
            "`eaglewire convert --to eagle`"
        )
    return None


@rule(RULES, "architecture-routing", "sglang", ">=0.5.12", "problem",
      "sglang 0.5.23 models/llama_eagle3.py:387 EntryClass, kimi_k25_eagle3.py:523; configs/model_config.py:1032-1131")  # fmt: skip
def architecture_routing(c: Context) -> str | None:
    return _route(c, EAGLE3 + MLA)


@rule(
    RULES,
    "architecture-routing",
    "sglang",
    "<0.5.12",
    "problem",
    "sglang 0.4.5-0.5.11 models/llama_eagle3.py EntryClass",
)
def architecture_routing_old(c: Context) -> str | None:
    return _route(c, EAGLE3)


def _route(c: Context, known: tuple[str, ...]) -> str | None:
    if c.speculators or not c.architecture or c.architecture in known:
        return None
    return (
        f"architectures[0] is {c.architecture!r}: SGLang routes by that name and has EAGLE-3 classes only for "
        f"{', '.join(known)}; this drafter would load as another class (or fail). Set architectures to "
        f"[{known[0]!r}]"
    )


# SGLang builds the EAGLE-3 head's decoder layers from num_hidden_layers from 0.5.12; before, and in its MLA class at
# every release, it builds one and refuses any other count at load
MULTI_LAYER_FROM = Version("0.5.12")


@rule(RULES, "draft-layers", "sglang", "", "problem",
      "sglang llama_eagle3.py:159-160 @0.4.5, :212-213 @0.5.11 (ValueError \"EAGLE3 currently only supports 1 "
      "layer\"), :180-185 @0.5.12 (range(num_hidden_layers)); kimi_k25_eagle3.py:207 @0.5.12, :243 @0.5.17-0.5.23; "
      "SpecForge#129")  # fmt: skip
def draft_layers(c: Context) -> str | None:
    n, mla = c.draft_layers, c.architecture in MLA
    if n == 1 or (c.version >= MULTI_LAYER_FROM and not mla):
        return None
    which = f"its MLA EAGLE-3 class ({MLA[0]})" if mla else f"SGLang {c.version}"
    held = c.held_layers is not None and c.held_layers < n  # the fix is the layer count held (copied())
    fix = ("" if held else "no SGLang release builds a multi-layer MLA head" if mla
           else f"SGLang {MULTI_LAYER_FROM} and later build {n}")  # fmt: skip
    return (
        f"num_hidden_layers is {n}: {which} builds a one-layer EAGLE-3 head and refuses any other count at load "
        f"(ValueError: EAGLE3 currently only supports 1 layer); {copied(c)}{fix}".rstrip("; ")
    )


# ---- norm options -----------------------------------------------------------------------------------------------


@rule(RULES, "norm-before-residual", "sglang", "", "problem", "sglang 0.4.5-0.5.23: norm_before_residual never read (llama_eagle3.py)")  # fmt: skip
def norm_before_residual(c: Context) -> str | None:
    return unhonoured(c, "norm_before_residual", False)


@rule(RULES, "norm-before-fc", "sglang", "", "problem", "sglang llama_eagle3.py:161-175 @0.5.17 (eagle_config first, then top-level); kimi_k25_eagle3.py: never")  # fmt: skip
def norm_before_fc(c: Context) -> str | None:
    mla = c.architecture in MLA
    return unhonoured(c, "norm_before_fc", c.version >= Version("0.5.17") and not mla)


@rule(RULES, "fc-norm-norm-output", "sglang", "", "problem", "sglang llama_eagle3.py:166-178, 188 @0.5.12; kimi_k25_eagle3.py:228-241 @0.5.23 (from 0.5.13)")  # fmt: skip
def fc_norm_norm_output(c: Context) -> str | None:
    since = Version("0.5.13") if c.architecture in MLA else Version("0.5.12")
    return unhonoured(c, "fc_norm", c.version >= since) or unhonoured(c, "norm_output", c.version >= since)


@rule(RULES, "norm-output-meaning", "sglang", ">=0.5.12", "unverified", "sglang llama_eagle3.py:263-269 @0.5.23; SpecForge llama3_eagle.py:1690, 1772-1777 @a6b6b02; docs/conventions.md (c) 2")  # fmt: skip
def norm_output(c: Context) -> str | None:
    since = Version("0.5.13") if c.architecture in MLA else Version("0.5.12")
    return norm_output_meaning(c, "SGLang", c.version >= since)


# ---- vocabulary, embeddings, lm_head -----------------------------------------------------------------------


# from 0.5.5 the draft's logits processor is built for draft_vocab_size (llama_eagle3.py:220-224 @0.5.5); before, for
# the whole vocabulary, whose top-k ids then index the draft_vocab_size-long d2t table
DRAFT_VOCAB_LOGITS_FROM = Version("0.5.5")


@rule(RULES, "tied-reduced-vocab", "sglang", "", "problem", "sglang llama_eagle3.py:202-215 @0.5.4 (LogitsProcessor(config): the whole vocabulary), eagle_worker.py:554, 606 @0.5.4 (hot_token_id[topk_index]); llama_eagle3.py:207-224 @0.5.5, 303-322 @0.5.23; SpecForge#139, AngelSlim#16, sglang#8230")  # fmt: skip
def tied_reduced_vocab(c: Context) -> str | None:
    if c.cfg.get("tie_word_embeddings") is True and c.reduced_vocab:
        what = (
            "scores the first draft_vocab_size embedding rows: garbage drafts"
            if c.version >= DRAFT_VOCAB_LOGITS_FROM
            else "scores the whole vocabulary, whose top-k ids index the draft_vocab_size-long d2t map out of "
            "bounds: index out of bounds at startup (while the draft's CUDA graphs are captured)"
        )
        return (
            "tie_word_embeddings is true with a reduced draft vocabulary: SGLang ties lm_head to the (target's) "
            f"embedding, drops the trained lm_head and {what}; set tie_word_embeddings to false"
        )
    return None


# the release range and source are the embedding row's (engines/sglang/draft.py EMBEDDING_ROWS): the EAGLE
# worker's set_embed, every release
_FROM_TARGET = next(r for r in EMBEDDING_ROWS if r.embedding == "target")


@rule(RULES, "embedding-replaced", "sglang", _FROM_TARGET.versions, "info", _FROM_TARGET.source)
def embedding_replaced(c: Context) -> str | None:
    declared = c.cfg.get("target_hidden_size")
    if c.has_tensor("embed_tokens.weight") and (declared is None or declared == c.cfg.get("hidden_size")):
        return (
            "SGLang computes with the target's embedding in place of the drafter's own embed_tokens (set_embed): "
            "right when it is a frozen copy of the target's, as SpecForge and speculators train them (`test "
            "--engine` and `doctor` walk the draft with the target's embedding)"
        )
    return None


@rule(RULES, "own-embedding-missing", "sglang", "", "problem", "sglang llama.py:910-918 @0.5.23 (set_embed returns early when target_hidden_size != hidden_size)")  # fmt: skip
def own_embedding_missing(c: Context) -> str | None:
    th, h = c.cfg.get("target_hidden_size"), c.cfg.get("hidden_size")
    if (
        isinstance(th, int)
        and isinstance(h, int)
        and th != h
        and c.ckpt.has_weights
        and not c.has_tensor("embed_tokens.weight")
    ):
        return "target_hidden_size != hidden_size keeps the drafter's own embed_tokens, and it has none: uninitialised"
    return None


# ---- RoPE, context, sliding window -------------------------------------------------------------------------


# SGLang serves the draft at the target's context length: from 0.5.1 (SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN off by
# default) a drafter declaring less is refused at load; before, the length is raised while the draft's rotary table
# keeps the drafter's rows (raised with it only from 0.5.3, where the env var allows it at all).
@rule(RULES, "draft-context", "sglang", "", "problem", f"{CTX_SOURCE}; {CTX_RECORDS}", CTX_RECORDS)  # fmt: skip
def draft_context(c: Context) -> str | None:
    target, draft = context_length(c.target.config), context_length(c.cfg)
    if target is None or draft is None or draft >= target:
        return None
    fix = (f"fix: set max_position_embeddings to {target} in the drafter's config.json (the target's), or serve "
           f"with --context-length {draft}")  # fmt: skip
    if c.version >= Version("0.5.1"):
        return (f"the drafter's context length {draft} is below the target's {target}, at which SGLang builds the "
                f"draft: ValueError \"Target model's context_length ({target}) is greater than the derived "
                f"context_length ({draft})\" when the draft loads (SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN is "
                f"off by default from 0.5.1); {fix}{_overwrite(c, draft)}")  # fmt: skip
    return (f"SGLang raises the draft's context length to the target's {target}, while its rotary table keeps the "
            f"{draft} rows the drafter declares (max_position_embeddings is raised with it only from {ROTARY_RAISED}): "
            f"positions past {draft} index outside the table (garbage drafts, or a device-side assert); {fix}")  # fmt: skip


def _overwrite(c: Context, draft: int) -> str:
    """What the way out the engine's own error names does at this release."""
    said = "; SGLANG_ALLOW_OVERWRITE_LONGER_CONTEXT_LEN=1, which the error suggests, "
    if c.version >= ROTARY_RAISED:
        return (
            said + "raises the draft's rotary table with its length (a RoPE the drafter was not trained past)"
        )
    return said + (f"serves it with the drafter's {draft}-row rotary table: garbage drafts past {draft} tokens "
                   f"(max_position_embeddings is raised with the length only from {ROTARY_RAISED}; SpecForge#249)")  # fmt: skip


@rule(RULES, "sliding-window-ignored", "sglang", "", "warning", "sglang llama_eagle3.py:286-299 @0.5.23 (draft sliding_window/layer_types never read)")  # fmt: skip
def sliding_window_ignored(c: Context) -> str | None:
    if sliding(c):
        return "the drafter is configured with a sliding window, which SGLang does not apply (only --speculative-draft-window-size does)"
    return None


# ---- user reports whose cause is not established -----------------------------------------------------------


@rule(RULES, "reported-qwen-vl", "sglang", "==0.5.5.*", "unverified", "sgl-project/SpecForge#310 (accept length 2.2 on 0.5.4, ~1.0 on 0.5.5.post3)")  # fmt: skip
def reported_qwen_vl(c: Context) -> str | None:
    if c.target.family in ("qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe"):
        return "users report accept length ~1.0 for Qwen-VL targets on SGLang 0.5.5 (cause not established); 0.5.4 worked"
    return None


# eagle_config.use_aux_hidden_state is read from this release (spec_aux_hidden_state.py:186-191 @0.5.23); before, aux states are always captured
AUX_FLAG_READ_FROM = "0.5.8"
