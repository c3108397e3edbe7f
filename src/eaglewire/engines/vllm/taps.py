"""vLLM: which taps each model class captures for a drafter config, by version and model runner.

Read at source in every vLLM wheel from 0.8.3 to 0.33.0. vLLM's F(v) is always v (an id is an HF hidden-state
index); what changes by version is where the ids are read (never before 0.11.1; V1 top-level only 0.11.1-0.21;
V1 also nested from 0.22; the V2 model runner never reads the nested `eagle_config` list), which taps a model
class can capture (h0 and h_L), when a family gets EAGLE-3 at all (a model_type gate until 0.21: data/registry.json), and which runner
is the default (MRV2 for Qwen3 from 0.22, Llama/Mistral 0.23, DeepSeek-V2 0.24, dense models 0.25, all 0.29).
The rows up to 0.32 are generated from those facts (`_generated`); from 0.33 on the hand-read rows hold, open above:
a newer release whose capture code is unchanged joins them by being marked read (`taps`) in the ledger.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, replace

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from eaglewire.rules.ledger import ledger
from eaglewire.rules.taps import (
    DFLASH,
    NESTED,
    NESTED_LAYER_IDS,
    TOP,
    Convention,
    IdSource,
    Rule,
)

# target family (targets.FAMILIES) -> the vLLM model file whose rows answer it (engines/models.py gathers
# every engine's map; a family not listed reads as the generic llama-style rule, marked unknown)
MODEL_FILES: dict[str, str] = {
    "llama": "llama",
    "mistral": "mistral",
    "llama4": "llama4",
    "qwen2": "qwen2",
    "qwen2_5_vl": "qwen2_5_vl",
    "qwen2_vl": "qwen2_vl",
    "qwen3": "qwen3",
    "qwen3_moe": "qwen3_moe",
    "qwen3_next": "qwen3_next",
    "qwen3_vl": "qwen3_vl",
    "qwen3_vl_moe": "qwen3_vl_moe",
    "gpt_oss": "gpt_oss",
    "deepseek_v2": "deepseek_v2",
    "deepseek_v3": "deepseek_v3",
    "deepseek_v32": "deepseek_v32",  # on CUDA vllm/models/deepseek_v32/nvidia/model.py, its own decoder
    "deepseek_v4": "deepseek_v4",  # on CUDA vllm/models/deepseek_v4/nvidia/model.py
    "kimi_k2": "deepseek_v3",
    "kimi_k25": "kimi_k25",
    "glm4_moe": "glm4_moe",
    "minimax_m2": "minimax_m2",
    "mistral3": "mistral3",
}

# Model classes with vLLM's EagleModelMixin capture (index 0 before the layers, id idx+1 after layer idx).
VLLM_MIXIN_MODELS = ("llama", "mistral", "llama4", "qwen2", "qwen2_5_vl", "qwen3", "qwen3_vl", "qwen3_vl_moe", "qwen3_moe",
                     "gpt_oss", "minimax_m2", "qwen3_next", "mistral3", "eagle_model_mixin")  # fmt: skip
VLLM_DEEPSEEK = ("deepseek_v2", "deepseek_v3", "kimi_k25")
READ = ledger("vllm").read("taps")  # releases whose capture code was read (the ledger's `taps` releases)
END = "0.33.0"  # the generated rows stop here; the hand-read rows (ROWS_0_33) hold from here on, open above
# 0.34.0 removes the V1 model runner: MRV2 on every platform, the CPU included (x86 with triton-cpu)
MRV2_ONLY_FROM = "0.34.0"
MRV2_ONLY_SRC = (
    "0.34.0: v1/worker/gpu_model_runner.py removed, the CPU runs MRV2 (v1/worker/cpu/model_runner.py:10, "
    "platforms/cpu.py:242-243), capture unchanged (models/interfaces.py:1621-1785; executed: "
    "engines/vllm/data/observed/vllm-0.34.0-model-code.json)"
)

VLLM_SRC = (
    "vllm 0.33.0 v1/worker/gpu_model_runner.py:5169-5224; v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:"
    "25-40,113-150; models/interfaces.py:1608-1650,1751-1772"
)


TYPE_ERROR = "residual is None before layer 0: hidden_states + residual raises TypeError at the first forward"


@dataclass(frozen=True)
class Capture:
    since: str  # first version of this capture code
    lowest: int  # 0: h0 reachable
    highest: str  # "L" or "L-1"
    source: str
    h0_crash: str | None = TYPE_ERROR  # what id 0 does where h0 is not reachable (None: it captures nothing)


def _since(lo: str) -> tuple[str, ...]:
    return tuple(v for v in READ if Version(v) >= Version(lo))


def _rows_0_33(
    name: str,
    models: tuple[str, ...],
    source: str,
    *,
    lowest: int = 0,
    highest: str = "L",
    h0_crash: str | None = None,
    missing_crash: str | None = None,
    notes: tuple[str, ...] = (),
    cpu: Capture | None = None,
) -> tuple[Convention, ...]:
    """The MRV2 (default on GPU) and V1 rows of one decoder from 0.33 (checked: every release read from 0.33 on):
    F(v) = v; V1 reads top-level then eagle_config; MRV2 never reads the nested ids. What differs by decoder is
    which taps its loop reaches. `cpu`: the capture of the class the CPU platform serves the models with, where it
    is another (the V1 row then holds on CUDA, a V1 row of its own on the CPU)."""
    mrv2_note = "MRV2 does NOT read eagle_config.eagle_aux_hidden_state_layer_ids"
    v1_until = f"<{MRV2_ONLY_FROM}"
    out = []
    for runner, ids, extra, more, versions in (
        (
            "mrv2",
            (TOP, DFLASH, NESTED_LAYER_IDS),
            "; config/vllm.py:731-767 (MRV2 is the default on GPU)",
            (mrv2_note,),
            f">={END},{v1_until}" if cpu is not None else f">={END}",
        ),
        ("v1", (TOP, NESTED, DFLASH), "", (), f">={END},{v1_until}"),
    ):
        row = Convention(
            key=f"vllm-{name}-{runner}-0.33", framework="vllm", role="serve", versions=versions,
            checked=tuple(v for v in _since(END) if Version(v) in SpecifierSet(versions)), models=models,
            runner=runner, default_runner=runner == "mrv2", id_sources=ids, rule=Rule.RAW, default="2,L//2,L-3",
            default_rule=Rule.RAW, lowest_tap=lowest, highest_tap=highest, h0_crash=h0_crash,
            missing_crash=missing_crash, reads_speculators_format=True,
            source=f"vllm 0.33.0 {source}; {VLLM_SRC}{extra}", notes=(*more, *notes),
        )  # fmt: skip
        if cpu is not None and runner == "v1":
            out += _on_platforms(row, cpu, f"vllm 0.33.0 {cpu.source}; {VLLM_SRC}", missing_crash=None)
        else:
            out.append(row)
    if cpu is not None:  # from 0.34.0 the CPU runs MRV2 too, on the class its platform serves the models with
        mrv2 = replace(out[0], key=f"vllm-{name}-mrv2-0.34", versions=f">={MRV2_ONLY_FROM}",
                       checked=_since(MRV2_ONLY_FROM), source=f"{out[0].source}; {MRV2_ONLY_SRC}")  # fmt: skip
        out += _on_platforms(
            mrv2, cpu, f"vllm 0.33.0 {cpu.source}; {VLLM_SRC}; {MRV2_ONLY_SRC}", missing_crash=None
        )
    return tuple(out)


def _on_platforms(row: Convention, cpu: Capture | str, source: str, **extra) -> tuple[Convention, Convention]:
    """A row of the runner a CPU runs (V1; MRV2 from 0.34.0) where the CPU platform serves the models with a class of
    its own (`Group.cpu`, `_rows_0_33(cpu=)`): the GPU server's row, held on CUDA, and the CPU's beside it, its
    capture (cited by `source`) or its failure at load (a str)."""
    gpu = replace(row, platform="cuda")
    if isinstance(cpu, str):
        return gpu, _refusal(f"{row.key}-cpu", row.versions, row.checked, row.models, row.runner, row.default_runner, cpu,
                             platform="cpu", refused_at="load", source=row.source)  # fmt: skip
    return gpu, replace(row, key=f"{row.key}-cpu", platform="cpu", lowest_tap=cpu.lowest, highest_tap=cpu.highest,
                        h0_crash=cpu.h0_crash if cpu.lowest else None, source=source, notes=(), **extra)  # fmt: skip


DEEPSEEK_TYPE_ERROR = (
    "DeepseekV2Model computes hidden_states + residual with residual None at index 0: TypeError"
)
# The CPU platform's own classes (vllm/models/<package>/__init__.py picks by platform). DeepSeek-V3.2 from 0.29.0:
# every platform but CUDA and ROCm takes deepseek_v2.py's generic DeepseekV3ForCausalLM, which captures like the
# other DeepSeek targets (id 0 raises, id L is captured), not as the CUDA DSA decoder does. DeepSeek-V4 0.25.0-0.29.0:
# a CPU takes nvidia/model.py (only ROCm has its own), whose DeepseekV4Model.__init__ builds CUDA streams; from
# 0.30.0 its cpu/model.py, which captures as the CUDA decoder (its layers apply mhc_post themselves: no TileLang
# mHC kernels on a CPU, layers/mhc.py). Executed: the model-code records' V1 request on the CPU's class (`on_cpu`).
DEEPSEEK_V32_CPU = Capture(
    "0.29.0", 1, "L", "on a CPU vllm/models/deepseek_v32/__init__.py:17-30 @0.29.0 takes models/deepseek_v2.py's "
    "DeepseekV3ForCausalLM (end-layer capture, vllm PR #46973); executed: engines/vllm/data/observed/"
    "vllm-0.29.0..0.33.0-model-code.json (platform cpu)", h0_crash=TYPE_ERROR)  # fmt: skip
DEEPSEEK_V4_CPU_FAILS = (
    "a CPU launch fails at load: vllm/models/deepseek_v4/__init__.py takes nvidia/model.py on every platform but "
    "ROCm, whose DeepseekV4Model.__init__ builds torch.cuda.Stream()s (nvidia/model.py:969 @0.25.0): RuntimeError: "
    "torch.cuda.Stream requires CUDA support (executed: the model-code records' real-decoder build, 0.25.0-0.29.0)"
)
DEEPSEEK_V4_CPU = Capture(
    "0.30.0", 1, "L", "on a CPU vllm/models/deepseek_v4/__init__.py:33-39 @0.30.0 takes cpu/model.py, whose loop "
    "captures id idx+1 after layer idx as the mean of the streams its unfused layer reconstructs, id L included, "
    "id 0 never; executed: engines/vllm/data/observed/vllm-0.30.0..0.33.0-model-code.json (platform cpu)",
    h0_crash=None)  # fmt: skip
FEWER = "fewer aux states than ids: the drafter's fc input width no longer matches (a shape error downstream)"
ROWS_0_33: tuple[Convention, ...] = (
    *_rows_0_33("llama", VLLM_MIXIN_MODELS, "models/interfaces.py:1639-1648 (EagleModelMixin)"),
    *_rows_0_33("deepseek", VLLM_DEEPSEEK, "models/deepseek_v2.py:1525, 1545-1571, 1586-1587, 1955-1956; "
                "kimi_k25.py:376-380, 470-471", lowest=1, h0_crash=DEEPSEEK_TYPE_ERROR),
    # DeepSeek-V3.2 on CUDA: vllm/models/deepseek_v32/__init__.py:17-21 picks nvidia/model.py, whose
    # DeepseekV32Model captures before layer k (k = 0: the embeddings, residual None) and never after the loop.
    *_rows_0_33("deepseek-v32", ("deepseek_v32",), "vllm/models/deepseek_v32/__init__.py:17-21, nvidia/model.py:"
                "169, 284-323, 432-438 (engine oracle, tests/engines)", highest="L-1", missing_crash=FEWER,
                cpu=replace(DEEPSEEK_V32_CPU, h0_crash=DEEPSEEK_TYPE_ERROR),
                notes=("id L (the last layer's output) is never captured on CUDA: the DSA decoder has no "
                       "end-layer capture (the generic deepseek_v2.py one has)",)),
    # DeepSeek-V4 on CUDA: nvidia/model.py captures id idx+1 after layer idx as the mean of the reconstructed
    # hyper-connection streams; id 0 (the embeddings) is never captured.
    *_rows_0_33("deepseek-v4", ("deepseek_v4",), "vllm/models/deepseek_v4/__init__.py:40-49, nvidia/model.py:"
                "811, 993-1020 (engine oracle, tests/engines)", lowest=1, missing_crash=FEWER, cpu=DEEPSEEK_V4_CPU,
                notes=("a tap is the mean of the mHC streams reconstructed after the layer (mhc_post), not one "
                       "residual stream",)),
)  # fmt: skip


# ---- the facts behind the generated rows -------------------------------------------------------------------

# What a width mismatch does, seen running vLLM 0.32.0's CPU build (V1 runner) on the zoo: an id that matches no
# layer captures nothing, startup and warm-up pass, and the first request raises in the drafter's fc
# (`RuntimeError: shape '[-1, 3*H]' is invalid`, models/llama_eagle3.py:418) and kills the engine.
WIDTH_SEEN = (
    "fewer aux states reach the drafter than its fc takes: startup and warm-up pass, the first request raises a "
    "shape error in the drafter's fc (llama_eagle3.py:418 @0.32.0) and kills the engine"
)
WIDTH_READ = "fewer aux states reach the drafter than its fc takes: a shape error in the drafter's fc"
# releases whose V1 runner was observed running (tests/real_engine, make observe; CPU build: always V1), from the
# ledger: a row's failure stage is seen when any release it covers was observed, read there or not
OBSERVED = tuple(
    r.version for r, o in ledger("vllm").observed() if o.level == "engine" and o.platform == "cpu"
)
GATE = "config/speculative.py (config.py before 0.10.1) eagle3 target model_type gate (until 0.21)"
DFLASH_RAW = IdSource("dflash_config.target_layer_ids")  # 0.20-0.21: read without the +1


@dataclass(frozen=True)
class Group:
    name: str
    models: tuple[str, ...]
    usable_from: str  # first version that serves EAGLE-3 for it
    refused: str  # what happens before
    captures: tuple[Capture, ...]
    mrv2_from: str | None  # first version where the V2 model runner is the default for it
    refused_at: str | None = None  # where the refusal before usable_from happens (Convention.refused_at)
    # from each `since`, the class the CPU platform serves the models with, where it is another than a GPU server's
    # (a package that picks its implementation by platform): its capture, or what a CPU launch fails with at load
    # (a str); the V1 rows then hold on CUDA, a V1 row of their own on the CPU (the CPU build runs V1 only)
    cpu: tuple[tuple[str, Capture | str], ...] = ()


LLAMA_MODEL = (
    Capture("0.8.5", 1, "L-1", "models/llama.py:362-366 @0.8.5, :400-405 @0.11.0; qwen2.py:356-360 @0.10.1"),
    Capture("0.18.0", 0, "L", "models/interfaces.py:1282 @0.18.0 (EagleModelMixin._maybe_add_hidden_state); "
            "llama.py:419-428 @0.18.0; :434 @0.30.0 (global layer index)"),
)  # fmt: skip
MOE_EARLY = (
    Capture("0.11.0", 0, "L-1", "models/gpt_oss.py:279-285 @0.11.0; qwen3_moe.py:445-455 @0.14.0"),
    Capture("0.18.0", 0, "L", "models/interfaces.py:1282 @0.18.0 (EagleModelMixin)"),
)
MIXIN = (Capture("0.17.0", 0, "L", "models/interfaces.py:1282 @0.18.0, 1616-1650 @0.33.0 (EagleModelMixin)"),)
DEEPSEEK = (
    Capture("0.18.0", 1, "L-1", "models/deepseek_v2.py:1214, 1239 @0.18.0; :1339 @0.24.0"),
    Capture("0.25.0", 1, "L", "models/deepseek_v2.py:1489 @0.25.0 (end-layer capture, vllm PR #46973)"),
)
# DeepSeek-V3.2: vLLM's registry routes DeepseekV32ForCausalLM to deepseek_v2.py's DeepseekV3ForCausalLM until
# 0.28, to its own platform package from 0.29.0 (vllm/models/deepseek_v32, CUDA branch nvidia/model.py), whose
# DeepseekV32Model captures before layer k (k = 0: the embeddings, residual None) and never after the loop.
# Executed: the model-code records 0.29.0-0.32.0 (id 0 gives h0, id L is never captured: the generic DeepSeek
# rows said the opposite) and 0.33.0 (ROWS_0_33).
DEEPSEEK_V32 = (
    *DEEPSEEK,
    Capture("0.29.0", 0, "L-1", "vllm/models/deepseek_v32/nvidia/model.py (the registry's route from 0.29.0): "
            "capture before layer k, none after the loop; executed: engines/vllm/data/observed/"
            "vllm-0.29.0..0.32.0-model-code.json"),
)  # fmt: skip
# DeepSeek-V4 (its own platform package, vllm/models/deepseek_v4; CUDA branch nvidia/model.py): the layers carry
# manifold-constrained hyper-connection streams; the loop captures id idx+1 after layer idx as the mean of the
# streams `mhc_post` reconstructs, id L included, id 0 (the embeddings) never (no error: one state fewer). Executed:
# the model-code records 0.25.0-0.33.0, the streams' kernels stood in by the release's torch reference.
DEEPSEEK_V4 = (
    Capture("0.25.0", 1, "L", "vllm/models/deepseek_v4/nvidia/model.py:1083-1106 @0.25.0, :1161-1184 @0.28.0, "
            ":1593-1616 @0.31.0; executed: engines/vllm/data/observed/vllm-0.25.0..0.32.0-model-code.json",
            h0_crash=None),
)  # fmt: skip
NOT_LLAMA = "refused by the eagle3 model_type gate ('Eagle3 is only supported for Llama models', vllm#22152)"
GATED = (
    "refused by the eagle3 model_type gate, which never lists it (config/speculative.py:778 @0.17.0 "
    "aux_hidden_states_supported, :991 @0.21.0; gone in 0.22.0; engines/vllm/data/registry.json)"
)
GROUPS: tuple[Group, ...] = (
    Group("llama", ("llama",), "0.8.5", "vLLM < 0.8.5 has no EAGLE-3", LLAMA_MODEL, "0.23.0"),
    Group("qwen3", ("qwen3",), "0.10.1", f"vLLM < 0.10.1: {NOT_LLAMA}", LLAMA_MODEL, "0.22.0", refused_at="config"),
    Group("qwen2", ("qwen2",), "0.10.2", "vLLM < 0.10.2: no Qwen2 EAGLE-3 interface (gate before 0.10.1)",
          LLAMA_MODEL, "0.25.0"),
    Group("llama4", ("llama4",), "0.11.1", "vLLM < 0.11.1: Llama4ForConditionalGeneration has no EAGLE-3 interface",
          LLAMA_MODEL, "0.29.0"),
    Group("qwen2_5_vl", ("qwen2_5_vl",), "0.11.1", "vLLM < 0.11.1: Qwen2.5-VL has no EAGLE-3 interface",
          LLAMA_MODEL, "0.25.0"),
    Group("qwen3_vl", ("qwen3_vl",), "0.12.0", "vLLM < 0.12.0: Qwen3-VL has no EAGLE-3 interface", LLAMA_MODEL,
          "0.25.0"),
    # Qwen3-VL-MoE takes the ids from 0.12.0 (Qwen3-VL's set_aux_hidden_state_layers) but its MoE text model has no
    # capture until 0.15.0: executed in every release's model-code record, read at 0.13.0 and 0.15.0
    Group("qwen3_vl_moe", ("qwen3_vl_moe",), "0.15.0", "vLLM < 0.15.0: Qwen3VLMoeForConditionalGeneration captures no "
          "aux hidden states: no EAGLE-3 interface before 0.12.0; 0.12.0-0.14.1 take the ids (set_aux_hidden_state_"
          "layers, from Qwen3-VL) but the MoE text model's forward never captures (qwen3_vl_moe.py:95-130 "
          "Qwen3MoeLLMModel.forward @0.13.0; capture from :114-119 @0.15.0), so the runner's unpack of (hidden "
          "states, aux states) fails at warm-up", LLAMA_MODEL, "0.25.0", refused_at="capture"),
    Group("mistral", ("mistral",), "0.22.0", f"vLLM < 0.22.0: model_type 'mistral' {GATED}", LLAMA_MODEL,
          "0.23.0", refused_at="config"),
    Group("gpt_oss", ("gpt_oss",), "0.11.0", f"vLLM < 0.11.0: {NOT_LLAMA}", MOE_EARLY, "0.29.0", refused_at="config"),
    Group("qwen3_moe", ("qwen3_moe",), "0.11.1", "vLLM < 0.11.1: Qwen3MoeForCausalLM has no set_aux_hidden_state_layers "
          "(gate passes from 0.10.1: AttributeError at load, inferred)", MOE_EARLY, "0.29.0"),
    Group("mistral3", ("mistral3",), "0.22.0", f"vLLM < 0.22.0: text model_type 'mistral' {GATED}", MIXIN, "0.25.0",
          refused_at="config"),
    # An architecture the table does not list, which the release's registry serves through the EagleModelMixin
    # (registries.py; models.REGISTRY_CAPTURE); the registry also answers the gate, so no refusal is modelled here.
    Group("mixin", ("eagle_model_mixin",), "0.17.0", "vLLM < 0.17.0 has no EagleModelMixin", MIXIN, "0.29.0"),
    Group("minimax_m2", ("minimax_m2",), "0.20.0", "vLLM < 0.20.0: MiniMaxM2ForCausalLM has no EAGLE-3 interface "
          "('Model does not support EAGLE3 interface')", MIXIN, "0.29.0"),
    Group("qwen3_next", ("qwen3_next",), "0.24.0", "vLLM < 0.24.0: Qwen3NextForCausalLM has no EAGLE-3 interface",
          MIXIN, "0.29.0"),
    Group("deepseek_v2", ("deepseek_v2",), "0.18.0", "vLLM < 0.18.0: DeepSeek targets have no EAGLE-3 (gate until "
          "0.16, no interface in 0.17)", DEEPSEEK, "0.24.0"),
    Group("deepseek_v3", ("deepseek_v3", "kimi_k25"), "0.18.0", "vLLM < 0.18.0: DeepSeek-V3/Kimi targets have no "
          "EAGLE-3 (model_type gate until 0.16, no interface in 0.17)", DEEPSEEK, "0.29.0"),
    Group("deepseek_v32", ("deepseek_v32",), "0.18.0", "vLLM < 0.18.0: DeepSeek-V3.2 targets have no EAGLE-3 "
          "(model_type gate until 0.16, no interface in 0.17)", DEEPSEEK_V32, "0.29.0",
          cpu=(("0.29.0", DEEPSEEK_V32_CPU),)),
    # MRV2 by default from 0.28.0: DEFAULT_V2_MODEL_RUNNER_ARCHITECTURES lists it (config/vllm.py:72 @0.28.0);
    # before, a MoE model not listed there defaults to V1 (:658 @0.27.0)
    Group("deepseek_v4", ("deepseek_v4",), "0.25.0", "vLLM < 0.25.0: DeepseekV4ForCausalLM has no EAGLE-3 interface "
          "('Model does not support EAGLE3 interface'; the package exists from 0.23.0)", DEEPSEEK_V4, "0.28.0",
          cpu=(("0.25.0", DEEPSEEK_V4_CPU_FAILS), ("0.30.0", DEEPSEEK_V4_CPU))),
)  # fmt: skip
NEVER = (("glm4_moe", "vLLM (through 0.33.0) has no EAGLE-3 for Glm4MoeForCausalLM (no SupportsEagle3)",
          "models/glm4_moe.py:534 @0.33.0", READ[2:]),
         ("qwen2_vl", "vLLM has no EAGLE-3 for Qwen2VLForConditionalGeneration (no SupportsEagle3): RuntimeError "
          "'Model does not support EAGLE3 interface' at load (read at 0.33.0 only)",
          "models/qwen2_vl.py (no SupportsEagle3); v1/worker/gpu_model_runner.py:5173-5177, "
          "v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:28-29 @0.33.0 (engine oracle, tests/engines)",
          ("0.33.0",)))  # fmt: skip

# The V0 engine. Before 0.9.0 vLLM runs EAGLE and EAGLE-3 on V0 unless VLLM_USE_V1=1 ("Eagle is experimental on
# VLLM_USE_V1=1. Falling back to V0 Engine.": engine/arg_utils.py:1487-1489, 1661-1673 @0.8.5); 0.9.0-0.9.2 run
# them on V1 unless VLLM_USE_V1=0 (arg_utils.py:1333 @0.9.0.1); on a CPU before 0.9.1 the platform has no V1
# (CpuPlatform.supports_v1 from cpu.py:262-266 @0.9.1; interface.py:386-390 @0.8.5 says False); 0.10.0 removed V0's
# spec decode. V0's spec-decode worker builds the draft as EAGLE-1's EAGLEModel (transformers_utils/configs/
# eagle.py:44-47 @0.8.5, :47-48 @0.9.2), whose fc takes 2 x hidden: an EAGLE-3 head does not load.
V0_UNTIL = "0.10.0"
V0_EAGLE_DEFAULT_UNTIL = "0.9.0"  # CUDA: V0 unless VLLM_USE_V1=1 before it, V1 unless VLLM_USE_V1=0 from it
V0_CPU_UNTIL = "0.9.1"  # CPU: V0 whatever the launch before it
# before 0.9.2 the V1 engine takes float16 and bfloat16 only: a float32 launch falls back to V0 (with VLLM_USE_V1=1 it
# is refused outright) (observed: vllm-0.9.1.post2-cpu.json, its float32 zoo drafters in V0's EAGLE-1 wrapper, its
# bfloat16 family targets on V1)
V1_ANY_DTYPE_FROM = "0.9.2"
V1_DTYPES_SOURCE = "vllm engine/arg_utils.py:1288 @0.9.0.1, :1341 @0.9.1 (V1_SUPPORTED_DTYPES); gone at 0.9.2"
V0_REFUSES = (
    "the V0 engine builds the draft as EAGLE-1's EAGLEModel, whose fc takes 2 x hidden (the token embedding and "
    "one target state): an EAGLE-3 head's fc (3 x hidden) does not load (AssertionError: Attempted to load weight "
    "(torch.Size([H, 3H])) into parameter (torch.Size([H, 2H])))"
)
V0_FIX = (
    "no config.json value: the V0 engine loads no EAGLE-3 head; run the launch on V1 (VLLM_USE_V1=1 before 0.9.0, on "
    "CUDA: a CPU has V1 from 0.9.1; from 0.9.0, leave VLLM_USE_V1 unset), which serves it as its V1 line says"
)
V0_SOURCE = (
    "vllm 0.8.5-0.9.2 spec_decode/spec_decode_worker.py create_spec_worker; model_executor/models/eagle.py:81-83 "
    "@0.8.5 (fc = nn.Linear(hidden_size * 2, hidden_size)); model code, executed: engines/vllm/data/draft-settings/"
    "vllm-V.json, cases 'eagle3' (0.8.5), 'eagle3/VLLM_USE_V1=0' and 'eagle3/V0 target llama4' (head_load)"
)

# Where each runner reads the ids, by version: (since, sources); None = ids never read (the model default).
V1_IDS = (
    (
        "0.8.5",
        None,
        "v1/worker/gpu_model_runner.py:1342-1344 @0.8.5 (get_eagle3_aux_hidden_state_layers only)",
    ),
    ("0.11.1", (TOP,), "v1/worker/gpu_model_runner.py:3322-3329, 3395-3417 @0.11.1 (vllm PR #25961)"),
    ("0.20.0", (TOP, DFLASH_RAW), "v1/worker/gpu_model_runner.py:5025 @0.21.0"),
    ("0.22.0", (TOP, DFLASH, NESTED), "v1/worker/gpu_model_runner.py:5253 @0.22.0 (nested eagle_config ids)"),
)
MRV2_FROM = "0.17.0"  # the first release with Model Runner V2's EAGLE-3 path (MRV2_IDS)
MRV2_IDS = (
    ("0.17.0", (TOP,), "v1/worker/gpu/spec_decode/eagle/eagle3_utils.py:35-46 @0.17.0"),
    ("0.20.0", (TOP, DFLASH_RAW), "eagle3_utils.py:35-46 @0.20.0"),
    ("0.22.0", (TOP, DFLASH), "eagle3_utils.py:35-49 @0.24.0 (nested eagle_config ids never read)"),
    ("0.28.0", (TOP, DFLASH, NESTED_LAYER_IDS), "eagle3_utils.py:35-65 @0.28.0"),
)


def _era(table, version: Version):
    current = None
    for since, *rest in table:
        if version >= Version(since):
            current = (since, *rest)
    return current


def _spec(lo: str, hi: str) -> str:
    return f">={lo},<{hi}"


def _checked(lo: str, hi: str) -> tuple[str, ...]:
    return tuple(v for v in READ if Version(lo) <= Version(v) < Version(hi))


def _refusal(key: str, versions: str, checked: tuple[str, ...], models: tuple[str, ...], runner: str,
             default_runner: bool, why: str, **extra) -> Convention:  # fmt: skip
    """A row under which the release serves no EAGLE-3 drafter for these models (Rule.UNSUPPORTED): `why` says
    what it does instead."""
    return Convention(key=key, framework="vllm", role="serve", versions=versions, checked=checked, models=models,
                      runner=runner, default_runner=default_runner, id_sources=(), rule=Rule.UNSUPPORTED, default="",
                      default_rule=Rule.UNSUPPORTED, lowest_tap=0, highest_tap="L", h0_crash=None, unsupported=why,
                      **extra)  # fmt: skip


def _generated() -> tuple[Convention, ...]:
    out: list[Convention] = []
    for g in GROUPS:
        if Version(g.usable_from) > Version("0.8.5"):
            out.append(_refusal(f"vllm-{g.name}-<{g.usable_from}", _spec("0.8.5", g.usable_from),
                                _checked("0.8.5", g.usable_from), g.models, "v1", True, g.refused,
                                refused_at=g.refused_at, source=f"vllm {GATE}; class scan per wheel"))  # fmt: skip
        if Version(g.usable_from) > Version(MRV2_FROM):
            # Model Runner V2 (launched with VLLM_USE_V2_MODEL_RUNNER=1) refuses the same: the gate is the
            # engine's config check, before any runner, and its capture request asks for the same EAGLE-3
            # interface (eagle3_utils.py:35-46 @0.17.0, :28-29 @0.33.0)
            out.append(_refusal(f"vllm-{g.name}-<{g.usable_from}-mrv2", _spec(MRV2_FROM, g.usable_from),
                                _checked(MRV2_FROM, g.usable_from), g.models, "mrv2", False, g.refused,
                                refused_at=g.refused_at, source=f"vllm {GATE}; class scan per wheel"))  # fmt: skip
        cuts = {
            g.usable_from,
            END,
            *(c.since for c in g.captures),
            *(s for s, *_ in V1_IDS),
            *(s for s, *_ in MRV2_IDS),
        }
        if g.mrv2_from:
            cuts.add(g.mrv2_from)
        cuts |= {since for since, _ in g.cpu}
        points = sorted(
            (v for v in cuts if Version(g.usable_from) <= Version(v) <= Version(END)), key=Version
        )
        for lo, hi in itertools.pairwise(points):
            cap = _era([(c.since, c) for c in g.captures], Version(lo))[1]
            mrv2_default = g.mrv2_from is not None and Version(lo) >= Version(g.mrv2_from)
            for runner, table in (("v1", V1_IDS), ("mrv2", MRV2_IDS)):
                era = _era(table, Version(lo))
                if era is None:
                    continue  # MRV2 before 0.17 feeds no aux states; it is never the default then
                _, sources, id_source = era
                default = mrv2_default if runner == "mrv2" else not mrv2_default
                fixed = sources is None
                seen = runner == "v1" and any(Version(lo) <= Version(v) < Version(hi) for v in OBSERVED)
                on_cpu = _era(g.cpu, Version(lo)) if runner == "v1" else None
                row = Convention(
                    key=f"vllm-{g.name}-{runner}-{lo}-{hi}",
                    framework="vllm",
                    role="serve",
                    versions=_spec(lo, hi),
                    checked=_checked(lo, hi),
                    models=g.models,
                    runner=runner,
                    default_runner=default,
                    id_sources=() if fixed else sources,
                    rule=Rule.FIXED if fixed else Rule.RAW,
                    default="2,L//2,L-3",
                    default_rule=Rule.RAW,
                    lowest_tap=cap.lowest,
                    highest_tap=cap.highest,
                    h0_crash=cap.h0_crash if cap.lowest else None,
                    missing_crash=WIDTH_SEEN if seen else WIDTH_READ,
                    width_stage="first request" if seen else None,
                    reads_speculators_format=Version(lo) >= Version("0.10.1"),
                    fc_width_keys=()
                    if Version(lo) < Version("0.22.0")
                    else ("num_aux_hidden_states", "eagle_config.eagle_aux_hidden_state_layer_ids"),
                    source=f"vllm {id_source}; {cap.source}",
                    notes=("configured ids are never read before 0.11.1: always the model default",)
                    if fixed
                    else (),
                )
                if on_cpu is None:
                    out.append(row)
                else:  # the CPU platform's own class: its row beside the GPU server's
                    cpu = on_cpu[1]
                    cited = "" if isinstance(cpu, str) else f"vllm {id_source}; {cpu.source}"
                    out += _on_platforms(row, cpu, cited)
    for (model, why, src, checked), runner in itertools.product(NEVER, ("v1", "mrv2")):
        versions = f">=0.8.5,<{MRV2_ONLY_FROM}" if runner == "v1" else ">=0.17.0"
        out.append(_refusal(
            f"vllm-{model}-never" + ("" if runner == "v1" else "-mrv2"), versions,
            tuple(v for v in checked if Version(v) in SpecifierSet(versions)), (model,),
            runner, runner == "v1", why, source=f"vllm {src}",
        ))  # fmt: skip
    # V0 builds its EAGLE-1 wrapper for every target the eagle3 gate lets through: Llama, and Llama-4, whose text
    # model_type `llama4_text` contains "llama" (the gate's test before 0.10.1); every other family is refused at
    # the config check (GROUPS). Executed: each V0 release's draft-settings record, cases `eagle3/V0 target X`. The
    # default depends on the version and the platform (engines/runners.py)
    out.append(_refusal("vllm-llama-v0", _spec("0.8.5", V0_UNTIL), _checked("0.8.5", V0_UNTIL), ("llama", "llama4"),
                        "v0", False, V0_REFUSES, refused_at="load", refused_fix=V0_FIX, source=V0_SOURCE))  # fmt: skip
    return tuple(out)


ROWS: tuple[Convention, ...] = (*_generated(), *ROWS_0_33)
