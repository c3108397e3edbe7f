"""Checkpoint structure the engines choke on: one rule per behaviour, engine and version range, each beside its
condition and citing its source (docs/engine-facts.md; docs/conventions.md (b), (c)).

Where the wiring table says which taps an engine feeds, these rules say what else silently changes the drafter's
numbers or stops it loading: which `architectures` the engine routes to its EAGLE-3 class, where it takes the fc
width, which norm options it honours and from which key, what it does with `tie_word_embeddings`, a missing
lm_head or embed_tokens, the draft's RoPE, context and sliding window. Severity "unverified" marks a user report
whose cause is not established: it keeps a verdict from being `ok` without calling it a fault.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from eaglewire import conventions as conv
from eaglewire.formats import DrafterCheckpoint
from eaglewire.targets import TargetInfo


@dataclass
class Context:
    ckpt: DrafterCheckpoint
    target: TargetInfo
    engine: str
    version: Version
    row: conv.Convention
    served: conv.Resolution

    @property
    def cfg(self) -> dict:
        return self.ckpt.config

    @property
    def nested(self) -> dict:
        ec = self.cfg.get("eagle_config")
        return ec if isinstance(ec, dict) else {}

    def flag(self, key: str) -> bool:
        """A norm option as the drafter means it (top-level or under eagle_config, or in the parsed arch)."""
        arch = self.ckpt.arch
        return bool(
            self.cfg.get(key) is True or self.nested.get(key) is True or (arch and getattr(arch, key, False))
        )

    @property
    def architecture(self) -> str:
        archs = self.cfg.get("architectures")
        return archs[0] if isinstance(archs, list) and archs and isinstance(archs[0], str) else ""

    def has_tensor(self, name: str) -> bool:
        return name in self.ckpt.tensors

    @property
    def reduced_vocab(self) -> bool:
        arch = self.ckpt.arch
        dv, v = self.cfg.get("draft_vocab_size"), self.cfg.get("vocab_size")
        if arch is not None:
            return arch.draft_vocab_size < arch.vocab_size
        return isinstance(dv, int) and isinstance(v, int) and dv < v

    @property
    def speculators(self) -> bool:
        return self.ckpt.format == "speculators"


@dataclass(frozen=True)
class StructureRule:
    code: str
    engine: str
    versions: str  # PEP 440 specifier set ("" = every version)
    severity: str  # problem | warning | info | unverified
    source: str
    check: Callable[[Context], str | None]

    def covers(self, engine: str, version: Version) -> bool:
        return self.engine == engine and version in SpecifierSet(self.versions, prereleases=True)


RULES: list[StructureRule] = []


def rule(code: str, engine: str, versions: str, severity: str, source: str):
    """Register the decorated condition as one row."""

    def add(check: Callable[[Context], str | None]):
        RULES.append(StructureRule(code, engine, versions, severity, source, check))
        return check

    return add


# ---- format and architecture routing -----------------------------------------------------------------------

SGL_EAGLE3 = ("LlamaForCausalLMEagle3",)
SGL_MLA = ("Eagle3DeepseekV2ForCausalLM",)


@rule(
    "format-unsupported", "sglang", "", "problem", "sglang 0.4.5-0.5.23: no speculators_model_type anywhere"
)
def _sgl_speculators(c: Context) -> str | None:
    if c.speculators:
        return (
            "SGLang has no speculators-format support (no transformer_layer_config); convert the drafter with "
            "`eaglewire convert --to eagle`"
        )
    return None


@rule("architecture-routing", "sglang", ">=0.5.12", "problem",
      "sglang 0.5.23 models/llama_eagle3.py:387 EntryClass, kimi_k25_eagle3.py:523; configs/model_config.py:1032-1131")  # fmt: skip
def _sgl_arch(c: Context) -> str | None:
    return _sgl_route(c, SGL_EAGLE3 + SGL_MLA)


@rule(
    "architecture-routing",
    "sglang",
    "<0.5.12",
    "problem",
    "sglang 0.4.5-0.5.11 models/llama_eagle3.py EntryClass",
)
def _sgl_arch_old(c: Context) -> str | None:
    return _sgl_route(c, SGL_EAGLE3)


def _sgl_route(c: Context, known: tuple[str, ...]) -> str | None:
    if c.speculators or not c.architecture or c.architecture in known:
        return None
    return (
        f"architectures[0] is {c.architecture!r}: SGLang routes by that name and has EAGLE-3 classes only for "
        f"{', '.join(known)}; this drafter would load as another class (or fail). Set architectures to "
        f"[{known[0]!r}]"
    )


VLLM_ROUTES = (  # architecture -> the versions vLLM loads it as an EAGLE-3 draft (vllm transformers_utils/configs/eagle.py)
    ("LlamaForCausalLM", ">=0.8.5"),
    ("Eagle3LlamaForCausalLM", ">=0.8.5"),
    ("LlamaForCausalLMEagle3", "==0.8.5,>=0.10.2"),
    ("Eagle3DeepseekV2ForCausalLM", ">=0.18.0"),
    ("Eagle3DeepseekV3ForCausalLM", ">=0.18.0"),
    ("Qwen3ForCausalLM", ">=0.24.0"),
    ("Eagle3Qwen3ForCausalLM", ">=0.24.0"),
)


@rule("architecture-routing", "vllm", "", "problem",
      "vllm 0.9.0-0.33.0 transformers_utils/configs/eagle.py:58-64 (Eagle3 prefix rule); model_executor/models/registry.py")  # fmt: skip
def _vllm_arch(c: Context) -> str | None:
    if c.speculators or not c.architecture:
        return None
    arch = c.architecture
    for name, spec in VLLM_ROUTES:
        if arch == name:
            if "==0.8.5" in spec:
                ok = c.version == Version("0.8.5") or c.version >= Version("0.10.2")
            else:
                ok = c.version in SpecifierSet(spec)
            return (
                None
                if ok
                else f"vLLM {c.version} does not register {arch!r} as an EAGLE-3 draft (from {spec})"
            )
    return (
        f"architectures[0] is {arch!r}: vLLM {c.version} maps it to Eagle3{arch.removeprefix('Eagle3')}, which no "
        "model registry entry serves; use LlamaForCausalLMEagle3"
    )


@rule("not-eagle3", "*", "", "problem", "an MTP/NextN layer (e.g. SpecForge configs/kimi-k2-eagle3.json, DeepseekV3ForCausalLMNextN)")  # fmt: skip
def _nextn(c: Context) -> str | None:
    from eaglewire.formats.eagle import NEXTN_SUFFIXES

    if c.architecture.endswith(NEXTN_SUFFIXES):
        return f"{c.architecture} is an MTP/NextN draft, not an EAGLE-3 head: serve it with EAGLE/NEXTN (SGLang) or mtp (vLLM), not EAGLE3"
    return None


# ---- fc width -------------------------------------------------------------------------------------------------


def engine_aux_count(c: Context) -> int:
    """How many aux states the engine builds fc for: the row's keys in order, else 3."""
    keys = c.row.fc_width_keys
    if c.engine == "vllm" and c.speculators and c.version >= Version("0.24.0"):
        layer_type = (c.cfg.get("transformer_layer_config") or {}).get("model_type")
        if layer_type == "qwen3":  # qwen3_eagle3.py:202-214 reads the top-level list too
            keys = ("num_aux_hidden_states", "eagle_aux_hidden_state_layer_ids")
    for key in keys:
        value = conv.get_path(c.cfg, key)
        if isinstance(value, bool) or value is None:
            continue
        if isinstance(value, int):
            return value
        if isinstance(value, list) and value:
            return len(value)
    if c.engine == "trtllm":
        return len(c.served.taps) if c.served.taps is not None else 3
    return 3


