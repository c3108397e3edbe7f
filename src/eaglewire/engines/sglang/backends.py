"""SGLang's per-GPU attention backend and page size: the choices that decide whether a draft tree starts.

On Blackwell (sm100) SGLang picks `trtllm_mla` for DeepSeek-V3-class targets (Kimi-K2.5 included), which forces
page size 64, and `_handle_eagle_family` then refuses top-k > 1 with page size > 1 on that backend: the same
launch starts on an H200 and fails on a B200. gpt-oss (from 0.5.1) and Llama-4 (from 0.5.6) likewise run
`trtllm_mha` on sm100 whatever the topk, which refuses top-k > 1 (sglang#9471). These rows replay the default backend
(`get_default_attn_backend` and the DeepSeek, gpt-oss, Llama-4 and Qwen3.5 model overrides) and the page-size
constraints of each backend, for the GPU given to `lint`.
With the GPU unknown they leave the backend open and say which verdicts depend on it.

Read in sglang 0.5.23; checked against that code per GPU profile by `make test-engines`.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from eaglewire.engines.sglang.args import SG_KEYS, SGLANG
from eaglewire.rules.flags import FlagRule, State, row
from eaglewire.rules.gpus import GpuProfile
from eaglewire.rules.launch import INFO, PROBLEM, WARNING, Change, Edit, FlagFix

rule = functools.partial(row, SGLANG)
OVERRIDE_BASE = "sglang 0.5.23 srt/arg_groups/model_override_base.py"
OVERRIDES = "sglang 0.5.23 srt/arg_groups/overrides.py"

# srt/arg_groups/model_overrides/deepseek_v2.py:38-51 (the registered architectures) and 176-188: on sm100, with
# no backend given, the non-DSA DeepSeek family runs trtllm_mla. DSA targets (DeepSeek-V3.2, GLM-MoE-DSA) take
# the "dsa" backend instead (:100-103) and are not listed.
TRTLLM_MLA_ARCHS = frozenset({
    "DeepseekV3ForCausalLM", "KimiK25ForConditionalGeneration", "MistralLarge3ForCausalLM",
    "PixtralForConditionalGeneration", "HYV4ForCausalLM", "LongcatFlashForCausalLM", "Dots3NoteForCausalLM",
})  # fmt: skip
# Backends whose kernels need a page size (overrides.py:1143-1200 _mla_backend_page_constraints): allowed sizes,
# and the size SGLang switches to.
PAGE_SIZES = {
    "flashmla": ((64,), 64),
    "trtllm_mla": ((32, 64), 64),
    "cutedsl_mla": ((32, 64), 64),
    "trtllm_mha": ((16, 32, 64, 128), 64),
    "hpc_ops": ((64,), 64),
}
BACKEND_KEYS = ("attention_backend", "decode_attention_backend", "prefill_attention_backend")


MLA_ARCHS = TRTLLM_MLA_ARCHS | {"DeepseekV2ForCausalLM", "DeepseekV32ForCausalLM", "GlmMoeDsaForCausalLM"}

# Before 0.5.23, read in every release 0.4.5-0.5.22: on sm100, with no backend given, these architectures run
# trtllm_mla from 0.5.3.post2 (before: triton, then flashinfer, page size 1), and trtllm_mla forces page size 64 where
# it is not 32 or 64. A config with index_topk is DeepSeek's sparse attention (nsa/dsa) instead.
OLD_TRTLLM_MLA = (
    (">=0.5.3.post2,<0.5.6.post1", frozenset({"DeepseekV3ForCausalLM"})),
    (">=0.5.6.post1,<0.5.9",
     frozenset({"DeepseekV3ForCausalLM", "MistralLarge3ForCausalLM", "PixtralForConditionalGeneration"})),
    (">=0.5.9,<0.5.23", frozenset({"DeepseekV3ForCausalLM", "MistralLarge3ForCausalLM",
                                    "PixtralForConditionalGeneration", "KimiK25ForConditionalGeneration"})),
)  # fmt: skip
OLD_DEFAULT_SRC = (
    "sglang server_args.py:815-822, 1014-1018 @0.5.3.post2, :1102-1108, 1613-1615 @0.5.7, :1197-1203 @0.5.9, "
    ":1839-1846, 2906-2908 @0.5.13; arg_groups/overrides.py:309-316, 1542-1550 @0.5.15; "
    "arg_groups/model_overrides/deepseek_v2.py:20-25 @0.5.19 (trtllm_mla on sm100 with no backend given; page size 64)"
)


@dataclass(frozen=True)
class ArchDefault:
    """A model override that picks an MHA target's attention backend by GPU generation when none is given: sm100
    trtllm_mha (which refuses topk > 1: sizes.py `sglang.trtllm_mha_topk`), sm90 fa3, other CUDA GPUs triton.
    `all_unset`: only with all three backend flags unset (else with --attention-backend unset)."""

    versions: str
    archs: frozenset[str]
    all_unset: bool
    source: str
    override: str = ""  # where 0.5.23 has it (default_backend's message)

    def covers_version(self, version: Version) -> bool:
        return SpecifierSet(self.versions).contains(version, prereleases=True)

    def applies(self, st: State) -> bool:
        keys = BACKEND_KEYS if self.all_unset else ("attention_backend",)
        return st.target_arch in self.archs and all(st.v[k] is None for k in keys)

    @staticmethod
    def choose(gpu: GpuProfile) -> str:
        return "trtllm_mha" if gpu.sm100 else "fa3" if gpu.hopper else "triton"


GPT_OSS = frozenset({"GptOssForCausalLM"})
LLAMA4 = frozenset({"Llama4ForConditionalGeneration", "Llama4ForCausalLM"})
ARCH_DEFAULTS = (
    ArchDefault(">=0.5.1,<0.5.3.post1", GPT_OSS, False,
                "sglang server_args.py:2227-2234 @0.5.1 model_specific_adjustments (`if self.attention_backend is "
                "None`), same in 0.5.2-0.5.3; it runs before the speculative block (:432, :657-668 @0.5.1)"),
    ArchDefault(">=0.5.3.post1", GPT_OSS, True,
                "sglang server_args.py:769-780 @0.5.3.post1 and :904-915 @0.5.4 (all three backends unset), "
                "is_attention_backend_not_set() @0.5.7-0.5.14, arg_groups/overrides.py:475-491 @0.5.15, "
                "model_overrides/gpt_oss.py:27-47 @0.5.19 and :24-44 @0.5.23 (before the speculative hook: "
                "pipeline.py:225 then :306)", "model_overrides/gpt_oss.py:24-44"),
    # 0.5.4.post1-0.5.5 assert the backend is in {fa3, aiter, triton, trtllm_mha} before setting trtllm_mha on sm100
    # (server_args.py:951-962 @0.5.4.post1): with none given that assert fails first, on every GPU
    ArchDefault(">=0.5.6", LLAMA4, False,
                "sglang server_args.py:1125-1140 @0.5.6 (`if self.attention_backend is None`, then the assert), "
                ":1237-1252 @0.5.7, :2044-2059 @0.5.11 (LLAMA4_MODEL_ARCHS), arg_groups/overrides.py:574-590 @0.5.15, "
                "model_overrides/llama4.py:16-37 @0.5.21 and @0.5.23", "model_overrides/llama4.py:16-37"),
)  # fmt: skip
# On sm100 the Qwen3.5/Qwen3-Next hybrid (Mamba) targets run triton unless the generic default is trtllm_mha (a given
# topk 1, page size 1 or unset): model_overrides/qwen3_5.py:17-49 @0.5.23 (page size 64 with trtllm_mha, else 1). Read
# for speculative launches only (without one it also depends on the Mamba radix-cache strategy).
QWEN3_5_HYBRID = frozenset({
    "Qwen3NextForCausalLM", "Qwen3_5MoeForConditionalGeneration", "InternS2PreviewForConditionalGeneration",
    "InternS2MobiusForConditionalGeneration", "Qwen3_5ForConditionalGeneration",
})  # fmt: skip


def arch_default(st: State) -> ArchDefault | None:
    return next((a for a in ARCH_DEFAULTS if a.covers_version(st.version) and a.applies(st)), None)


def _sparse(st: State) -> bool:
    """DeepSeek sparse attention (a config with index_topk): SGLang runs nsa/dsa, not trtllm_mla."""
    config = st.target_config or {}
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    return bool(config.get("index_topk") or text.get("index_topk"))


def is_mla(st: State) -> bool | None:
    """The target uses MLA attention (kv_lora_rank in its config or text config, else by architecture); None
    when the target is unknown."""
    config = st.target_config
    if config is None:
        return None if st.target_arch is None else st.target_arch in MLA_ARCHS
    text = config.get("text_config") if isinstance(config.get("text_config"), dict) else {}
    return bool(config.get("kv_lora_rank") or text.get("kv_lora_rank"))


def _topk_one(st: State) -> bool:
    """utils/common.py:3960-3966 is_no_spec_infer_or_topk_one, read before the speculative hook runs."""
    topk, page = st.given["topk"], st.given["page_size"]
    return topk is None or (topk == 1 and page in (None, 1))


def default_backend(st: State) -> tuple[str | None, str]:
    """SGLang's default attention backend for this target and GPU, and why; None when it depends on the unknown."""
    gpu = st.gpu
    mla = is_mla(st)
    if mla is None:
        return None, "the target is unknown (pass a local model folder or --target-arch)"
    if not gpu.known:
        return None, "the GPU is unknown (pass --gpu)"
    v = st.v
    if (mla and gpu.sm100 and st.target_arch in TRTLLM_MLA_ARCHS and not _sparse(st)
            and all(v[k] is None for k in BACKEND_KEYS)):  # fmt: skip
        return "trtllm_mla", f"{st.target_arch} on {gpu.key} (sm100): model_overrides/deepseek_v2.py:176-188"
    if (arch := arch_default(st)) is not None:
        backend = arch.choose(gpu)
        return backend, f"{st.target_arch} on {gpu.key}, whatever the topk: {arch.override}"
    where = f"{OVERRIDE_BASE}:277-351 get_default_attn_backend"
    if mla:
        backend = "fa3" if gpu.hopper else "flashinfer" if gpu.sm100 else "triton"
        return backend, f"MLA target on {gpu.key}: {where}"
    if gpu.hopper and _topk_one(st):
        return "fa3", f"MHA target on {gpu.key} (Hopper), topk 1 or unset: {where}"
    generic_trtllm = gpu.sm100 and _topk_one(st) and (v["algorithm"] is None or st.given["topk"] is not None)
    if gpu.sm100 and st.target_arch in QWEN3_5_HYBRID and v["algorithm"] is not None:
        backend = "trtllm_mha" if generic_trtllm else "triton"
        return (
            backend,
            f"{st.target_arch} on {gpu.key} (sm100), speculative: model_overrides/qwen3_5.py:17-49",
        )
    if generic_trtllm:
        return "trtllm_mha", f"MHA target on {gpu.key} (sm100) with topk 1: {where}"
    return "flashinfer", f"MHA target on {gpu.key}: {where} (flashinfer ships with SGLang)"


