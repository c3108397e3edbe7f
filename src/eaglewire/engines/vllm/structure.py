"""vLLM: the checkpoint structure it chokes on, one row per behaviour and version range, each citing its source
(docs/engine-facts.md; docs/conventions.md (b), (c)). The rows every engine shares are in `engines/structure.py`,
which also orders all rows; what a row is, in `rules/structure.py`.
"""

from __future__ import annotations

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from eaglewire.engines.vllm.draft import EMBEDDING_ROWS
from eaglewire.rules.structure import (
    Context,
    StructureRule,
    norm_output_meaning,
    rule,
    short_context,
    sliding,
    unhonoured,
)

RULES: list[StructureRule] = []

# ---- format and architecture routing -----------------------------------------------------------------------

# architecture -> the releases vLLM loads it as an EAGLE-3 draft (vllm transformers_utils/configs/eagle.py), as
# alternative ranges: LlamaForCausalLMEagle3 in 0.8.5 (and its .post rebuilds), not 0.9.0-0.10.1, again from 0.10.2
ROUTES = (
    ("LlamaForCausalLM", (">=0.8.5",)),
    ("Eagle3LlamaForCausalLM", (">=0.8.5",)),
    ("LlamaForCausalLMEagle3", ("==0.8.5.*", ">=0.10.2")),
    ("Eagle3DeepseekV2ForCausalLM", (">=0.18.0",)),
    ("Eagle3DeepseekV3ForCausalLM", (">=0.18.0",)),
    ("Qwen3ForCausalLM", (">=0.24.0",)),
    ("Eagle3Qwen3ForCausalLM", (">=0.24.0",)),
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
            return (
                None
                if ok
                else f"vLLM {c.version} does not register {arch!r} as an EAGLE-3 draft (from {' or '.join(spec)})"
            )
    return (
        f"architectures[0] is {arch!r}: vLLM {c.version} maps it to Eagle3{arch.removeprefix('Eagle3')}, which no "
        "model registry entry serves; use LlamaForCausalLMEagle3"
    )


# ---- norm options -----------------------------------------------------------------------------------------------


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
_FROM_TARGET = next(r for r in EMBEDDING_ROWS if r.embedding == "target")


@rule(RULES, "embedding-replaced", "vllm", _FROM_TARGET.versions, "warning", _FROM_TARGET.source)
def embedding_replaced(c: Context) -> str | None:
    if c.has_tensor("embed_tokens.weight"):
        return (
            "vLLM 0.9-0.11.0 replaces the drafter's own embed_tokens with the target's whenever the shapes match: "
            "right only if it was a frozen copy of the target's (`test --engine` and `doctor` walk the draft with "
            "the target's embedding)"
        )
    return None


# ---- RoPE, context, sliding window -------------------------------------------------------------------------


# observed: tests/real_engine/records/vllm-0.32.0-cpu-draft-context.json (the zoo drafter, only its
# max_position_embeddings changed, 8 prompts x 128 greedy tokens from position 256). A warning, not a problem:
# requests that stay below the drafter's context are served as trained (yuhuili/EAGLE3-LLaMA3.1-Instruct-8B,
# max_position_embeddings 2048, measures 3.53 on MT-bench in vLLM: tests/test_published.py), and check does not
# know the requests; the message names the position past which acceptance collapses.
DRAFT_CONTEXT_OBSERVED = "vllm 0.32.0 CPU: accept length 2.669 -> 1.346 at 320, 1.000 at 128"
DRAFT_CONTEXT_FIX = "set the drafter's max_position_embeddings to the target's, or serve with --max-model-len at most the drafter's"
DRAFT_CONTEXT = {
    "<0.27.0": "vLLM < 0.27 sizes the draft's rotary table by it, and the proposer feeds it positions up to the "
    "target's max_model_len: past it the draft reads outside its table (garbage drafts, or a device-side assert "
    "when compiled)",
    ">=0.27.0": "vLLM raises the draft's rotary table to the target's context from 0.27, but the draft model keeps "
    "the drafter's value as its max_model_len, and acceptance still collapses for every position past it "
    f"({DRAFT_CONTEXT_OBSERVED}; greedy output unchanged; which code reads that length is not established, and a "
    "GPU was not observed)",
}


def _draft_context(versions: str):
    return lambda c: short_context(c, f"{DRAFT_CONTEXT[versions]}; {DRAFT_CONTEXT_FIX}")


draft_context = rule(RULES, "draft-context", "vllm", "<0.27.0", "warning",
     "vllm llama.py:243-266 @0.24.0 (get_rope(max_position=the draft's max_position_embeddings)), "
     "rotary_embedding/base.py:97 (cos_sin_cache rows); vllm#48894 (device-side assert past it when compiled, "
     "unchecked gather in eager)")(_draft_context("<0.27.0"))  # fmt: skip
draft_context_length = rule(RULES, "draft-context-length", "vllm", ">=0.27.0", "warning",
     "vllm config/speculative.py:1393-1400, 1677-1710 @0.32.0 (the rotary raised to the target's max_model_len, "
     "#48894) beside :1686-1692 (the draft's max_model_len stays min(drafter's, target's)); observed: "
     "tests/real_engine/records/vllm-0.32.0-cpu-draft-context.json; engines/vllm/data/draft-settings/vllm-V.json "
     "case 'eagle3/drafter context 2048' (every release)")(_draft_context(">=0.27.0"))  # fmt: skip


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
