"""Checkpoint structure over all engines: the rows that hold for every engine (engine "*") and `RULES`, every
engine's rows and these in one order, the order findings are reported in (docs/engine-facts.md;
docs/conventions.md (b), (c)). Each engine's own rows are in `engines/<engine>/structure.py`; what a row is, in
`rules/structure.py`; `jobs.structure.findings_for` applies them.
"""

from __future__ import annotations

from packaging.version import Version

from eaglewire.engines.draft_weights import checkpoint_cases, draft_head
from eaglewire.engines.sglang import structure as sglang
from eaglewire.engines.trtllm import structure as trtllm
from eaglewire.engines.vllm import structure as vllm
from eaglewire.rules.draft_weights import HeadChoice
from eaglewire.rules.structure import NEXTN_SUFFIXES, Context, Said, StructureRule, rule
from eaglewire.rules.taps import get_path

ANY: list[StructureRule] = []  # the rows of every engine
# rows an engine meets when it builds its speculative config from the drafter's config.json, before any platform
# worker loads anything (vLLM's SpeculativeConfig: the draft architecture in its registry, the format it reads), from
# the release where that check moved there ("": every release). vLLM's draft registry lookup is a SpeculativeConfig
# ValidationError from 0.10.1 (vllm-0.10.1.post2-cpu.json, vllm-0.10.1.1.post2-cpu.json); before, the worker looks it
# up at load, after the CPU platform's own failure (vllm-0.9.2.post2-cpu.json: the V0 spec worker's TypeError;
# vllm-0.10.0.post2-cpu.json: the CPU runner's assert). The speculators format is refused at config time throughout.
CONFIG_CHECK = {"architecture-routing": "0.10.1", "speculators-format-unread": ""}


def config_check(code: str, version: str) -> bool:
    """Whether a finding is one the engine meets at its config check at this release (`CONFIG_CHECK`)."""
    first = CONFIG_CHECK.get(code)
    return first is not None and (not first or Version(version) >= Version(first))


# ---- format and architecture routing -----------------------------------------------------------------------


@rule(ANY, "not-eagle3", "*", "", "problem", "an MTP/NextN layer (e.g. SpecForge configs/kimi-k2-eagle3.json, DeepseekV3ForCausalLMNextN)")  # fmt: skip
def not_eagle3(c: Context) -> str | None:
    if c.architecture.endswith(NEXTN_SUFFIXES):
        return f"{c.architecture} is an MTP/NextN draft, not an EAGLE-3 head: serve it with EAGLE/NEXTN (SGLang) or mtp (vLLM), not EAGLE3"
    return None


def engine_aux_count(c: Context) -> int:
    """How many aux states the engine builds fc for: the row's keys in order, else 3."""
    keys = (vllm.fc_width_keys(c) if c.engine == "vllm" else None) or c.row.fc_width_keys
    for key in keys:
        value = get_path(c.cfg, key)
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, list) and value:
            return len(value)
    if c.engine == "trtllm":
        return len(c.served.taps) if c.served.taps is not None else 3
    return 3


# run (tests/real_engine/draft_config.py): the zoo's default drafter without architectures, refused at load
ARCHITECTURES_OBSERVED = (
    "vllm-0.32.0-cpu-draft-config.json (the zoo's default drafter without architectures, refused at load: "
    "\"Model architectures ['Eagle3LlamaModel'] are not supported for now\")"
)


@rule(ANY, "architectures-missing", "*", "", "problem",
      "vllm configs/eagle.py:58-64 (Eagle3 prefix over model.architectures) and registry.py _normalize_archs @0.8.5 "
      "(warns, then iterates None), :611 @0.10.1.1 and :735 @0.11.0 (ValueError \"No model architectures are "
      "specified\"), transformers_utils/config.py:626 @0.11.1 and :939-949 @0.33.0 (architectures from model_type: "
      "LlamaModel, so Eagle3LlamaModel); vllm PR #30987; sglang configs/model_config.py is_generation_model (`in` on "
      "architectures) @0.4.5:448-454, @0.5.10:1268-1274, @0.5.23:801, 2360-2366")  # fmt: skip