def _sg_backend_default(rule: FlagRule, st: State) -> None:
    v = st.v
    if v["attention_backend"] is not None:
        return
    if (
        v["prefill_attention_backend"] is not None
        and v["prefill_attention_backend"] == v["decode_attention_backend"]
    ):
        v["attention_backend"] = v["prefill_attention_backend"]
        return
    backend, why = default_backend(st)
    if backend is None:
        st.gpu_dependent.append(rule.name)
        st.notes.append(
            f"attention backend not given and not known: {why}; verdicts that depend on it say so"
        )
        return
    st.emit(
        rule,
        "--attention-backend",
        None,
        backend,
        f"attention backend not given: SGLang uses {backend} ({why})",
    )
    v["attention_backend"] = backend


def _sg_backend_default_mla(rule: FlagRule, st: State) -> None:
    """Before 0.5.23 only the one default that decides whether a draft starts: trtllm_mla on sm100."""
    if any(st.v[k] is not None for k in BACKEND_KEYS) or not is_mla(st) or _sparse(st):
        return
    archs = next(a for spec, a in OLD_TRTLLM_MLA if SpecifierSet(spec).contains(st.version, prereleases=True))
    if st.target_arch not in archs:
        return
    if not st.gpu.known:
        st.gpu_dependent.append(rule.name)
        st.notes.append(f"attention backend not given: {st.target_arch} runs trtllm_mla on sm100 (B200, GB200, B300) "
                        "and another backend elsewhere; pass --gpu")  # fmt: skip
        return
    if st.gpu.sm100:
        st.emit(rule, "--attention-backend", None, "trtllm_mla",
                f"attention backend not given: SGLang uses trtllm_mla ({st.target_arch} on {st.gpu.key}, sm100)")  # fmt: skip
        st.v["attention_backend"] = "trtllm_mla"


