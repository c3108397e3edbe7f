"""SGLang: which taps each model file captures for a drafter config, by version (docs/conventions.md (a)).

Read at source in every SGLang release on PyPI from 0.4.5 to 0.5.23 (there is no 0.5.0): the body of each model
file's `set_eagle3_layers_to_capture` and every capture site, grouped by identical code, so each range below is
bracketed by the releases where the code changed. Facts every row shares:
- ids come from `eagle_config.eagle_aux_hidden_state_layer_ids` only (a top-level list is never used for capture);
  no list (or no `eagle_config`) gives the default [2, L//2, L-3] WITHOUT the +1 (model_runner.py /
  spec_aux_hidden_state.py, from 0.4.9);
- states are concatenated in ascending layer order, each layer once;
- before 0.5.11 the CUDA-graph runner set the default ids before capture and the configured ones only after, so
  graph-replayed forwards (decode, verify) fed the default taps (sglang PR #22836, fixed in 0.5.11).
"""

from __future__ import annotations

from dataclasses import replace

from eaglewire.rules.ledger import ledger
from eaglewire.rules.taps import NESTED, Convention, Rule

# target family (targets.FAMILIES) -> the SGLang model file whose rows answer it (engines/models.py gathers
# every engine's map; a family not listed reads as the generic llama-style rule, marked unknown)
MODEL_FILES: dict[str, str] = {
    "llama": "llama",
    "mistral": "llama",
    "llama4": "llama4",
    "qwen2": "qwen2",
    "qwen2_5_vl": "qwen2_5_vl",
    "qwen2_vl": "qwen2_vl",
    "qwen3": "qwen3",
    "qwen3_moe": "qwen3_moe",
    "qwen3_next": "qwen3_next",
    "qwen3_vl": "qwen3_vl",
    "qwen3_vl_moe": "qwen3_vl_moe",  # qwen3_vl.py's setter on qwen3_vl_moe.py's decoder (Qwen2MoeModel's flags)
    "gpt_oss": "gpt_oss",
    "deepseek_v2": "deepseek_v2",
    "deepseek_v3": "deepseek_v2",
    "deepseek_v32": "deepseek_v2",
    "kimi_k2": "deepseek_v2",
    "kimi_k25": "kimi_k25",
    "deepseek_v4": "deepseek_v4",
    "glm4_moe": "glm4_moe",
    "minimax_m2": "minimax_m2",
    "mistral3": "mistral3",
}

TYPE_ERROR = "layer 0 computes hidden_states + residual with residual None: TypeError at the first forward"
CUDA_GRAPH = (
    "SGLang < 0.5.11 applies configured ids only after CUDA-graph capture: every graph-replayed decode and verify "
    "step captures the default ids (sglang PR #22836; --disable-cuda-graph or SGLang >= 0.5.11 avoids it)"
)
CUDA_GRAPH_UNION = (
    "SGLang < 0.5.11 marks layers with a per-layer flag that is never cleared: the CUDA-graph default call plus the "
    "configured call capture the union of both lists on eager steps (up to 6 states; executed in the model-code "
    "records, platform cuda)"
)
INDEX_ERROR = "setattr(self.layers[L], ...) is out of range: IndexError at startup (per-layer capture flag)"
EMPTY = (
    "passed to set_eagle3_layers_to_capture as given (only None means the default): no aux hidden state is "
    "captured and the draft's fc gets none of its inputs (model_runner.py:334-341 @0.4.9; seen in the engine's "
    "own code at 0.5.23, tests/engines)"
)
PACKER = (
    "RuntimeError 'captured N of 3 aux hidden states' at the first forward (AuxHiddenStatePacker.finalize)"
)
QWEN3_VL_DEFAULT = (
    "the default-id path reads num_hidden_layers from the wrapper's config; SGLang's loader copies the text "
    "config's keys there (utils/hf_transformers/config.py:258-267 @0.5.23), so the default works at 0.5.23 "
    "(engine oracle, tests/engines)"
)
READ = "sglang wheels from PyPI, srt/ paths; capture code grouped by identical text across releases"

# Releases whose capture code was read (the ledger's `taps` releases)
ALL = ledger("sglang").read("taps")


def read(spec: str) -> tuple[str, ...]:
    """The releases read that fall inside a specifier set (for a row's `checked`)."""
    from packaging.specifiers import SpecifierSet
    from packaging.version import Version

    return tuple(v for v in ALL if Version(v) in SpecifierSet(spec))


