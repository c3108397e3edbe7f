"""vLLM: the checkpoint structure it chokes on, one row per behaviour and version range, each citing its source
(docs/engine-facts.md; docs/conventions.md (b), (c)). The rows every engine shares are in `engines/structure.py`,
which also orders all rows; what a row is, in `rules/structure.py`.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from eaglewire.engines.vllm.draft import CONTEXT_ROWS, EMBEDDING_ROWS
from eaglewire.rules.draft_context import choose, model_length
from eaglewire.rules.structure import (
    Context,
    Said,
    StructureRule,
    copied,
    norm_output_meaning,
    rule,
    sliding,
    unhonoured,
)

RULES: list[StructureRule] = []

# ---- format and architecture routing -----------------------------------------------------------------------

# the running engines that refused an architecture at a release its route leaves out (rules.structure.seen_at)
ROUTES_OBSERVED = {
    "LlamaForCausalLMEagle3": 'vllm-0.10.1.post2-cpu.json, vllm-0.10.1.1.post2-cpu.json ("Model architectures '
    "['LlamaForCausalLMEagle3'] are not supported for now\", at load, for every eagle and modelopt drafter)",
}
# architecture -> the releases vLLM loads it as an EAGLE-3 draft (vllm transformers_utils/configs/eagle.py), as
# alternative ranges: LlamaForCausalLMEagle3 in 0.8.5 (and its .post rebuilds), not 0.9.0-0.10.1, again from 0.10.2
# (observed: vllm-0.10.1.1.post2-cpu.json, "Model architectures ['LlamaForCausalLMEagle3'] are not supported for
# now" for every eagle and modelopt drafter, before the CPU runner's assert)
ROUTES = (
    ("LlamaForCausalLM", (">=0.8.5",)),
    ("Eagle3LlamaForCausalLM", (">=0.8.5",)),
    ("LlamaForCausalLMEagle3", ("==0.8.5.*", ">=0.10.2")),
    ("Eagle3DeepseekV2ForCausalLM", (">=0.18.0",)),
    ("Eagle3DeepseekV3ForCausalLM", (">=0.18.0",)),
    ("Qwen3ForCausalLM", (">=0.24.0",)),
    ("Eagle3Qwen3ForCausalLM", (">=0.24.0",)),
)


# vLLM reads the speculators format from 0.10.1 (transformers_utils/configs/speculators/, registered as the config
# class of `speculators_model_type` checkpoints); before it the draft config goes to transformers' AutoConfig, and
# speculators writes no `model_type` into config.json (SpeculatorModelConfig.to_dict drops it). AutoConfig then
# guesses the type from the path: one that happens to hold a model type's name (".../empty" holds "mpt") loads as
# that type and fails later at load instead (the 0.8.5.post2 and 0.9.2.post2 records' speculators/empty)
SPECULATORS_FROM = Version("0.10.1")


@rule(RULES, "speculators-format-unread", "vllm", "<0.10.1", "problem",
      "vllm 0.10.1 transformers_utils/config.py:81 (\"speculators\": SpeculatorsConfig), configs/speculators/; no "
      "configs/speculators in the 0.8.5, 0.9.2 and 0.10.0 wheels; observed: vllm-0.8.5.post2-cpu.json, "
      "vllm-0.9.2.post2-cpu.json, vllm-0.10.0.post2-cpu.json (speculators/top and speculators/none refused at load)",
      observed="vllm-0.8.5.post2-cpu.json, vllm-0.9.2.post2-cpu.json, vllm-0.10.0.post2-cpu.json (speculators/top "
      "and speculators/none refused at load)")  # fmt: skip
def speculators_format_unread(c: Context) -> str | None:
    if not c.speculators:
        return None
    return (
        f"vLLM {c.version} does not read the speculators format (from {SPECULATORS_FROM}): its config.json has no "
        "model_type, and the engine refuses the draft at load ('Unrecognized model in ... Should have a `model_type` "
        "key in its config.json'); convert it to the EAGLE format (`eaglewire convert --to eagle`) or serve it with "
        f"vLLM {SPECULATORS_FROM} or later"
    )


@rule(RULES, "architecture-routing", "vllm", "", "problem",
      "vllm 0.9.0-0.33.0 transformers_utils/configs/eagle.py:58-64 (Eagle3 prefix rule); model_executor/models/registry.py")  # fmt: skip
def architecture_routing(c: Context) -> str | None:
    if c.speculators or not c.architecture:
        return None
    arch = c.architecture
    for name, spec in ROUTES:
        if arch == name:
            ok = any(SpecifierSet(s).contains(c.version, prereleases=True) for s in spec)
            if ok:
                return None
            return Said(
                f"vLLM {c.version} does not register {arch!r} as an EAGLE-3 draft (from {' or '.join(spec)})",
                ROUTES_OBSERVED.get(arch),
            )
    return (
        f"architectures[0] is {arch!r}: vLLM {c.version} maps it to Eagle3{arch.removeprefix('Eagle3')}, which no "
        "model registry entry serves; use LlamaForCausalLMEagle3"
    )


# vLLM builds the EAGLE-3 head's decoder layers from num_hidden_layers from 0.11.1; before, one, whatever the config
MULTI_LAYER_FROM = Version("0.11.1")


@rule(RULES, "draft-layers", "vllm", "<0.11.1", "problem",
      "vllm llama_eagle3.py:123-127, 176-187 @0.10.1 and @0.11.0 (one LlamaDecoderLayer; params_dict[name] for "
      "every checkpoint tensor), :159-167 @0.11.1 (range(num_hidden_layers))")  # fmt: skip
def draft_layers(c: Context) -> str | None:
    n = c.draft_layers
    if n <= 1 or c.held_layers == 1:  # one layer held: the one this release builds loads whole
        return None
    return (
        f"num_hidden_layers is {n}: vLLM {c.version} builds a one-layer EAGLE-3 head and looks every checkpoint "
        "tensor up by name, so the first tensor of layers.1 raises KeyError at load; "
        f"{copied(c)}vLLM {MULTI_LAYER_FROM} and later build {n}"
    )


# ---- the draft's KV cache beside the target's ------------------------------------------------------------------

# The draft's attention layers join the target's KV-cache spec. Before 0.11.0 a spec whose layers differ in page size
# (2 x block x kv heads per rank x head_dim x dtype) is neither uniform nor of uniform page size: NotImplementedError
# when the KV cache is set up at startup. 0.11.0 groups full-attention layers of any page size
# (UniformTypeKVCacheSpecs); a target with sliding-window layers still raises there until 0.12.0, which unifies
# page sizes that divide one another.
KV_UNIFORM_TYPE_FROM, KV_UNIFY_FROM = Version("0.11.0"), Version("0.12.0")
TP_CANDIDATES = (1, 2, 4, 8, 16)


def _attention(cfg: dict) -> tuple[int, int, int] | None:
    """(query heads, kv heads, head_dim) of an attention config, None where it does not say."""
    heads, hidden = cfg.get("num_attention_heads"), cfg.get("hidden_size")
    if not isinstance(heads, int) or not isinstance(hidden, int) or heads <= 0:
        return None
    kv = cfg.get("num_key_value_heads") or heads
    hd = cfg.get("head_dim") or hidden // heads
    return (heads, kv, hd) if isinstance(kv, int) and isinstance(hd, int) else None


def _draft_attention(c: Context) -> tuple[int, int, int] | None:
    """The draft's (query heads, kv heads, head_dim): the parsed layout, else its config."""
    arch = c.ckpt.arch
    if arch is not None:
        return arch.num_heads, arch.num_kv_heads, arch.head_dim
    return _attention((c.cfg.get("transformer_layer_config") or {}) if c.speculators else c.cfg)