@rule("fc-width", "*", "", "problem",
      "sglang llama_eagle3.py:153-161 @0.5.12 (3 before); vllm llama_eagle3.py:175-187 @0.28.0 (3 before 0.22), "
      "qwen3_eagle3.py:202-214 @0.33.0; TensorRT-LLM modeling_speculative.py (num_capture_layers); vllm#54526")  # fmt: skip
def _fc_width(c: Context) -> str | None:
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


def _unhonoured(c: Context, key: str, honoured: bool) -> str | None:
    if c.flag(key) and not honoured:
        return f"the drafter uses {key}, which {c.engine} {c.version} ignores here: its draft numerics differ from training"
    return None


@rule("aux-disabled", "*", "", "problem", "sglang spec_aux_hidden_state.py:186-191 @0.5.23 (read from 0.5.8); vllm llama_eagle3.py:145-149 @0.14.0")  # fmt: skip
def _aux_disabled(c: Context) -> str | None:
    if c.nested.get("use_aux_hidden_state") is not False:
        return None
    if c.has_tensor("fc.weight"):
        return "eagle_config.use_aux_hidden_state is false but the drafter has an fc: the engine feeds no aux states to it"
    reads = {"sglang": "0.5.8", "vllm": "0.14.0"}.get(c.engine)
    if reads and c.version < Version(reads):
        return (
            f"{c.engine} < {reads} ignores use_aux_hidden_state: it captures aux states and builds an fc this "
            "checkpoint does not have"
        )
    return None