def _sg_backend_default_arch(rule: FlagRule, st: State) -> None:
    """Before 0.5.23: gpt-oss and Llama-4's own default (0.5.23 reads it in `default_backend`)."""
    arch = arch_default(st)
    if arch is None:
        return
    if not st.gpu.known:
        st.gpu_dependent.append(rule.name)
        st.notes.append(f"attention backend not given: {st.target_arch} runs trtllm_mha on sm100 (B200, GB200, B300), "
                        "which refuses topk > 1, fa3 on Hopper, triton elsewhere; pass --gpu")  # fmt: skip
        return
    backend = arch.choose(st.gpu)
    st.emit(rule, "--attention-backend", None, backend,
            f"attention backend not given: SGLang uses {backend} ({st.target_arch}'s own default on {st.gpu.key}, "
            "whatever the topk)")  # fmt: skip
    st.v["attention_backend"] = backend


def _sg_page_size_mla(rule: FlagRule, st: State) -> None:
    if st.v["attention_backend"] != "trtllm_mla":
        return
    page = 1 if st.v["page_size"] is None else st.v["page_size"]
    if page not in (32, 64):
        st.emit(rule, "--page-size", st.v["page_size"], 64,
                "trtllm_mla supports page sizes [32, 64] only: SGLang sets page size 64 (logged as a warning); with "
                "topk > 1 the draft tree then needs a paged tree backend")  # fmt: skip
        st.v["page_size"] = 64