def row(
    key: str,
    versions: str,
    models: tuple[str, ...],
    rule: Rule,
    source: str,
    *,
    h0: str | None = TYPE_ERROR,  # None: h0 reachable (id -1 under +1, id 0 raw)
    hl_crash: str | None = None,
    missing_crash: str | None = None,
    ignores: str | None = None,
    unsupported: str | None = None,
    notes: tuple[str, ...] = (),
    fc_width_keys: tuple[str, ...] = (
        "num_aux_hidden_states",
        "eagle_config.eagle_aux_hidden_state_layer_ids",
    ),
) -> Convention:
    """One SGLang row: the shared facts filled in, the ones that vary by model file and release given."""
    fixed = rule is Rule.FIXED
    return Convention(
        key=key,
        framework="sglang",
        role="serve",
        versions=versions,
        checked=read(versions),
        models=models,
        id_sources=() if fixed or rule is Rule.UNSUPPORTED else (NESTED,),
        rule=rule,
        default="2,L//2,L-3",
        default_rule=Rule.RAW,
        lowest_tap=0 if h0 is None else 1,
        highest_tap="L" if rule is Rule.RAW_IF_MAX_IS_L else "L-1",
        h0_crash=h0,
        hl_crash=hl_crash,
        missing_crash=missing_crash,
        ignores_ids=ignores,
        graph_union=ignores is CUDA_GRAPH_UNION,
        ignores_on="cuda" if ignores else None,  # cpu_graph_runner.py makes no capture call (0.5.10)
        empty_ids=None if fixed or rule is Rule.UNSUPPORTED else EMPTY,
        unsupported=unsupported,
        source=f"{source} ({READ})",
        notes=notes,
        fc_width_keys=fc_width_keys,
    )


def unsupported(key: str, versions: str, models: tuple[str, ...], why: str, source: str) -> Convention:
    return row(key, versions, models, Rule.UNSUPPORTED, source, unsupported=why, h0=None)


FC3 = ()  # before 0.5.12 the draft's fc is hard-coded to 3 aux states (llama_eagle3.py)
LLAMA = ("llama",)  # llama.py; mistral.py's MistralForCausalLM subclasses it
MOE_FLAG = ("qwen3_moe",)  # qwen2_moe.py/qwen3_moe.py: per-layer capture flags from 0.5.5
DEEPSEEK = ("deepseek_v2",)  # deepseek_v2.py: DeepSeek-V2/V3/R1/V3.2 and Kimi-K2 (DeepseekV3ForCausalLM)
DEEPSEEK_KIMI = ("deepseek_v2", "kimi_k25")  # kimi_k25.py delegates to DeepseekV3ForCausalLM (from 0.5.10)