@rule("norm-before-residual", "sglang", "", "problem", "sglang 0.4.5-0.5.23: norm_before_residual never read (llama_eagle3.py)")  # fmt: skip
def _sgl_nbr(c: Context) -> str | None:
    return _unhonoured(c, "norm_before_residual", False)


@rule("norm-before-residual-default", "vllm", ">=0.10.1", "warning", "vllm transformers_utils/configs/speculators/algos.py:31 @0.10.1-0.33.0")  # fmt: skip
def _vllm_nbr_default(c: Context) -> str | None:
    if c.speculators and "norm_before_residual" not in c.cfg:
        return "config has no norm_before_residual: vLLM's speculators loader defaults it to True, speculators to False"
    return None


@rule("norm-before-fc", "sglang", "", "problem", "sglang llama_eagle3.py:161-175 @0.5.17 (eagle_config first, then top-level); kimi_k25_eagle3.py: never")  # fmt: skip
def _sgl_nbf(c: Context) -> str | None:
    mla = c.architecture in SGL_MLA
    return _unhonoured(c, "norm_before_fc", c.version >= Version("0.5.17") and not mla)


@rule("norm-before-fc", "vllm", "", "problem",
      "vllm llama_eagle3.py:153 @0.18.0 (top-level), :150-154 @0.22.0 (eagle_config first); speculators/algos.py:38 @0.19.0 (PR #38111)")  # fmt: skip
def _vllm_nbf(c: Context) -> str | None:
    v = c.version
    if c.speculators:
        ok = v >= Version("0.19.0")
    elif c.nested.get("norm_before_fc") is True:
        ok = v >= Version("0.22.0")
    else:
        ok = v >= Version("0.18.0")
    return _unhonoured(c, "norm_before_fc", ok)


@rule("norm-before-fc", "trtllm", "", "problem", "TensorRT-LLM modeling_speculative.py Eagle3DecoderLayer (norm_before_fc only under eagle_config)")  # fmt: skip
def _trt_nbf(c: Context) -> str | None:
    return _unhonoured(c, "norm_before_fc", c.nested.get("norm_before_fc") is True)


@rule("fc-norm-norm-output", "sglang", "", "problem", "sglang llama_eagle3.py:166-178, 188 @0.5.12; kimi_k25_eagle3.py:228-241 @0.5.23 (from 0.5.13)")  # fmt: skip
def _sgl_31(c: Context) -> str | None:
    since = Version("0.5.13") if c.architecture in SGL_MLA else Version("0.5.12")
    return _unhonoured(c, "fc_norm", c.version >= since) or _unhonoured(c, "norm_output", c.version >= since)


@rule("fc-norm-norm-output", "vllm", "", "problem", "vllm llama_eagle3.py:200, 221 @0.22.0; speculators/algos.py @0.25.0 (PR #46488)")  # fmt: skip
def _vllm_31(c: Context) -> str | None:
    since = Version("0.25.0") if c.speculators else Version("0.22.0")
    return _unhonoured(c, "fc_norm", c.version >= since) or _unhonoured(c, "norm_output", c.version >= since)