def _sg_page_size(rule: FlagRule, st: State) -> None:
    v = st.v
    page = v["page_size"]
    for key in ("attention_backend", "decode_attention_backend", "prefill_attention_backend"):
        backend = v[key]
        if backend not in PAGE_SIZES or (
            key == "prefill_attention_backend" and backend in ("flashmla", "trtllm_mla")
        ):
            continue
        allowed, forced = PAGE_SIZES[backend]
        current = 1 if page is None else page
        if current not in allowed:
            st.emit(rule, "--page-size", v["page_size"], forced,
                    f"{backend} supports page sizes {list(allowed)} only: SGLang sets page size {forced} (logged "
                    "as a warning); with topk > 1 the draft tree then needs a paged tree backend")  # fmt: skip
            page = forced
    v["page_size"] = 1 if page is None else page


# Backends that run only on some GPU generations: (capability majors allowed, what SGLang says).
BACKEND_GPUS = {
    "trtllm_mla": ((10, 11, 12), "TRTLLM MLA backend is only supported on Blackwell GPUs (SM100/SM12x)"),
    "cutedsl_mla": ((10,), "CuteDSL MLA backend is only supported on Blackwell GPUs (SM100)"),
    "trtllm_mha": (
        (9, 10, 12),
        "TRTLLM MHA backend is only supported on Hopper (SM90), Blackwell (SM100) and SM120",
    ),
}