def architectures_missing(c: Context) -> str | None:
    archs = c.cfg.get("architectures")
    if c.speculators or c.engine == "trtllm" or (isinstance(archs, list) and archs):
        return None
    fix = 'add "architectures": ["LlamaForCausalLMEagle3"] to config.json'
    if c.engine == "sglang":
        why = "builds the draft's model config from architectures and tests names in it (TypeError on None)"
    elif c.version < Version("0.10.1"):
        why = "prefixes each of the draft's architectures with Eagle3 (TypeError on None)"
    elif c.version < Version("0.11.1"):
        why = 'finds no model class: "ValueError: No model architectures are specified"'
    else:
        why = ("fills architectures from model_type (llama: LlamaModel), prefixes it (Eagle3LlamaModel), and no "
               "registry entry serves that: \"Model architectures ['Eagle3LlamaModel'] are not supported for now\"")  # fmt: skip
    return Said(
        f"config.json has no architectures: {c.engine} {c.version} {why}, at startup; {fix}",
        ARCHITECTURES_OBSERVED if c.engine == "vllm" else None,
    )


# ---- decoder layers --------------------------------------------------------------------------------------------


@rule(ANY, "draft-layers-copied", "*", "", "unverified", "sglang llama_eagle3.py:180-185 @0.5.12, load_weights (no check that every layer loaded); vllm llama_eagle3.py:159-167 @0.11.1, load_weights returns None so default_loader.py's strict check is skipped (0.12.0:314-321, 0.33.0); SpecForge#129")  # fmt: skip
def draft_layers_copied(c: Context) -> str | None:
    n = c.draft_layers
    if c.ckpt.has_weights or n <= 1 or n != c.target.num_layers:
        return None  # with weights the checkpoint's own layers are counted (formats: every layer's tensors)
    return (
        f"num_hidden_layers is {n}, the target's own layer count: an engine that builds {n} draft layers and a "
        "checkpoint that holds one (a config copied from the target) leave the others uninitialised, with no error "
        "(garbage drafts); the checkpoint's tensors settle it (`eaglewire check` or `doctor` with the weights counts them)"
    )


# what the engine did, run (tests/real_engine/draft_layers.py): the zoo's one-layer drafter, config.json saying more
UNLOADED_OBSERVED = (
    "vllm-0.32.0-cpu-draft-layers.json (the zoo's one-layer drafter served with num_hidden_layers 2 and 8: started, "
    "lossless, counters off the one-layer walk)"
)
UNLOADED_SEEN = (
    "vLLM 0.32.0 on CPU, run: with 2 layers configured 2.80 tokens per verify against the trained 2.82, with 8 "
    "layers 1.00, nothing accepted"
)


@rule(ANY, "draft-layers-unloaded", "*", "", "problem", "vllm llama_eagle3.py:159-167 @0.11.1 (range(num_hidden_layers)), load_weights returns None so default_loader.py's strict check is skipped (0.12.0:314-321, 0.33.0); sglang llama_eagle3.py:180-185 @0.5.12-0.5.23 (range(num_hidden_layers)), load_weights checks nothing; SpecForge#129")  # fmt: skip
def draft_layers_unloaded(c: Context) -> str | None:
    n, held = c.draft_layers, c.held_layers
    if held is None or held >= n:
        return None
    if c.engine == "vllm":
        if c.version < vllm.MULTI_LAYER_FROM:
            return None  # one layer built (the draft-layers row where the weights hold more)
        why = "its load_weights returns nothing, so the loader's check that every parameter loaded is skipped"
    elif c.engine == "sglang":
        if c.version < sglang.MULTI_LAYER_FROM or c.architecture in sglang.MLA:
            return None  # refused at load (the draft-layers row)
        why = "its load_weights checks nothing"
    else:
        return None
    missing = f"layers.{held} keeps" if n - held == 1 else f"layers.{held}-{n - 1} keep"
    return Said(
        f"num_hidden_layers is {n} and the weights hold {held} decoder layer(s): {c.engine} {c.version} builds {n} "
        f"and loads {held}; {missing} uninitialised memory with no error ({why}), so the draft is not the "
        f"trained drafter's and its acceptance is whatever that memory gives ({UNLOADED_SEEN}). Set "
        f"num_hidden_layers to {held} in config.json",
        UNLOADED_OBSERVED if c.engine == "vllm" else None,
    )


# ---- fc width -------------------------------------------------------------------------------------------------


@rule(ANY, "fc-width", "*", "", "problem",
      "sglang llama_eagle3.py:153-161 @0.5.12 (3 before); vllm llama_eagle3.py:175-187 @0.28.0 (3 before 0.22), "
      "qwen3_eagle3.py:202-214 @0.33.0; TensorRT-LLM modeling_speculative.py (num_capture_layers); vllm#54526")  # fmt: skip