NORM_OUTPUT_MEANING = (
    "norm_output is true in an EAGLE-format config: the trainer's meaning decides what must be fed back. SpecForge "
    "(whose eagle3.1 configs set it) trains with the pre-norm state fed back and uses it only for the final norm "
    "before lm_head; {engine} feeds the post-norm state back. Trained by SpecForge, the drafter gets other "
    "inputs than in training; `eaglewire doctor` on the target measures which"
)


def _norm_output_meaning(c: Context, engine: str, honoured: bool) -> str | None:
    """SpecForge's norm_output differs from the engines' (docs/conventions.md (c) 2, inferred from source)."""
    if not honoured or c.speculators or c.ckpt.provenance is not None or not c.flag("norm_output"):
        return None
    return NORM_OUTPUT_MEANING.format(engine=engine)


@rule("norm-output-meaning", "sglang", ">=0.5.12", "unverified", "sglang llama_eagle3.py:263-269 @0.5.23; SpecForge llama3_eagle.py:1690, 1772-1777 @a6b6b02; docs/conventions.md (c) 2")  # fmt: skip
def _sgl_norm_output(c: Context) -> str | None:
    since = Version("0.5.13") if c.architecture in SGL_MLA else Version("0.5.12")
    return _norm_output_meaning(c, "SGLang", c.version >= since)


@rule("norm-output-meaning", "vllm", ">=0.22.0", "unverified", "vllm llama_eagle3.py:283-288 @0.33.0; SpecForge llama3_eagle.py:1690, 1772-1777 @a6b6b02; docs/conventions.md (c) 2")  # fmt: skip
def _vllm_norm_output(c: Context) -> str | None:
    return _norm_output_meaning(c, "vLLM", True)


# ---- vocabulary, embeddings, lm_head -----------------------------------------------------------------------


@rule("tied-reduced-vocab", "sglang", "", "problem", "sglang llama_eagle3.py:207-224 @0.5.5, 303-322 @0.5.23; SpecForge#139")  # fmt: skip
def _sgl_tied(c: Context) -> str | None:
    if c.cfg.get("tie_word_embeddings") is True and c.reduced_vocab:
        return (
            "tie_word_embeddings is true with a reduced draft vocabulary: SGLang ties lm_head to the (target's) "
            "embedding, drops the trained lm_head and scores the first draft_vocab_size embedding rows: garbage "
            "drafts; set tie_word_embeddings to false"
        )
    return None


@rule("own-embedding-missing", "sglang", "", "problem", "sglang llama.py:910-918 @0.5.23 (set_embed returns early when target_hidden_size != hidden_size)")  # fmt: skip
def _sgl_embed(c: Context) -> str | None:
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


@rule("lm-head-missing", "*", "", "problem", "sglang llama_eagle3.py:206-218 @0.5.5; vllm eagle.py:1010 @0.11.1 (target head shared)")  # fmt: skip
def _lm_head(c: Context) -> str | None:
    if c.ckpt.has_weights and not c.has_tensor("lm_head.weight") and c.reduced_vocab:
        return (
            "the drafter has no lm_head and a reduced draft vocabulary: engines share the target's full-vocabulary "
            "head, which cannot score the draft vocabulary"
        )
    return None


@rule("embedding-replaced", "vllm", ">=0.9.0,<0.11.1", "warning", "vllm v1/spec_decode/eagle.py:330-336 @0.9.0, 343-353 @0.9.2, 854-903 @0.11.0")  # fmt: skip
def _vllm_embed(c: Context) -> str | None:
    if c.has_tensor("embed_tokens.weight"):
        return (
            "vLLM 0.9-0.11.0 replaces the drafter's own embed_tokens with the target's (and in 0.11.0 a full-vocab "
            "lm_head too) whenever the shapes match: right only if they were frozen copies of the target's"
        )
    return None


# ---- RoPE, context, sliding window -------------------------------------------------------------------------


def _rope(cfg: dict) -> tuple[str, float | None, float | None]:
    rp = cfg.get("rope_parameters") if isinstance(cfg.get("rope_parameters"), dict) else None
    scaling = rp or (cfg.get("rope_scaling") if isinstance(cfg.get("rope_scaling"), dict) else {}) or {}
    kind = scaling.get("rope_type") or scaling.get("type") or "default"
    theta = (rp or {}).get("rope_theta", cfg.get("rope_theta"))
    return str(kind), theta, scaling.get("factor")