def _sg_backend_gpu(rule: FlagRule, st: State) -> None:
    used = {st.v[k] for k in BACKEND_KEYS} & set(BACKEND_GPUS)
    for backend in sorted(used):
        majors, message = BACKEND_GPUS[backend]
        if not st.gpu.known:
            st.gpu_dependent.append(rule.name)
            st.notes.append(f"{backend} runs only on GPUs of compute capability {majors}.x: pass --gpu")
        elif st.gpu.capability[0] not in majors:
            st.emit(rule, "--attention-backend", backend, None,
                    f"{message}; this is a {st.gpu.key}: ValueError at startup")  # fmt: skip


def _fix_backend_gpu(st: State, change: Change) -> FlagFix:
    backend = "fa3" if st.gpu.hopper else "flashinfer" if st.gpu.sm100 else "triton"
    edits = tuple(
        Edit(SG_KEYS[k], backend) for k in BACKEND_KEYS if st.v[k] == change.given and st.cmd.has(SG_KEYS[k])
    )
    return FlagFix(
        change.rule, edits or (Edit("--attention-backend", backend),), f"a backend that runs on {st.gpu.key}"
    )


# Backends that refuse a model without MLA attention (attention_registry.py:48-51 @0.5.10, :95-97 and 119-121
# @0.5.23). The draft runner takes the target's backends unless --speculative-draft-attention-backend names one
# (model_runner.py:1972-1987 @0.5.10; 0.5.23 model_runner.py:306-320, and eagle_worker_v2.py:223 builds the EAGLE
# draft worker without the supported-backend fallback of draft_worker_common.py:32-63): a Llama-style EAGLE-3 head
# on an MLA target (the usual kind: LlamaForCausalLMEagle3; SGLang's MLA head is Eagle3DeepseekV2ForCausalLM) meets
# trtllm_mla, SGLang's default for Kimi/DeepSeek on sm100, and the draft worker fails to start (sglang#23490).
MLA_ONLY = ("trtllm_mla", "cutedsl_mla")
MLA_HEADS = ("Eagle3DeepseekV2ForCausalLM",)


def _draft_has_mla(st: State) -> bool | None:
    """The drafter attends with MLA (its config has kv_lora_rank, or SGLang's MLA EAGLE-3 class); None unknown."""
    d = st.drafter
    if d is None:
        return None
    archs = d.get("architectures")
    return bool(d.get("kv_lora_rank")) or (isinstance(archs, list) and archs[:1] == list(MLA_HEADS))


def _sg_draft_backend_mla_only(known_drafter: bool):
    def apply(rule: FlagRule, st: State) -> None:
        if st.v["algorithm"] != "EAGLE3" or st.v.get("draft_attention_backend") is not None:
            return
        used = [st.v[k] for k in BACKEND_KEYS if st.v[k] in MLA_ONLY]
        mla = _draft_has_mla(st)
        if not used or mla or (mla is not None) != known_drafter:
            return
        backend = used[0]
        head = (
            f"the drafter ({st.drafter_source}) has no MLA attention"
            if known_drafter
            else "if the drafter (not local here) is a Llama-style EAGLE-3 head (no MLA), as most are"
        )
        flag = (
            "--speculative-draft-attention-backend"
            if st.version >= DRAFT_BACKEND_FLAG_FROM
            else "--attention-backend"
        )
        why = (
            "no --speculative-draft-attention-backend"
            if st.version >= DRAFT_BACKEND_FLAG_FROM
            else f"SGLang {st.version} has no --speculative-draft-attention-backend (from {DRAFT_BACKEND_FLAG_FROM})"
        )
        st.emit(rule, flag, None if flag != "--attention-backend" else st.given["attention_backend"], backend,
                f"{why}: the draft runner takes the target's {backend}, and {head}: ValueError: {backend} backend "
                "can only be used with MLA models, when the draft worker starts")  # fmt: skip

    return apply


DRAFT_BACKEND_FLAG_FROM = Version(
    "0.5.7"
)  # --speculative-draft-attention-backend (server_args.py:429 @0.5.7)