ROWS: tuple[Convention, ...] = (
    # ---- llama.py (Llama 3.x, Mistral): ids read from 0.4.9, +1 throughout, h0 via id -1 from 0.5.22
    row("sglang-llama-<0.4.9", ">=0.4.5,<0.4.9", LLAMA, Rule.FIXED,
        "models/llama.py:638-641 (set_eagle3_layers_to_capture() takes no ids), model_runner.py:222-223 @0.4.5",
        notes=("configured ids are never read before 0.4.9: always the default taps",), fc_width_keys=FC3),
    row("sglang-llama-0.4.9-0.5.10", ">=0.4.9,<0.5.11", LLAMA, Rule.PLUS_ONE,
        "models/llama.py:329-332, 700-712 @0.4.9; cuda_graph_runner.py:297-298 + model_runner.py:314, 341 @0.4.9",
        ignores=CUDA_GRAPH, fc_width_keys=FC3),
    row("sglang-llama-0.5.11-0.5.21", ">=0.5.11,<0.5.22", LLAMA, Rule.PLUS_ONE,
        "models/llama.py:406-409, 812-824 @0.5.14 (same text 0.5.11-0.5.21); model_runner.py:764-771 @0.5.11",
        notes=("fc width: num_aux_hidden_states, else len(eagle_config ids), else 3 from 0.5.12 (3 before)",)),
    row("sglang-llama-0.5.22+", ">=0.5.22", LLAMA, Rule.PLUS_ONE,
        "models/llama.py:485-494, 929-941 @0.5.23; layers/layer_boundary/stage.py:421-432 @0.5.23", h0=None,
        notes=("id -1 captures the embeddings (capture_before_read at layer 0)",
               "id L-1 (the last layer's output) is never captured: the capture loop runs over layer inputs 0..L-1")),
    # ---- llama4.py + mllama4.py (Llama-4 Scout/Maverick, text_config wrapper): capture in the text model
    unsupported("sglang-llama4-<0.4.9", ">=0.4.5,<0.4.9", ("llama4",),
                "SGLang < 0.4.9: Llama4ForConditionalGeneration has no set_eagle3_layers_to_capture (AttributeError)",
                "models/mllama4.py @0.4.8 (no match)"),
    row("sglang-llama4-0.4.9-0.5.10", ">=0.4.9,<0.5.11", ("llama4",), Rule.PLUS_ONE,
        "models/mllama4.py:229-231 (delegates to language_model), llama4.py:380 @0.4.9", ignores=CUDA_GRAPH,
        fc_width_keys=FC3),
    row("sglang-llama4-0.5.11-0.5.20", ">=0.5.11,<0.5.21", ("llama4",), Rule.PLUS_ONE,
        "models/llama4.py:533-537 @0.5.20; mllama4.py:496-500 @0.5.23"),
    row("sglang-llama4-0.5.21+", ">=0.5.21", ("llama4",), Rule.PLUS_ONE,
        "models/llama4.py:456-458, 526-531 @0.5.23; mllama4.py:496-500, 971-973 @0.5.23", h0=None),
    # ---- qwen2.py and qwen2_5_vl.py (Qwen2/2.5, Qwen2.5-VL): EAGLE-3 from 0.5.2 (sglang PR #8801)
    unsupported("sglang-qwen2-<0.5.2", ">=0.4.5,<0.5.2", ("qwen2", "qwen2_5_vl"),
                "SGLang < 0.5.2: Qwen2ForCausalLM / Qwen2_5_VLForConditionalGeneration have no "
                "set_eagle3_layers_to_capture (AttributeError at startup)",
                "models/qwen2.py:330-337 @0.4.9 (loop only); qwen2_5_vl.py @0.5.1 (no match)"),
    row("sglang-qwen2-0.5.2-0.5.10", ">=0.5.2,<0.5.11", ("qwen2", "qwen2_5_vl"), Rule.PLUS_ONE,
        "models/qwen2.py:336-338, 637-650 @0.5.2; qwen2_5_vl.py:501, 657-668 @0.5.2", h0=None, ignores=CUDA_GRAPH,
        fc_width_keys=FC3),
    row("sglang-qwen2-0.5.11+", ">=0.5.11", ("qwen2", "qwen2_5_vl"), Rule.PLUS_ONE,
        "models/qwen2.py:455-464, 781-794 @0.5.23; qwen2_5_vl.py:888-899, 990-1001 @0.5.23", h0=None,
        notes=("qwen2_5_vl.py has no pipeline-parallel check; the default uses the top-level num_hidden_layers",)),
    # ---- qwen3.py (Qwen3 dense): EAGLE-3 from 0.4.9 (sglang PR #7745)
    # qwen3.py and qwen3_moe.py enter the registry at 0.4.5.post2 (0.4.5.post1's registry refuses them)
    unsupported("sglang-qwen3-<0.4.9", ">=0.4.5.post2,<0.4.9", ("qwen3",),
                "SGLang < 0.4.9: Qwen3ForCausalLM has no set_eagle3_layers_to_capture",
                "models/qwen3.py @0.4.5.post2, @0.4.8 (no match)"),
    row("sglang-qwen3-0.4.9-0.5.10", ">=0.4.9,<0.5.11", ("qwen3",), Rule.PLUS_ONE,
        "models/qwen3.py:245, 461-474 @0.4.9 (capture in Qwen2Model.forward, residual guard at layer 0)", h0=None,
        ignores=CUDA_GRAPH, fc_width_keys=FC3),
    row("sglang-qwen3-0.5.11+", ">=0.5.11", ("qwen3",), Rule.PLUS_ONE,
        "models/qwen3.py:439, 692-705 @0.5.14; 523-532, 778-791 @0.5.23", h0=None),
    # ---- qwen3_moe.py (Qwen3 MoE): list capture to 0.5.4, per-layer flags from 0.5.5
    unsupported("sglang-qwen3-moe-<0.4.9", ">=0.4.5.post2,<0.4.9", MOE_FLAG,
                "SGLang < 0.4.9: Qwen3MoeForCausalLM has no set_eagle3_layers_to_capture",
                "models/qwen3_moe.py @0.4.5.post2, @0.4.8 (no match)"),
    # the per-layer flags arrive at 0.5.4.post2: its qwen3_moe.py capture code is 0.5.5's, and its model-code
    # record captures what 0.5.5's does
    row("sglang-qwen3-moe-0.4.9-0.5.4.post1", ">=0.4.9,<0.5.4.post2", MOE_FLAG, Rule.PLUS_ONE,
        "models/qwen3_moe.py:759-772, qwen2_moe.py:479-488 @0.4.9", h0=None, ignores=CUDA_GRAPH, fc_width_keys=FC3),
    row("sglang-qwen3-moe-0.5.4.post2-0.5.10", ">=0.5.4.post2,<0.5.11", MOE_FLAG, Rule.PLUS_ONE,
        "models/qwen2_moe.py:562-565, 611-615, qwen3_moe.py:548, 774-789 @0.5.5 (the same capture code from "
        "0.5.4.post2)", h0=None, hl_crash=INDEX_ERROR, ignores=CUDA_GRAPH_UNION, fc_width_keys=FC3),
    row("sglang-qwen3-moe-0.5.11+", ">=0.5.11", MOE_FLAG, Rule.PLUS_ONE,
        "models/qwen2_moe.py:1153-1156, 1197-1202, qwen3_moe.py:1128-1143 @0.5.23; layers/communicator.py:226-244",
        h0=None, hl_crash=INDEX_ERROR, notes=("id -2 wraps to layers[-1] and silently captures h_{L-1} (inferred)",)),
    # ---- qwen3_next.py (Qwen3-Next): from 0.5.9, per-layer flags
    unsupported("sglang-qwen3-next-<0.5.9", ">=0.5.2,<0.5.9", ("qwen3_next",),
                "SGLang < 0.5.9: Qwen3NextForCausalLM has no set_eagle3_layers_to_capture", "models/qwen3_next.py @0.5.8"),
    row("sglang-qwen3-next-0.5.9-0.5.10", ">=0.5.9,<0.5.11", ("qwen3_next",), Rule.PLUS_ONE,
        "models/qwen3_next.py:849-852, 1139-1154 @0.5.9", h0=None, hl_crash=INDEX_ERROR, ignores=CUDA_GRAPH_UNION,
        fc_width_keys=FC3),
    row("sglang-qwen3-next-0.5.11+", ">=0.5.11", ("qwen3_next",), Rule.PLUS_ONE,
        "models/qwen3_next.py:954-957, 988-994, 1286-1301 @0.5.23", h0=None, hl_crash=INDEX_ERROR),
    # ---- qwen3_vl.py / qwen3_vl_moe.py (Qwen3-VL): from 0.5.11 (sglang PR #22230)
    unsupported("sglang-qwen3-vl-<0.5.11", ">=0.5.3,<0.5.11", ("qwen3_vl", "qwen3_vl_moe"),
                "SGLang 0.5.3-0.5.10: Qwen3VL(Moe)ForConditionalGeneration has no set_eagle3_layers_to_capture "
                "(AttributeError; users patched qwen3_vl.py, SpecForge#310)",
                "models/qwen3_vl.py:998-1006, qwen3_vl_moe.py:97-103 @0.5.10"),
    row("sglang-qwen3-vl-0.5.11+", ">=0.5.11", ("qwen3_vl",), Rule.PLUS_ONE,
        "models/qwen3_vl.py:1111-1113, 1398-1409 @0.5.11; 1229-1262, 1777-1795 @0.5.23", h0=None,
        notes=(QWEN3_VL_DEFAULT,)),
    # Qwen3-VL-MoE: the same setter hands the ids to Qwen3MoeLLMModel, whose inherited Qwen2MoeModel setter flags
    # layers[i] (id L-1 -> layers[L]: IndexError); its forward loop reads the list. Read at 0.5.23 only.
    replace(row("sglang-qwen3-vl-moe-0.5.11+", ">=0.5.11", ("qwen3_vl_moe",), Rule.PLUS_ONE,
                "models/qwen3_vl.py:1777-1795, qwen3_vl_moe.py:44, 106-136, 197-205, qwen2_moe.py:1153-1156 @0.5.23 "
                "(engine oracle, tests/engines)", h0=None, hl_crash=INDEX_ERROR, notes=(QWEN3_VL_DEFAULT,)),
            checked=("0.5.23",)),
    # ---- gpt_oss.py (gpt-oss): +1 until 0.5.16; from 0.5.17 raw when max(ids) == L (sglang #32226, PR #32334)
    unsupported("sglang-gpt-oss-<0.5.1", ">=0.4.5,<0.5.1", ("gpt_oss",),
                "SGLang < 0.5.1 has no gpt_oss.py", "gpt_oss.py absent before 0.5.1"),
    row("sglang-gpt-oss-0.5.1-0.5.10", ">=0.5.1,<0.5.11", ("gpt_oss",), Rule.PLUS_ONE,
        "models/gpt_oss.py:570, 1135-1147 @0.5.1", ignores=CUDA_GRAPH, fc_width_keys=FC3),
    row("sglang-gpt-oss-0.5.11-0.5.16", ">=0.5.11,<0.5.17", ("gpt_oss",), Rule.PLUS_ONE,
        "models/gpt_oss.py:689-696, 1284-1296 @0.5.16; sglang #32226 ('crashed while combining tensors of width "
        "8,640 and 5,760')",
        notes=("norm_before_fc is ignored by the drafter before 0.5.17 (llama_eagle3.py)",)),
    row("sglang-gpt-oss-0.5.17+", ">=0.5.17", ("gpt_oss",), Rule.RAW_IF_MAX_IS_L,
        "models/gpt_oss.py:727-737, 1328-1343 @0.5.17; 710-738, 1337-1352 @0.5.23; sglang PR #32334", h0=None,
        notes=("ids whose largest value is L are boundary (HF) indices, taken raw; otherwise +1",)),
    # ---- deepseek_v2.py (DeepSeek V2/V3/R1/V3.2, Kimi-K2) and kimi_k25.py (Kimi-K2.5 wrapper, from 0.5.10)
    unsupported("sglang-deepseek-<0.5.4.post2", ">=0.4.5,<0.5.4.post2", DEEPSEEK,
                "SGLang < 0.5.4.post2: DeepseekV2/V3ForCausalLM has no set_eagle3_layers_to_capture",
                "models/deepseek_v2.py @0.5.4, @0.5.4.post1 (no match)"),
    unsupported("sglang-kimi-k25-<0.5.10", ">=0.4.5,<0.5.10", ("kimi_k25",),
                "SGLang < 0.5.10: KimiK25ForConditionalGeneration has no set_eagle3_layers_to_capture (no kimi_k25.py "
                "before 0.5.9)",
                "models/kimi_k25.py @0.5.9 (no match)"),
    row("sglang-deepseek-0.5.4.post2-0.5.9", ">=0.5.4.post2,<0.5.10", DEEPSEEK, Rule.PLUS_ONE,
        "models/deepseek_v2.py:2852, 2912, 3779-3791 @0.5.4.post2 (its model-code record); 2952-2956, 3822-3834 "
        "@0.5.5", ignores=CUDA_GRAPH, fc_width_keys=FC3),
    row("sglang-deepseek-0.5.10", ">=0.5.10,<0.5.11", DEEPSEEK_KIMI, Rule.PLUS_ONE,
        "models/deepseek_v2.py:2052-2059, 2295-2307 @0.5.10; kimi_k25.py:711, 841-850 @0.5.10", ignores=CUDA_GRAPH,
        fc_width_keys=FC3),
    row("sglang-deepseek-0.5.11-0.5.12", ">=0.5.11,<0.5.13", DEEPSEEK_KIMI, Rule.PLUS_ONE,
        "models/deepseek_v2.py:2529-2541 @0.5.12.post1; 2302-2307, 2052-2059 @0.5.10"),
    row("sglang-deepseek-0.5.13", ">=0.5.13,<0.5.14", DEEPSEEK_KIMI, Rule.FIRST_IS_ONE,
        "models/deepseek_v2.py:2446-2453, 2740-2755 @0.5.13; PR sgl-project/sglang#25454",
        notes=("the +1 applies only when the FIRST listed id is 1 (list order matters, not the sorted order)",
               "raw id 0 still reaches the old capture loop at layer 0: TypeError")),
    row("sglang-deepseek-0.5.14-0.5.16", ">=0.5.14,<0.5.17", DEEPSEEK_KIMI, Rule.FIRST_IS_ONE,
        "models/deepseek_v2.py:2116-2123, 2499-2503, 2799-2814 @0.5.14; layers/communicator.py:488-515", h0=None,
        notes=("the +1 applies only when the FIRST listed id is 1 (list order matters, not the sorted order)",)),
    row("sglang-deepseek-0.5.17+", ">=0.5.17", DEEPSEEK_KIMI, Rule.FIRST_IS_ONE,
        "models/deepseek_v2.py:3175, 3243-3245, 3458-3473 @0.5.23; PR sgl-project/sglang#25454; aux_hidden_states.py:84-90; "
        "kimi_k25.py:691-693, 928-939 @0.5.23", h0=None, missing_crash=PACKER,
        notes=("the +1 applies only when the FIRST listed id is 1 (list order matters, not the sorted order)",
               "Kimi-K2.5 (KimiK25ForConditionalGeneration) wraps DeepseekV3ForCausalLM and follows this row",
               "with --enable-two-batch-overlap, layers >= first_k_dense_replace are not captured (inferred)")),
    unsupported("sglang-deepseek-v4", ">=0.5.12", ("deepseek_v4",),
                "SGLang (through 0.5.23) has no EAGLE-3 for DeepseekV4ForCausalLM (only DSpark layer capture)",
                "models/deepseek_v4.py:4633, 5034-5041 @0.5.23"),
    # ---- glm4_moe.py (GLM-4.5/4.6): from 0.5.5
    # glm4_moe.py enters the registry at 0.4.9.post5
    unsupported("sglang-glm4-moe-<0.5.5", ">=0.4.9.post5,<0.5.5", ("glm4_moe",),
                "SGLang < 0.5.5: Glm4MoeForCausalLM has no set_eagle3_layers_to_capture", "models/glm4_moe.py @0.5.4"),
    row("sglang-glm4-moe-0.5.5-0.5.10", ">=0.5.5,<0.5.11", ("glm4_moe",), Rule.PLUS_ONE,
        "models/glm4_moe.py:900, 1165-1177 @0.5.5", ignores=CUDA_GRAPH, fc_width_keys=FC3),
    row("sglang-glm4-moe-0.5.11-0.5.20", ">=0.5.11,<0.5.21", ("glm4_moe",), Rule.PLUS_ONE,
        "models/glm4_moe.py:1098-1104, 1430-1442 @0.5.20"),
    row("sglang-glm4-moe-0.5.21+", ">=0.5.21", ("glm4_moe",), Rule.PLUS_ONE,
        "models/glm4_moe.py:844-849, 953-959, 1269-1281 @0.5.23", h0=None),
    # ---- minimax_m2.py (MiniMax-M2): EAGLE-3 from 0.5.5.post1
    # minimax_m2.py enters the registry at 0.5.4.post1 and gains its setter at 0.5.5.post1 (0.5.6's capture code)
    unsupported("sglang-minimax-m2-<0.5.5.post1", ">=0.5.4.post1,<0.5.5.post1", ("minimax_m2",),
                "SGLang 0.5.4.post1-0.5.5: MiniMaxM2ForCausalLM has no set_eagle3_layers_to_capture",
                "models/minimax_m2.py @0.5.4.post1, @0.5.5"),
    row("sglang-minimax-m2-0.5.5.post1-0.5.10", ">=0.5.5.post1,<0.5.11", ("minimax_m2",), Rule.PLUS_ONE,
        "models/minimax_m2.py:706, 766-779 @0.5.6 (the same capture code from 0.5.5.post1)", ignores=CUDA_GRAPH,
        fc_width_keys=FC3),
    row("sglang-minimax-m2-0.5.11+", ">=0.5.11", ("minimax_m2",), Rule.PLUS_ONE,
        "models/minimax_m2.py:972, 1233-1246 @0.5.11; 999-1004, 1067-1080 @0.5.23", h0=None),
    # ---- wrappers with no EAGLE-3 path
    # Mistral3ForConditionalGeneration enters the registry at 0.4.6.post5 (mistral.py, a LlavaForConditionalGeneration)
    unsupported("sglang-mistral3", ">=0.4.6.post5", ("mistral3",),
                "SGLang has no EAGLE-3 for Mistral3ForConditionalGeneration (llava.py has no set_eagle3_layers_to_capture)",
                "models/mistral.py:29, 93 @0.4.6.post5; mistral.py:94, llava.py @0.5.23"),
    replace(unsupported("sglang-qwen2-vl", ">=0.4.5", ("qwen2_vl",),
                        "SGLang has no EAGLE-3 for Qwen2VLForConditionalGeneration: ValueError 'does not implement "
                        "set_eagle3_layers_to_capture' at startup (read at 0.5.23 only)",
                        "models/qwen2_vl.py:425 (no set_eagle3_layers_to_capture); model_runner_components/"
                        "attention_backend_setup.py:54-61 @0.5.23 (engine oracle, tests/engines)"),
            checked=("0.5.23",)),
)  # fmt: skip
