"""Trainers: which taps a drafter was trained on, given the ids in the checkpoint its trainer wrote, by version.

A trainer's convention is the capture of the engine or hook it trained through: speculators >= 0.5 through vLLM's
`extract_hidden_states` (F(v) = v), speculators 0.3-0.4 through its own patched vLLM worker (output of layer v,
F(v) = v + 1, ids never written), SpecForge through the SGLang it pinned (so its DeepSeek/Kimi convention changed
with sglang PR #25454), modelopt, AngelSlim and NeMo Automodel through forward hooks on layer outputs (v + 1),
EAGLE with hard-coded taps. Sources: the trainers' repositories at the tags and commits named in each row
(docs/conventions.md (a)).
"""

from __future__ import annotations

from eaglewire.rules.taps import NESTED, TOP, Convention, IdSource, Rule

# SpecForge captures through SGLang's model files: the +1 ones, and deepseek_v2.py's (first-id rule from 0.5.13).
SGL_PLUS_ONE_MODELS = ("llama", "llama4", "qwen2", "qwen2_5_vl", "qwen3", "qwen3_moe", "qwen3_next", "qwen3_vl",
                       "qwen3_vl_moe", "glm4_moe", "minimax_m2", "gpt_oss")  # fmt: skip
SGL_DEEPSEEK = ("deepseek_v2", "kimi_k25")
ANGELSLIM_IDS = IdSource("aux_hidden_states_layer_ids")  # AngelSlim's own key: no engine reads it


def trainer(
    key: str,
    framework: str,
    versions: str,
    checked: tuple[str, ...],
    rule: Rule,
    source: str,
    *,
    models: tuple[str, ...] = ("*",),
    ids: tuple[IdSource, ...] = (NESTED,),
    default: str = "1,L//2-1,L-4",
    default_rule: Rule | None = None,
    lowest: int = 1,
    highest: str = "L",
    exactly: int | None = None,
    records_ids: bool = True,
    via: str | None = None,
    unsupported: str | None = None,
    verified_all: bool = False,
    notes: tuple[str, ...] = (),
) -> Convention:
    """One trainer row (`records_ids` False: the trainer never wrote the ids it used into the checkpoint)."""
    return Convention(
        key=key,
        framework=framework,
        role="train",
        versions=versions,
        checked=checked,
        models=models,
        id_sources=ids if rule not in (Rule.FIXED, Rule.UNSUPPORTED) else (),
        rule=rule,
        default=default,
        default_rule=default_rule or rule,
        lowest_tap=lowest,
        highest_tap=highest,
        h0_crash=None,
        exactly=exactly,
        reads_speculators_format=framework == "speculators",
        source=source,
        notes=notes,
        unsupported=unsupported,
        via=via,
        records_ids=records_ids,
        verified_all=verified_all,
    )


SPEC = "vllm-project/speculators"
SF = "sgl-project/SpecForge"
SF_EXACTLY = "ids must be exactly 3 distinct non-negative integers; id -1 is rejected"