def _fix_draft_backend(st: State, change: Change) -> FlagFix:
    if st.version < DRAFT_BACKEND_FLAG_FROM:  # no draft flag yet: a backend both the target and the draft run
        edit = Edit("--attention-backend", "flashinfer")
        return FlagFix(change.rule, (edit,), f"{edit.render()}: runs the MLA target and the draft's MHA layers "
                       f"(--speculative-draft-attention-backend comes in {DRAFT_BACKEND_FLAG_FROM})")  # fmt: skip
    backend = "trtllm_mha" if st.gpu.sm100 and _topk_one(st) else "flashinfer"
    edit = Edit("--speculative-draft-attention-backend", backend)
    return FlagFix(
        change.rule, (edit,), f"{edit.render()}: an attention backend for the draft's own (MHA) layers"
    )


DRAFT_BACKEND_SRC = (
    "sglang model_runner.py:1442-1443 @0.4.10.post1, attention_registry.py:48-51 @0.5.10, :95-97 @0.5.23 "
    "(trtllm_mla needs an MLA model); model_runner.py:1974-1978 @0.5.4, :1972-1987 @0.5.10, :306-320 @0.5.23 (the "
    "draft takes the target's backends unless --speculative-draft-attention-backend, from 0.5.7, names one); "
    "eagle_worker_v2.py:223 @0.5.23; sglang#23490"
)

RULES = [
    rule("sglang.attention_backend_default", ">=0.5.23", INFO,
       f"{OVERRIDE_BASE}:277-351 get_default_attn_backend; {OVERRIDES}:1126-1140 _attention_backend_default; "
       "model_overrides/deepseek_v2.py:176-188 (trtllm_mla on sm100), gpt_oss.py:24-44, llama4.py:16-37 (trtllm_mha "
       "on sm100, fa3 on sm90, else triton), qwen3_5.py:17-49 (sm100: triton unless trtllm_mha)",
       "the attention backend SGLang picks for this target and GPU", _sg_backend_default, families=("*",)),
    rule("sglang.backend_page_size", ">=0.5.23", WARNING,
       f"{OVERRIDES}:1143-1200 _mla_backend_page_constraints; 1341-1363 _page_size_default (1)",
       "flashmla/trtllm_mla/trtllm_mha force their page size", _sg_page_size, families=("*",)),
    rule("sglang.backend_gpu", ">=0.5.23", PROBLEM,
       f"{OVERRIDES}:1203-1218 _mla_kv_cache_dtype_checks, 1235-1247 _cutedsl_prefill_backend_fill; "
       "attention_hook.py:198-227 (trtllm_mha)",
       "backends that need a GPU generation", _sg_backend_gpu, _fix_backend_gpu, fails=True, families=("*",)),
    rule("sglang.attention_backend_default_mla", ">=0.5.3.post2,<0.5.23", INFO, OLD_DEFAULT_SRC,
       "trtllm_mla on sm100 for DeepSeek-class targets", _sg_backend_default_mla, families=("*",)),
    rule("sglang.attention_backend_default_arch", ">=0.5.1,<0.5.23", INFO,
       "; ".join(a.source for a in ARCH_DEFAULTS),
       "gpt-oss and Llama-4 pick their backend per GPU (trtllm_mha on sm100)", _sg_backend_default_arch,
       families=("*",)),
    rule("sglang.backend_page_size_mla", ">=0.5.3.post2,<0.5.23", WARNING, OLD_DEFAULT_SRC,
       "trtllm_mla forces page size 64", _sg_page_size_mla, families=("*",)),
    rule("sglang.draft_backend_mla_only", ">=0.4.10.post1", PROBLEM, DRAFT_BACKEND_SRC,
       "the draft inherits an MLA-only backend", _sg_draft_backend_mla_only(True), _fix_draft_backend, fails=True,
       stage="load"),
    rule("sglang.draft_backend_mla_only_unknown_drafter", ">=0.4.10.post1", WARNING, DRAFT_BACKEND_SRC,
       "the draft may inherit an MLA-only backend", _sg_draft_backend_mla_only(False), _fix_draft_backend),
]  # fmt: skip