@rule("rope-differs", "*", "", "warning", "SGLang and vLLM build the draft rotary from the draft config (docs/conventions.md (c)); NVIDIA-NeMo/Automodel PR #2399")  # fmt: skip
def _rope_differs(c: Context) -> str | None:
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


@rule("draft-context", "vllm", "<0.27.0", "warning", "vllm config/speculative.py:1165 @0.27.0 (raised from 0.27); NVIDIA-NeMo/RL PR #3960")  # fmt: skip
def _vllm_context(c: Context) -> str | None:
    return _short_context(c, "vLLM < 0.27 sizes the draft rotary cache by it: acceptance collapses past it")


@rule("draft-context", "sglang", "", "warning", "sglang llama.py:322-352 @0.5.23 (draft max_position_embeddings sizes its rotary)")  # fmt: skip
def _sgl_context(c: Context) -> str | None:
    return _short_context(
        c, "SGLang sizes the draft rotary by it: positions beyond are outside the draft's cache"
    )


def _short_context(c: Context, what: str) -> str | None:
    dcfg = (c.cfg.get("transformer_layer_config") or {}) if c.speculators else c.cfg
    draft, target = dcfg.get("max_position_embeddings"), c.target.config.get("max_position_embeddings")
    if isinstance(draft, int) and isinstance(target, int) and draft < target:
        return f"drafter max_position_embeddings {draft} < the target's {target}: {what}"
    return None


def _sliding(c: Context) -> bool:
    dcfg = (c.cfg.get("transformer_layer_config") or {}) if c.speculators else c.cfg
    types = dcfg.get("layer_types")
    return bool(dcfg.get("sliding_window")) and (
        dcfg.get("use_sliding_window", True) is not False
        or (isinstance(types, list) and "sliding_attention" in types)
    )


@rule("sliding-window-ignored", "sglang", "", "warning", "sglang llama_eagle3.py:286-299 @0.5.23 (draft sliding_window/layer_types never read)")  # fmt: skip
def _sgl_sw(c: Context) -> str | None:
    if _sliding(c):
        return "the drafter is configured with a sliding window, which SGLang does not apply (only --speculative-draft-window-size does)"
    return None


@rule("sliding-window-ignored", "vllm", "", "warning", "vllm attention.py:266-271 @0.33.0; qwen3_eagle3.py:46-61 @0.26.0; speculators PR #684")  # fmt: skip
def _vllm_sw(c: Context) -> str | None:
    if not _sliding(c):
        return None
    dcfg = (c.cfg.get("transformer_layer_config") or {}) if c.speculators else c.cfg
    qwen3 = dcfg.get("model_type") == "qwen3"
    if qwen3 and c.version >= Version("0.26.0") and isinstance(dcfg.get("layer_types"), list):
        return None
    return "the drafter's sliding window is not applied by vLLM here (the target's window is used): -31% accept length at 2k context (speculators PR #684)"


# ---- user reports whose cause is not established -----------------------------------------------------------


@rule("reported-qwen-vl", "sglang", "==0.5.5.*", "unverified", "sgl-project/SpecForge#310 (accept length 2.2 on 0.5.4, ~1.0 on 0.5.5.post3)")  # fmt: skip
def _sgl_qwen_vl(c: Context) -> str | None:
    if c.target.family in ("qwen2_5_vl", "qwen3_vl", "qwen3_vl_moe"):
        return "users report accept length ~1.0 for Qwen-VL targets on SGLang 0.5.5 (cause not established); 0.5.4 worked"
    return None


def findings_for(
    ckpt: DrafterCheckpoint, target: TargetInfo, spec: conv.EngineSpec, row, served
) -> list[tuple[str, str, str]]:
    """(severity, code, message with its source) for every rule of this engine version that fires."""
    version = spec.version or Version(conv.NEWEST.get(spec.framework, "0"))
    c = Context(ckpt, target, spec.framework, version, row, served)
    out = []
    for r in RULES:
        if r.engine in (spec.framework, "*") and version in SpecifierSet(r.versions, prereleases=True):
            message = r.check(c)
            if message:
                out.append((r.severity, r.code, f"{message} [{r.source}]"))
    return out