ROWS: tuple[Convention, ...] = (
    # ---- speculators
    trainer("speculators-<0.3", "speculators", "<0.3.0", ("0.1.0", "0.2.0"), Rule.UNSUPPORTED,
            f"{SPEC} v0.1.0-v0.2.0: no trainer in the package (research/ scripts only); the converter copies ids verbatim",
            unsupported="speculators < 0.3 has no trainer: a checkpoint of that version is a conversion whose ids are "
                        "whatever was passed to `speculators convert`"),
    trainer("speculators-0.3-0.4", "speculators", ">=0.3.0,<0.5.0", ("0.3.0", "0.4.0", "0.4.0.1"), Rule.PLUS_ONE,
            f"{SPEC} v0.3.0 data_generation/custom_worker.py:44-52 (capture after layer v), "
            "vllm_hidden_states_generator.py:96-97 (default [2, L//2, L-3]); scripts/train.py:120-146 (no ids written)",
            ids=(TOP,), default="2,L//2,L-3", lowest=1, highest="L", records_ids=False, via="vllm",
            notes=("with its datagen defaults it captured h3, h(L//2+1), h(L-2): every tap one above what engines "
                   "feed a config without ids (inferred; no report found)",)),
    trainer("speculators-0.9", "speculators", ">=0.5.0", ("0.5.0", "0.6.0", "0.7.0", "0.8.0", "0.9.0"), Rule.RAW,
            f"speculators 0.9.0 models/utils.py:99-140; models/eagle3/core.py:164-172, 391-409; {SPEC} v0.5.0 "
            "scripts/launch_vllm.py:40-77 (training data captured by vLLM extract_hidden_states)",
            ids=(TOP,), default="2,L//2,L-3", lowest=0, via="vllm",
            notes=("training data comes from vLLM, so on DeepSeek/Kimi targets id 0 crashes vLLM's capture and "
                   "id L needs vLLM >= 0.25 (inferred)",)),
    # ---- SpecForge (through SGLang's capture; the SGLang pin decides the DeepSeek/Kimi rule)
    trainer("specforge-0.1", "specforge", "==0.1.*", ("0.1.0",), Rule.FIXED,
            f"{SF}@3234e24a specforge/core/eagle3.py:95-110 (online: hard-coded 1, L//2-1, L-4 + HF offset 1); "
            "scripts/prepare_hidden_states.py:91-99 (offline: the same list through SGLang's +1)",
            default_rule=Rule.PLUS_ONE, notes=("SpecForge 0.1 ignores configured ids: its taps are fixed",)),
    trainer("specforge-0.2", "specforge", "==0.2.*", ("0.2.0",), Rule.PLUS_ONE,
            f"{SF}@73e6f808 (v0.2.0, sglang==0.5.6 pinned): SGLang 0.5.6 +1 for every model file, deepseek_v2.py "
            "unconditional +1 (<= 0.5.12); HF backend hooks on layer outputs (+1)",
            models=(*SGL_PLUS_ONE_MODELS, *SGL_DEEPSEEK), exactly=3, notes=(SF_EXACTLY,)),
    trainer("specforge-main-sglang-0.5.9", "specforge", ">0.2.0", ("961ca7c3",), Rule.PLUS_ONE,
            f"{SF}@961ca7c3 (2026-03-16, sglang==0.5.9 pinned until 2026-06-27): deepseek_v2.py unconditional +1",
            models=SGL_DEEPSEEK, exactly=3, verified_all=True, records_ids=False,
            notes=(SF_EXACTLY, "a run override model.aux_hidden_state_layer_ids is never written to the checkpoint")),
    trainer("specforge-llama", "specforge", ">0.2.0", ("a6b6b02",), Rule.PLUS_ONE,
            f"{SF}@a6b6b02 algorithms/model_providers.py:188-211; application/planning.py:96-111; capture through "
            "sglang 0.5.14 (llama.py +1)", models=SGL_PLUS_ONE_MODELS, exactly=3, verified_all=True,
            records_ids=False,
            notes=(SF_EXACTLY, "a run override model.aux_hidden_state_layer_ids is never written to the checkpoint")),
    trainer("specforge-deepseek", "specforge", ">0.2.0", ("a6b6b02",), Rule.FIRST_IS_ONE,
            f"{SF}@a6b6b02 algorithms/model_providers.py:188-211; capture through sglang 0.5.14 deepseek_v2.py:2799-2814 "
            "(first-id rule, sglang PR #25454; pinned from 9a1c9803, 2026-06-27)", models=SGL_DEEPSEEK, lowest=0,
            highest="L-1", exactly=3, verified_all=True, records_ids=False,
            notes=(SF_EXACTLY, "before the 2026-06-27 pin SGLang 0.5.9 added 1 to every id (row "
                   "specforge-main-sglang-0.5.9)")),
    # ---- modelopt (forward hooks on decoder-layer outputs: v + 1; the embeddings cannot be hooked)
    trainer("modelopt-<0.35", "modelopt", ">=0.29.0,<0.35.0", ("0.29.0", "0.31.0", "0.33.0"), Rule.PLUS_ONE,
            "nvidia-modelopt 0.31.0 torch/speculative/plugins/megatron.py:742-748 (aux capture in the Megatron "
            "plugin only; hook on layer outputs)"),
    trainer("modelopt-0.35-0.44", "modelopt", ">=0.35.0,<0.45.0",
            ("0.35.0", "0.37.0", "0.39.0", "0.40.0", "0.41.0", "0.42.0", "0.43.0", "0.44.0"), Rule.PLUS_ONE,
            "nvidia-modelopt 0.35.0 torch/speculative/plugins/transformers.py:347-356, 445-450 (hooks on layer "
            "outputs; default list(set(...)) so the exported list can be unsorted)",
            notes=("the exported list may be unsorted (L=36 gives [32, 1, 17]); hooks still fire in layer order",)),
    trainer("modelopt-0.47", "modelopt", ">=0.45.0", ("0.45.0", "0.46.0", "0.47.0"), Rule.PLUS_ONE,
            "nvidia-modelopt 0.47.0 torch/speculative/plugins/hf_eagle.py:58-63, 201-232, 402-406",
            notes=("forward hooks on decoder-layer outputs: the embeddings cannot be captured",)),
    # ---- AngelSlim and NeMo Automodel (hooks / HF index v + 1; ids in AngelSlim's own key, or not written)
    trainer("angelslim", "angelslim", "", ("67394ce",), Rule.PLUS_ONE,
            "Tencent/AngelSlim@67394ce train/trainer/online_eagle3_trainer.py:54-55, 114-115; "
            "train/models/target/target_model_wrapper.py:578-593, 612-629",
            ids=(ANGELSLIM_IDS,), verified_all=True,
            notes=("the ids live in AngelSlim's own key aux_hidden_states_layer_ids, which no engine reads",)),
    trainer("automodel", "automodel", "", ("2026-08-11",), Rule.PLUS_ONE,
            "NVIDIA-NeMo/Automodel components/speculative/eagle/target.py:42-81, 285; recipes/llm/train_eagle3.py:"
            "543-570 (ids not written to the config)", ids=(), verified_all=True, records_ids=False),
    # ---- EAGLE reference: hard-coded inputs of layers 2, L//2, L-3
    trainer("eagle-reference", "eagle", "", ("cb7e084",), Rule.FIXED,
            "SafeAILab/EAGLE@cb7e084 eagle/model/modeling_llama_kv.py:1138-1139; traineagle3/cnets.py:499",
            default="2,L//2,L-3", default_rule=Rule.RAW, lowest=0, verified_all=True,
            notes=("no config: taps are hard-coded to the inputs of layers 2, L//2, L-3",)),
)  # fmt: skip

TRAINERS = ("speculators", "specforge", "modelopt", "eagle", "angelslim", "automodel")
# The newest release read of the trainers that have releases (the others are read at commits)
NEWEST = {"speculators": "0.9.0", "modelopt": "0.47.0"}