def fc_width(c: Context) -> str | None:
    if c.served.taps is None:
        return None
    built = engine_aux_count(c)
    h = c.target.hidden_size
    width = c.ckpt.fc_in_width
    weights_n = width // h if width is not None and h and width % h == 0 else None
    if c.ckpt.arch is not None and weights_n is None:
        weights_n = c.ckpt.arch.n_aux
    captured = len(c.served.taps)
    if captured == built and (weights_n is None or weights_n == built):
        return None
    where = "the launch's eagle3_layers_to_capture" if c.engine == "trtllm" else "its fc-width keys (or 3)"
    stage = c.served.row.width_stage
    fails = (
        f"startup and warm-up pass, the {stage} fails (a shape error in the drafter's fc)"
        if stage
        else "loading or the first forward fails"
    )
    fix = (
        f"; set num_aux_hidden_states = {weights_n or captured} in config.json"
        if c.engine != "trtllm" and built != (weights_n or captured)
        else "; list as many ids as the fc takes"
        if weights_n is not None and captured != weights_n
        else ""
    )
    return (
        f"{c.engine} {c.version} captures {captured} states and builds fc for {built} (from {where}), the "
        f"drafter's fc takes {weights_n if weights_n is not None else 'an unknown number'}: {fails}{fix}"
    )


# ---- norm options -----------------------------------------------------------------------------------------------


@rule(ANY, "aux-disabled", "*", "", "problem",
      "sglang spec_aux_hidden_state.py:186-191 @0.5.23 (read from 0.5.8); vllm llama_eagle3.py:145-149 @0.14.0; "
      "vllm Model Runner V2: v1/worker/gpu/model_runner.py:176 @0.20.0 (aux states for every eagle3 drafter until "
      "0.33.0), spec_decode/eagle/speculator.py:433-440 @0.20.0; vllm#40551")  # fmt: skip
def aux_disabled(c: Context) -> str | None:
    if c.nested.get("use_aux_hidden_state") is not False:
        return None
    if c.has_tensor("fc.weight"):
        return "eagle_config.use_aux_hidden_state is false but the drafter has an fc: the engine feeds no aux states to it"
    reads = {"sglang": sglang.AUX_FLAG_READ_FROM, "vllm": vllm.AUX_FLAG_READ_FROM}.get(c.engine)
    if reads and c.version < Version(reads):
        return (
            f"{c.engine} < {reads} ignores use_aux_hidden_state: it captures aux states and builds an fc this "
            "checkpoint does not have"
        )
    if c.engine == "vllm" and c.row.runner == "mrv2" and c.version < Version(vllm.MRV2_AUX_FLAG_READ_FROM):
        n = len(c.served.taps) if c.served.taps is not None else 3
        return (
            f"vllm {c.version}'s Model Runner V2 ignores use_aux_hidden_state (read from "
            f"{vllm.MRV2_AUX_FLAG_READ_FROM}): it captures {n} aux states and hands their concatenation, "
            f"{n} x hidden wide, to this head, which has no fc and passes it on unchanged; the speculator's copy "
            "into its buffer one hidden state wide raises at the first draft step (read at source; vllm PR #40656 "
            "reports lower acceptance instead: either way not the state the head was trained on). The V1 runner "
            f"reads the flag: VLLM_USE_V2_MODEL_RUNNER=0, or vllm {vllm.MRV2_AUX_FLAG_READ_FROM}"
        )
    return None


# ---- vocabulary, embeddings, lm_head -----------------------------------------------------------------------


def _seen(choice: HeadChoice) -> str | None:
    """The record that showed the release's draft-head row, where one did."""
    return choice.row.observed if choice.row is not None else None


def served_head(c: Context) -> HeadChoice:
    """The lm_head the engine release scores this drafter's drafts with (engines/draft_weights.py)."""
    return draft_head(c.engine, str(c.version), checkpoint_cases(c.ckpt))


@rule(ANY, "lm-head-missing", "*", "", "problem", "sglang llama_eagle3.py:206-218 @0.5.5; vllm eagle.py:1010 @0.11.1 (target head shared)")  # fmt: skip
def lm_head_missing(c: Context) -> str | None:
    if (
        c.ckpt.has_weights
        and not c.has_tensor("lm_head.weight")
        and c.reduced_vocab
        and served_head(c).head == "target"
    ):
        return Said(
            "the drafter has no lm_head and a reduced draft vocabulary: the engine shares the target's "
            "full-vocabulary head, whose first draft_vocab_size logits it then maps through d2t: wrong tokens",
            _seen(served_head(c)),
        )
    return None