def _kv_pages(c: Context) -> dict[int, tuple[int, int]] | None:
    """Per tensor-parallel size, (target, draft) KV elements per token per layer on one rank."""
    draft, target = _draft_attention(c), _attention(c.target.config)
    if draft is None or target is None:
        return None
    return {
        tp: (max(1, target[1] // tp) * target[2], max(1, draft[1] // tp) * draft[2]) for tp in TP_CANDIDATES
    }


def _kv_mismatch(c: Context) -> tuple[list[int], str] | None:
    """The TP sizes at which the draft's KV page differs from the target's, where the release then refuses."""
    if c.version >= KV_UNIFY_FROM:
        return None
    if c.version >= KV_UNIFORM_TYPE_FROM:
        tc = c.target.config
        types = tc.get("layer_types")
        hybrid = (isinstance(types, list) and "sliding_attention" in types) or (
            bool(tc.get("sliding_window")) and tc.get("use_sliding_window", True) is not False)  # fmt: skip
        if not hybrid:
            return None
    pages = _kv_pages(c)
    if pages is None:
        return None
    bad = [tp for tp, (t, d) in pages.items() if t != d]
    if not bad:
        return None
    t, d = pages[1]
    said = (
        f"the draft's KV cache holds {d} elements per token per layer (kv heads x head_dim) and the target's {t}: "
        f"vLLM {c.version} puts both in one KV-cache spec and refuses pages of two sizes "
        f"(bare NotImplementedError at KV-cache setup, after load); vLLM {KV_UNIFORM_TYPE_FROM} groups them for a "
        f"full-attention target, {KV_UNIFY_FROM} for any"
    )
    return bad, said


@rule(RULES, "kv-page-size", "vllm", "<0.12.0", "problem",
      "vllm v1/core/kv_cache_utils.py @0.8.5 (type_id holds the page size), :1118-1133 @0.10.2 (uniform type, "
      "else uniform page size, else raise NotImplementedError), :1170-1187 @0.11.0 (UniformTypeKVCacheSpecs: "
      "full attention of any page size), kv_cache_interface.py:66-70 @0.10.2 (page_size_bytes); vllm#22432, "
      "PR #23740 (AngelSlim/Qwen3-32B_eagle3: head_dim 80 on a 128 target), vllm-ascend#2215")  # fmt: skip
def kv_page_size(c: Context) -> str | None:
    found = _kv_mismatch(c)
    if found is None or len(found[0]) < len(TP_CANDIDATES):
        return None
    return f"{found[1]}; serve it with vLLM {KV_UNIFY_FROM} or later"


@rule(RULES, "kv-page-size-tp", "vllm", "<0.12.0", "unverified", kv_page_size.source)
def kv_page_size_tp(c: Context) -> str | None:
    found = _kv_mismatch(c)
    if found is None or len(found[0]) == len(TP_CANDIDATES):
        return None
    bad, said = found
    return f"at tensor-parallel size {', '.join(map(str, bad))} {said}; the launch's --tensor-parallel-size settles it"


# The draft's attention layers on the release's attention backend. 0.11.0 gives a draft whose head size
# FlashAttention lacks another backend (FlexAttention on SM80/90; FlashInfer, 64/128/256 only, on SM100) but builds
# its metadata with the target's first builder (v1/spec_decode/eagle.py:192-194): the engine crashes at the first
# request (vllm#28919, AngelSlim/Qwen3-32B_eagle3, head_dim 80). 0.11.1 looks up the draft's own builder.
FA_HEAD_SIZES = (32, 64, 96, 128, 160, 192, 224, 256)  # flash_attn.py:47-48 @0.11.0


def _head_dims(c: Context) -> tuple[int, int] | None:
    """(draft, target) head_dim, where both configs say."""
    draft, target = _draft_attention(c), _attention(c.target.config)
    return (draft[2], target[2]) if draft is not None and target is not None else None


@rule(RULES, "draft-head-size", "vllm", ">=0.11.0,<0.11.1", "problem",
      "vllm 0.11.0 v1/attention/backends/flash_attn.py:47-48 (head sizes 32-256 by 32), platforms/cuda.py:357-388 "
      "(another backend for the draft's layers), v1/spec_decode/eagle.py:192-194 (the draft's metadata from the "
      "target's first builder), flex_attention.py:755; 0.11.1 eagle.py:241-246 (the draft's own builder); "
      "vllm#28919")  # fmt: skip
def draft_head_size(c: Context) -> str | None:
    dims = _head_dims(c)
    if dims is None or dims[0] in FA_HEAD_SIZES or dims[1] not in FA_HEAD_SIZES:
        return None
    return (
        f"the draft's head_dim is {dims[0]}, which FlashAttention lacks (the target's {dims[1]} it has): vLLM "
        f"{c.version} runs the draft's layers on another backend but builds their metadata with the target's, and "
        "the engine crashes at the first request (vllm#28919); vLLM 0.11.1 and later build the draft's own"
    )


# Model Runner V2 before 0.29.0 builds the draft's attention metadata with a plain build(), so FlashAttention-3's
# scheduler plan (Hopper) is made for the target's query heads, kv heads and head_dim (flash_attn.py:324-329
# @0.22.0, :436-441 @0.28.0; attn_utils.py:436 @0.22.0): a draft of another geometry fails, "RuntimeError:
# scheduler_metadata must have shape (metadata_size)" (PR #39775, MiniMax-M2.5 EAGLE-3). 0.29.0 plans per group.
@rule(RULES, "draft-attention-geometry", "vllm", ">=0.20.0,<0.29.0", "unverified",
      "vllm v1/attention/backends/flash_attn.py:324-329 @0.22.0, :436-441 @0.28.0 (the FA3 scheduler plan from the "
      "target's geometry), v1/worker/gpu/attn_utils.py:436 @0.22.0, :674 @0.28.0 (MRV2: build(), not "
      "build_for_drafting); 0.29.0 flash_attn.py:436-441 (the group's kv_cache_spec); vllm PR #39775")  # fmt: skip
def draft_attention_geometry(c: Context) -> str | None:
    if c.row.runner != "mrv2" or c.ckpt.arch is None:  # a layout not parsed here (an MLA head): not compared
        return None
    draft, target = _draft_attention(c), _attention(c.target.config)
    if target is None or draft == target:
        return None
    return (
        f"the draft's attention (query heads, kv heads, head_dim) is {draft}, the target's {target}: "
        f"vLLM {c.version}'s Model Runner V2 plans FlashAttention-3's schedule for the target's, so on a Hopper GPU "
        "the draft's attention fails ('RuntimeError: scheduler_metadata must have shape (metadata_size)', vllm PR "
        "#39775); other GPUs and the V1 runner (VLLM_USE_V2_MODEL_RUNNER=0) plan no such schedule. The GPU "
        "settles it; vLLM 0.29.0 and later plan per draft"
    )


# ---- norm options -----------------------------------------------------------------------------------------------


# vLLM's EAGLE-3 heads read norm_before_residual from 0.10.1, top-level only (getattr on the draft's HF config; the
# speculators loader copies it there); eagle_config's copy is never read
NORM_BEFORE_RESIDUAL_FROM = Version("0.10.1")
# run (tests/real_engine/draft_config.py): the zoo's default drafter with the key at the top level drafted as the
# walk that normalises before the residual, with it under eagle_config as the walk that does not, counter for counter
NORM_BEFORE_RESIDUAL_OBSERVED = (
    "vllm-0.32.0-cpu-draft-config.json (norm_before_residual true at the top level: the engine's counters are the "
    "walk with it; under eagle_config: the walk without it)"
)


@rule(RULES, "norm-before-residual", "vllm", "", "problem",
      "vllm llama_eagle3.py @0.8.5, @0.9.2, @0.10.0 (no norm_before_residual: residual = hidden_states before "
      "hidden_norm), :54-57 @0.10.1.1, :101-102 @0.33.0 (getattr(config, 'norm_before_residual', False), top-level); "
      "qwen3_eagle3.py:85 and deepseek_eagle3.py:101 @0.33.0 the same")  # fmt: skip
def norm_before_residual(c: Context) -> str | None:
    if not c.flag("norm_before_residual"):
        return None
    top = c.speculators or c.cfg.get("norm_before_residual") is True
    if top and c.version >= NORM_BEFORE_RESIDUAL_FROM:
        return None
    if c.version < NORM_BEFORE_RESIDUAL_FROM:
        why = f"vLLM {c.version} has no norm_before_residual (read from {NORM_BEFORE_RESIDUAL_FROM})"
        fix = f"serve it with vLLM {NORM_BEFORE_RESIDUAL_FROM} or later"
    else:
        why = f"vLLM {c.version} reads it at the top level of config.json only, and this drafter sets it under eagle_config"
        fix = 'add "norm_before_residual": true at the top level of config.json'
    return Said(
        f"the drafter normalises before the residual (norm_before_residual) and {why}: it adds the un-normalised "
        f"state instead, so its draft numerics differ from training; {fix}",
        NORM_BEFORE_RESIDUAL_OBSERVED if c.version >= NORM_BEFORE_RESIDUAL_FROM else None,
    )


@rule(RULES, "norm-before-residual-default", "vllm", ">=0.10.1", "warning", "vllm transformers_utils/configs/speculators/algos.py:31 @0.10.1-0.33.0")  # fmt: skip
def norm_before_residual_default(c: Context) -> str | None:
    if c.speculators and "norm_before_residual" not in c.cfg:
        return "config has no norm_before_residual: vLLM's speculators loader defaults it to True, speculators to False"
    return None


@rule(RULES, "norm-before-fc", "vllm", "", "problem",
      "vllm llama_eagle3.py:153 @0.18.0 (top-level), :150-154 @0.22.0 (eagle_config first); speculators/algos.py:38 @0.19.0 (PR #38111)")  # fmt: skip
def norm_before_fc(c: Context) -> str | None:
    v = c.version
    if c.speculators:
        ok = v >= Version("0.19.0")
    elif c.nested.get("norm_before_fc") is True:
        ok = v >= Version("0.22.0")
    else:
        ok = v >= Version("0.18.0")
    return unhonoured(c, "norm_before_fc", ok)


@rule(RULES, "fc-norm-norm-output", "vllm", "", "problem", "vllm llama_eagle3.py:200, 221 @0.22.0; speculators/algos.py @0.25.0 (PR #46488)")  # fmt: skip
def fc_norm_norm_output(c: Context) -> str | None:
    since = Version("0.25.0") if c.speculators else Version("0.22.0")
    return unhonoured(c, "fc_norm", c.version >= since) or unhonoured(c, "norm_output", c.version >= since)


@rule(RULES, "norm-output-meaning", "vllm", ">=0.22.0", "unverified", "vllm llama_eagle3.py:283-288 @0.33.0; SpecForge llama3_eagle.py:1690, 1772-1777 @a6b6b02; docs/conventions.md (c) 2")  # fmt: skip
def norm_output(c: Context) -> str | None:
    return norm_output_meaning(c, "vLLM", True)


# ---- vocabulary, embeddings, lm_head -----------------------------------------------------------------------


# the release range and source are the embedding row's (engines/vllm/draft.py EMBEDDING_ROWS): one fact, one place
_FROM_TARGET = next(r for r in EMBEDDING_ROWS if r.name == "vllm.eagle-embedding-from-target")
_TARGET_ALWAYS = next(r for r in EMBEDDING_ROWS if r.name == "vllm.eagle-embedding-target-always")


def _draft_hidden(c: Context) -> int | None:
    dcfg = (c.cfg.get("transformer_layer_config") or {}) if c.speculators else c.cfg
    h = dcfg.get("hidden_size")
    return h if isinstance(h, int) and not isinstance(h, bool) else None


@rule(RULES, "target-embedding-only", "vllm", _TARGET_ALWAYS.versions, "problem", _TARGET_ALWAYS.source)
def target_embedding_only(c: Context) -> str | None:
    h, th = _draft_hidden(c), c.target.hidden_size
    if h is not None and h != th:
        return (
            f"vLLM {c.version} computes the draft with the target's embed_tokens ({th} wide) beside the fc output "
            f"({h} wide, the drafter's hidden_size): AssertionError (hidden_states.shape[-1] == "
            "input_embeds.shape[-1]) at the first draft forward, at startup; vLLM 0.9.1 and later keep a drafter's "
            "own embedding of its width (vllm#18906)"
        )
    if c.has_tensor("embed_tokens.weight"):
        return (
            f"vLLM {c.version} builds the draft without embed_tokens (the target's is used) and refuses the "
            "checkpoint's at load: ValueError: There is no module or parameter named 'model.embed_tokens' "
            "(models/utils.py AutoWeightsLoader); drop the tensor if it is a copy of the target's, or serve with "
            "vLLM 0.9.1 or later (vllm#18906)"
        )
    return None


@rule(RULES, "own-embedding-missing", "vllm", ">=0.9.1", "problem",
      "vllm 0.9.1-0.11.0 v1/spec_decode/eagle.py (the target's only where the shapes match; llama_eagle3.py "
      "load_weights skips embed_tokens when the checkpoint has none); 0.33.0 v1/spec_decode/llm_base_proposer.py:"
      "1476-1497 (V1: keeps its own where the widths differ); MRV2 v1/worker/gpu/spec_decode/eagle/utils.py:20-36 "
      "@0.20.0, :46-77 @0.33.0 (the target's, no width check), llama_eagle3.py:271 @0.33.0 (the width assert)")  # fmt: skip
def own_embedding_missing(c: Context) -> str | None:
    h, th = _draft_hidden(c), c.target.hidden_size
    if h is None or h == th or not c.ckpt.has_weights or c.has_tensor("embed_tokens.weight"):
        return None
    mrv2 = c.row.runner == "mrv2"
    return (
        f"the drafter's hidden_size {h} differs from the target's {th} and it has no embed_tokens: vLLM {c.version} "
        + ("gives it the target's embedding anyway, and the draft forward's width assert fails at startup"
           if mrv2 else "keeps the drafter's own embedding of its width, which no checkpoint tensor fills: "
           "uninitialised (garbage drafts, no error)")
        + "; ship the drafter's trained embed_tokens"
    )  # fmt: skip


@rule(RULES, "embedding-replaced", "vllm", _FROM_TARGET.versions, "warning", _FROM_TARGET.source)
def embedding_replaced(c: Context) -> str | None:
    if c.has_tensor("embed_tokens.weight"):
        return (
            "vLLM 0.9.1-0.11.0 replaces the drafter's own embed_tokens with the target's whenever the shapes match: "
            "right only if it was a frozen copy of the target's (`test --engine` and `doctor` walk the draft with "
            "the target's embedding)"
        )
    return None


# ---- RoPE, context, sliding window -------------------------------------------------------------------------


# A drafter whose context is shorter than the served length stops drafting (or drafts garbage) past it, per release
# and runner (engines/vllm/draft.py CONTEXT_ROWS); a problem: every request of a batch served beside one long
# request loses its drafts, and check cannot know the requests (the served length is the target's, vLLM's default).
PAST_SAYS = {
    "zeros": "vLLM stops running the drafter for the whole batch and verifies K zero tokens in its place: accept "
    "length 1.0 for every request batched with it, while each verify still carries K tokens",
    "nothing": "vLLM stops drafting for the whole batch: plain decoding, the speed-up gone for every request "
    "batched with it",
    "stale": "vLLM stops running the drafter for the whole batch and verifies the last drafts again at every step: "
    "accept length about 1.0 for every request batched with it",
    "garbage": "the drafter keeps drafting with a rotary table of max_position_embeddings rows: positions past it "
    "read outside the table (garbage drafts, accept length about 1.0, or a device-side assert when compiled)",
}


@rule(RULES, "draft-context", "vllm", "", "problem", "engines/vllm/draft.py CONTEXT_ROWS (each row cites its source; vllm#24662, #48894)")  # fmt: skip
def draft_context(c: Context) -> str | None:
    served = model_length(c.target.config)
    ch = choose(CONTEXT_ROWS, "vllm", str(c.version), c.row.runner, c.cfg, served)
    if not ch.collapses:
        return None
    row, n = ch.row, ch.draft_length
    where = "observed: " + row.observed if row.observed else row.source
    return Said(
        f"the draft model's max_model_len is {n} (the drafter's own context, below the {served} the target is "
        f"served at by default): once a sequence of a batch passes {n} - K tokens, {PAST_SAYS[row.past]} "
        f"[{row.name}: {where}]; fix: set max_position_embeddings to {served} in the drafter's config.json "
        f"(the target's), or serve with --max-model-len {n}",
        row.observed,
    )


@rule(RULES, "sliding-window-ignored", "vllm", "", "warning", "vllm attention.py:266-271 @0.33.0; qwen3_eagle3.py:46-61 @0.26.0; speculators PR #684")  # fmt: skip
def sliding_window_ignored(c: Context) -> str | None:
    if not sliding(c):
        return None
    dcfg = (c.cfg.get("transformer_layer_config") or {}) if c.speculators else c.cfg
    qwen3 = dcfg.get("model_type") == "qwen3"
    if qwen3 and c.version >= Version("0.26.0") and isinstance(dcfg.get("layer_types"), list):
        return None
    return "the drafter's sliding window is not applied by vLLM here (the target's window is used): -31% accept length at 2k context (speculators PR #684)"


# From 0.24.0 a speculators-format Qwen3 drafter builds its fc from the top-level id list too (qwen3_eagle3.py:202-214)
QWEN3_TOP_LEVEL_WIDTH_FROM = "0.24.0"


def fc_width_keys(c: Context) -> tuple[str, ...] | None:
    """The keys this release takes the fc width from, where they differ from the tap row's (None: the row's)."""
    if c.speculators and c.version >= Version(QWEN3_TOP_LEVEL_WIDTH_FROM):
        if (c.cfg.get("transformer_layer_config") or {}).get("model_type") == "qwen3":
            return ("num_aux_hidden_states", "eagle_aux_hidden_state_layer_ids")
    return None


# eagle_config.use_aux_hidden_state is read from this release (llama_eagle3.py:145-149 @0.14.0); before, aux states are always captured
AUX_FLAG_READ_FROM = "0.14.0"
# ... by the V1 runner. Model Runner V2 asks for aux states for every eagle3 drafter until this release
# (v1/worker/gpu/model_runner.py:176 @0.20.0 `use_aux_hidden_state_outputs = True`, :307 @0.32.0; read from the flag by
# spec_decode/eagle/eagle3_utils.py requires_aux_hidden_states @0.33.0), and its speculator passes their
# concatenation through the head's combine_hidden_states (unchanged when the head has no fc: llama_eagle3.py:366-367
# @0.20.0) into a buffer one hidden state wide (spec_decode/eagle/speculator.py:433-440 @0.20.0,
# target_dependent_ar/speculator.py:210-216 @0.32.0); vllm#40551, PR #40656
MRV2_AUX_FLAG_READ_FROM = "0.33.0"