@rule(ANY, "draft-head-refused", "*", "", "problem", "engines/sglang/draft.py, engines/vllm/draft.py HEAD_ROWS (rules/draft_weights.py)")  # fmt: skip
def draft_head_refused(c: Context) -> str | None:
    choice = served_head(c)
    return Said(choice.refusal(f"{c.engine} {c.version}"), _seen(choice)) if choice.refused else None


@rule(ANY, "draft-head-replaced", "*", "", "warning", "engines/sglang/draft.py, engines/vllm/draft.py HEAD_ROWS (rules/draft_weights.py)")  # fmt: skip
def draft_head_replaced(c: Context) -> str | None:
    choice = served_head(c)
    if choice.row is None or not c.has_tensor("lm_head.weight") or choice.head not in ("target", "embedding"):
        return None
    if choice.head == "embedding" and c.reduced_vocab:
        return None  # tied with a reduced vocabulary: the engine's own problem row says it
    r = choice.row
    what = "the target's lm_head" if choice.head == "target" else "its embedding (tied)"
    return Said(
        f"{c.engine} {c.version} scores the drafts with {what} in place of the drafter's own lm_head: right only "
        f"if the drafter's is a copy of it (`test --engine` and `doctor` walk what the release feeds: {r.why}; "
        f"{r.name}: {r.source})",
        _seen(choice),
    )


# ---- RoPE, context, sliding window -------------------------------------------------------------------------


def _rope(cfg: dict) -> tuple[str, float | None, float | None]:
    rp = cfg.get("rope_parameters") if isinstance(cfg.get("rope_parameters"), dict) else None
    scaling = rp or (cfg.get("rope_scaling") if isinstance(cfg.get("rope_scaling"), dict) else {}) or {}
    kind = scaling.get("rope_type") or scaling.get("type") or "default"
    theta = (rp or {}).get("rope_theta", cfg.get("rope_theta"))
    return str(kind), theta, scaling.get("factor")


@rule(ANY, "rope-differs", "*", "", "warning", "SGLang and vLLM build the draft rotary from the draft config (docs/conventions.md (c)); NVIDIA-NeMo/Automodel PR #2399")  # fmt: skip
def rope_differs(c: Context) -> str | None:
    tcfg = c.target.config
    if not tcfg:
        return None
    dcfg = c.cfg.get("transformer_layer_config") if c.speculators else c.cfg
    draft, target = _rope(dcfg or {}), _rope(tcfg)
    if draft[0] != target[0] or (draft[1] and target[1] and draft[1] != target[1]):
        return (
            f"the drafter's RoPE ({draft[0]}, theta {draft[1]}) differs from the target's ({target[0]}, theta "
            f"{target[1]}): engines use the drafter's, so positions agree with training only if it was trained "
            "with the same (a YaRN target with a llama3/default draft degrades at long context)"
        )
    return None


# ---- every row, in the order findings are reported ------------------------------------------------------------
# For one engine the findings are its rows and the "*" rows in this order, so the "*" rows sit among the engines'
# rows (not after them); by theme: routing, fc width, norm options, vocabulary, RoPE/context/window, user reports.

_ORDER: tuple[StructureRule, ...] = (
    sglang.speculators_format,
    sglang.architecture_routing,
    sglang.architecture_routing_old,
    vllm.architecture_routing,
    not_eagle3,
    architectures_missing,
    sglang.draft_layers,
    vllm.draft_layers,
    draft_layers_copied,
    draft_layers_unloaded,
    vllm.kv_page_size,
    vllm.kv_page_size_tp,
    vllm.draft_head_size,
    vllm.draft_attention_geometry,
    fc_width,
    aux_disabled,
    sglang.norm_before_residual,
    vllm.norm_before_residual,
    vllm.norm_before_residual_default,
    sglang.norm_before_fc,
    vllm.norm_before_fc,
    trtllm.norm_before_fc,
    sglang.fc_norm_norm_output,
    vllm.fc_norm_norm_output,
    sglang.norm_output,
    vllm.norm_output,
    sglang.tied_reduced_vocab,
    sglang.own_embedding_missing,
    sglang.embedding_replaced,
    lm_head_missing,
    vllm.embedding_replaced,
    vllm.target_embedding_only,
    vllm.own_embedding_missing,
    rope_differs,
    vllm.draft_context,
    sglang.draft_context,
    sglang.sliding_window_ignored,
    vllm.sliding_window_ignored,
    sglang.reported_qwen_vl,
)

# A row an engine adds later and nobody placed above reports after these (a new release touches its folder only).
RULES: tuple[StructureRule, ...] = (
    *_ORDER,
    *(r for r in (*sglang.RULES, *vllm.RULES, *trtllm.RULES, *ANY) if r not in _ORDER),
)
