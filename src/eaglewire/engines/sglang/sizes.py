"""SGLang's size tables and the fix planner: the auto-chosen (num_steps, topk, num_draft_tokens) per version and
target architecture, MTP targets per version, the draft tree's candidate pool, and the consistent sizes a fix
proposes. Data and arithmetic only; the rules that use them are in `sglang.py`."""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from eaglewire.engines.sglang import families as sglang_families
from eaglewire.engines.sglang.args import SG_HOOK, SG_KEYS, SG_SA, SGLANG, TRIPLE
from eaglewire.rules.context import WRAPPER_TEXT_ARCH
from eaglewire.rules.flags import FlagRule, State, row
from eaglewire.rules.launch import INFO, PROBLEM, WARNING, Change, Edit, FlagFix

rule = functools.partial(row, SGLANG)
RULES: list[FlagRule] = []


@dataclass(frozen=True)
class AutoChoice:
    """`auto_choose_speculative_params` in one version range: (num_steps, topk, num_draft_tokens) by TARGET arch."""

    versions: str
    small: frozenset[str]  # architectures that get (3, 1, 4)
    otherwise: tuple[int, int, int]
    citation: str
    large: frozenset[str] = frozenset(
        {"LlamaForCausalLM", "Grok1ForCausalLM", "Grok1VForCausalLM"}
    )  # (5, 4, 8)

    def choose(self, arch: str | None) -> tuple[int, int, int]:
        if arch in self.large:
            return (5, 4, 8)
        if arch in self.small:
            return (3, 1, 4)
        return self.otherwise


_DS = frozenset({"DeepseekV3ForCausalLM", "DeepseekV2ForCausalLM"})
_DS_GPT = _DS | {"GptOssForCausalLM"}
_E053 = _DS_GPT | {"DeepseekV32ForCausalLM", "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM"}
_E057 = _E053 | {
    "Glm4MoeForCausalLM",
    "MistralLarge3ForCausalLM",
    "PixtralForConditionalGeneration",
    "MiMoV2FlashForCausalLM",
}
_E058 = _E057 | {"Glm4MoeLiteForCausalLM"}
_E059 = _E058 | {"GlmMoeDsaForCausalLM", "BailingMoeV2_5ForCausalLM"}
_E0511 = _E059 | {"MiMoV2ForCausalLM"}
AUTO_CHOICES: tuple[AutoChoice, ...] = (
    # 0.4.5.x: the table its code holds, never reached (AUTO_CHOICE_CRASHES); kept for the fix planner
    AutoChoice(">=0.4.5,<0.4.6", frozenset(), (5, 4, 8),
               "sglang 0.4.5 server_args.py:1313-1340 auto_choose_speculative_params: every branch returns "
               "(5, 4, 8)"),
    AutoChoice(">=0.4.6,<0.4.7", frozenset(), (5, 4, 8),
               "sglang 0.4.6 (and 0.4.6.post1-5) server_args.py auto_choose_speculative_params: every branch "
               "returns (5, 4, 8); reads architectures[0] from <model_path>/config.json; model code of sglang "
               "0.4.6-0.4.6.post5, executed: engines/sglang/data/draft-settings/sglang-V.json, case 'eagle3/no "
               "step flags'"),
    AutoChoice(">=0.4.7,<0.5.1", _DS, (5, 4, 8),
               "sglang 0.4.7-0.4.10 (and 0.4.10.post2) server_args.py auto_choose_speculative_params"),
    AutoChoice(">=0.5.1,<0.5.3", _DS_GPT, (5, 4, 8),
               "sglang 0.5.1-0.5.2 server_args.py auto_choose_speculative_params"),
    AutoChoice(">=0.5.3,<0.5.7", _E053, (5, 4, 8),
               "sglang 0.5.3-0.5.6 server_args.py auto_choose_speculative_params"),
    AutoChoice(">=0.5.7,<0.5.8", _E057, (5, 4, 8), "sglang 0.5.7 server_args.py auto_choose_speculative_params"),
    AutoChoice(">=0.5.8,<0.5.9", _E058, (3, 1, 4), "sglang 0.5.8 server_args.py auto_choose_speculative_params"),
    AutoChoice(">=0.5.9,<0.5.11", _E059, (3, 1, 4),
               "sglang 0.5.9-0.5.10 (and 0.5.10.post1) server_args.py auto_choose_speculative_params"),
    AutoChoice(">=0.5.11", _E0511, (3, 1, 4),
               f"sglang 0.5.11-0.5.13 server_args.py auto_choose_speculative_params; {SG_HOOK}:1430-1461 "
               "_auto_choose_speculative_params (keys on hf_config.architectures[0], :1120)"),
)  # fmt: skip


def auto_for(version: Version) -> AutoChoice:
    return next(a for a in AUTO_CHOICES if SpecifierSet(a.versions).contains(version, prereleases=True))


def tree_pool(num_steps: int, topk: int) -> int:
    """Candidate draft nodes before the rerank: topk + (num_steps - 1) * topk^2 (sglang eagle_utils.py:107-110)."""
    return topk + (num_steps - 1) * topk * topk


def plan_triple(
    n: int | None, k: int | None, d: int | None, auto: tuple[int, int, int], force_k1: bool
) -> tuple[tuple[int, int, int], tuple[int, int, int] | None]:
    """A consistent (num_steps, topk, num_draft_tokens) that keeps what the user set on purpose, and the other way.

    Keeps num_draft_tokens (the verify width) when given; with topk 1 that means num_steps = ndt - 1. For a tree
    it raises num_steps until the candidate pool holds ndt - 1 nodes. Without ndt, topk > 1 gets
    min(pool + 1, steps + topk - 1), which reproduces SGLang's own (5, 4, 8).
    """
    if n is None and k is None and d is None and not force_k1:
        return auto, None
    if force_k1 or k is None or k < 1:
        k = 1
    steps = n if n is not None and n >= 1 else None
    if k == 1:
        if d is not None and d >= 2:
            other = (steps, 1, steps + 1) if steps is not None and steps != d - 1 else None
            return (d - 1, 1, d), other
        steps = steps or (auto[0] if auto[1] == 1 else 3)
        return (steps, 1, steps + 1), None
    if d is not None and d >= 2:
        need = 1
        while tree_pool(need, k) < d - 1:
            need += 1
        if steps is None or tree_pool(steps, k) < d - 1:
            other = (steps, k, tree_pool(steps, k) + 1) if steps is not None else None
            return (max(need, steps or 1), k, d), other
        return (steps, k, d), None
    steps = steps or (auto[0] if auto[1] > 1 else 5)
    return (steps, k, min(tree_pool(steps, k) + 1, steps + k - 1)), None


def triple_edits(triple: tuple[int, int, int]) -> tuple[Edit, ...]:
    return tuple(Edit(SG_KEYS[key], str(value)) for key, value in zip(TRIPLE, triple, strict=True))


def fix_triple(st: State, change: Change) -> FlagFix:
    g = st.given
    auto = st.auto or auto_for(st.version).choose(st.target_arch)
    triple, other = plan_triple(g["num_steps"], g["topk"], g["num_draft_tokens"], auto, bool(st.force_topk1))
    edits = triple_edits(triple)
    flags = " ".join(e.render() for e in edits)
    n, k, d = triple
    shape = f"a {n}-step chain ({n} draft forwards per verify)" if k == 1 else f"a tree of depth {n}, top-{k}"
    if g["num_draft_tokens"] == d:
        description = f"{flags}: keeps the {d} verified tokens per step you asked for, as {shape}"
    else:
        description = f"{flags}: {shape}, {d - 1} drafts proposed per verify"
    if st.force_topk1:
        description += f" (topk 1 because {'; '.join(dict.fromkeys(st.force_topk1))})"
    alternative = None
    if other is not None:
        alt_flags = " ".join(e.render() for e in triple_edits(other))
        alternative = f"or {alt_flags}: keeps num_steps {other[0]}"
        if other[1] == 1 and change.rule == "sglang.chain_rule":
            alternative += f"; this is what the server already does ({other[2]} verified tokens)"
    elif g["num_steps"] is None and (g["topk"] is not None or g["num_draft_tokens"] is not None):
        alternative = (
            "or drop --speculative-eagle-topk and --speculative-num-draft-tokens: SGLang then auto-chooses "
            f"{auto} for this target"
        )
    return FlagFix(change.rule, edits, description, alternative)


def fix_algorithm(value: str) -> Callable[[State, Change], FlagFix]:
    def fix(st: State, change: Change) -> FlagFix:
        edit = Edit("--speculative-algorithm", value)
        return FlagFix(change.rule, (edit,), f"{edit.render()}: the algorithm that matches the drafter")

    return fix


def fix_draft_path(st: State, change: Change) -> FlagFix:
    edit = Edit("--speculative-draft-model-path", "<path of the EAGLE-3 drafter>")
    return FlagFix(
        change.rule, (edit,), "give the drafter with --speculative-draft-model-path", mechanical=False
    )


def fix_no_algorithm(st: State, change: Change) -> FlagFix:
    value = "EAGLE" if st.drafter_kind == "eagle" else "EAGLE3"
    edit = Edit("--speculative-algorithm", value)
    return FlagFix(change.rule, (edit,), f"{edit.render()}: turn speculation on")


# ---- the rules ----


def _sg_partial(skip_adaptive: bool) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        if skip_adaptive and st.v["adaptive"]:
            return
        if st.v["num_steps"] is None and (st.v["topk"] is not None or st.v["num_draft_tokens"] is not None):
            given = [SG_KEYS[k] for k in ("topk", "num_draft_tokens") if st.v[k] is not None]
            st.emit(
                rule,
                "--speculative-num-steps",
                None,
                None,
                f"{' and '.join(given)} set without --speculative-num-steps: SGLang asserts that all three are "
                "unset or num_steps is set (AssertionError at startup)",
            )

    return apply


RULES += [
    rule("sglang.partial_specification", ">=0.4.5,<0.5.19", PROBLEM,
       f"{SG_SA}: `if self.speculative_num_steps is None: assert (self.speculative_eagle_topk is None and "
       "self.speculative_num_draft_tokens is None)`; same in 0.5.13-0.5.18 speculative_hook.py",
       "topk/num_draft_tokens without num_steps: AssertionError", _sg_partial(False), fix_triple, fails=True),
    rule("sglang.partial_specification", ">=0.5.19", PROBLEM,
       f"{SG_HOOK}:1159-1163 (`if not cfg.speculative_adaptive and cfg.speculative_num_steps is None: "
       "assert ...`)",
       "topk/num_draft_tokens without num_steps: AssertionError", _sg_partial(True), fix_triple, fails=True),
]  # fmt: skip


def _sg_auto_local_config(rule: FlagRule, st: State) -> None:
    if any(st.v[k] is not None for k in TRIPLE):
        return
    model = st.cmd.model or ""
    if not Path(model).expanduser().exists() and re.match(r"^[\w.-]+/[\w.-]+$", model):
        st.emit(
            rule,
            "--model-path",
            model,
            None,
            "auto-choice reads <model_path>/config.json from local disk in this version: a hub id fails with "
            "'config.json is not found' (ValueError)",
        )


AUTO_CHOICE_CRASHES = ">=0.4.5,<0.4.6"


def _sg_auto_choice_crashes(rule: FlagRule, st: State) -> None:
    if any(st.v[k] is not None for k in TRIPLE):
        return
    st.emit(rule, "--speculative-num-steps", None, None,
            "all three speculative sizes unset: this release's auto-choice reads `self.decrypted_config_file`, "
            "a field its ServerArgs does not define: AttributeError at startup, before any size is chosen "
            "(sglang#5673; fixed for 0.4.6 by PR #5685)")  # fmt: skip


RULES += [
    rule("sglang.auto_choice_crashes", AUTO_CHOICE_CRASHES, PROBLEM,
       "sglang 0.4.5 server_args.py:351 calls auto_choose_speculative_params, whose first line (:1319) reads "
       "self.decrypted_config_file, not a ServerArgs field; model code of sglang 0.4.5-0.4.5.post3, executed: "
       "engines/sglang/data/draft-settings/sglang-V.json, case 'eagle3/no step flags' (AttributeError)",
       "all three unset: AttributeError in the auto-choice", _sg_auto_choice_crashes, fix_triple, fails=True,
       observed="model-code: engines/sglang/data/draft-settings/sglang-V.json, 0.4.5-0.4.5.post3, case 'eagle3/no "
       "step flags'"),
    rule("sglang.auto_choice_needs_local_config", ">=0.4.6,<0.4.7", PROBLEM,
       "sglang 0.4.6 server_args.py auto_choose_speculative_params: `config_path = os.path.join("
       "self.model_path, 'config.json')`; `raise ValueError(f'{config_path} is not found.')`",
       "auto choice fails for hub ids", _sg_auto_local_config, fix_triple, fails=True),
]  # fmt: skip


def _sg_auto_choice(epoch: AutoChoice) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        if any(st.v[k] is not None for k in TRIPLE) or st.v["adaptive"]:
            return
        arch = st.target_arch
        triple = epoch.choose(arch)
        if arch is None:
            why = "target architecture unknown: assumed not Llama/Grok/DeepSeek-class (pass the target architecture)"
        else:
            why = f"keyed on the target's architectures[0] = {arch}"
            text_arch = st.text_arch or WRAPPER_TEXT_ARCH.get(arch)
            if text_arch and text_arch != arch:
                other = epoch.choose(text_arch)
                why += f" (the wrapper, not its {text_arch} text model"
                why += f", which would get {other})" if other != triple else ")"
        for key, value in zip(TRIPLE, triple, strict=True):
            st.emit(
                rule,
                SG_KEYS[key],
                None,
                value,
                f"all three speculative sizes unset: SGLang auto-chooses (num_steps, topk, num_draft_tokens) = "
                f"{triple}, {why}; state them explicitly to control them",
            )
            st.v[key] = value

    return apply


RULES += sglang_families.STANDALONE_AUTO_RULES
RULES += [
    *(
        rule("sglang.auto_choice", epoch.versions, WARNING, epoch.citation,
           "all three unset: chosen by target architecture", _sg_auto_choice(epoch))
        for epoch in AUTO_CHOICES
        if epoch.versions != AUTO_CHOICE_CRASHES
    ),
]  # fmt: skip


# Spec v2 (the overlap scheduler's EAGLE worker) assumes a chain: its draft extend after each verify gives every
# request num_steps + 1 tokens (eagle_worker_v2.py `_draft_extend_for_decode`), a tree verifies num_draft_tokens.
# SGLang refuses (0.5.7-0.5.10) or routes to spec v1 (0.5.11-0.5.12) only a topk > 1 the command GIVES; the auto
# choice runs later, so its topk 4 (Llama, Grok; and every other target at 0.5.7) reaches the v2 worker, which fails
# on the first decode (a tensor-size RuntimeError: sglang#13352, #14077). 0.5.13's worker extends by num_draft_tokens
# (eagle_worker_v2.py:707) and runs trees.
SPEC_V2_SRC_ENV = (
    "sglang server_args.py:2000-2014 (spec v2 forces `disable_overlap_schedule = False`, then refuses only a given "
    "topk > 1) before the auto choice :2060 @0.5.7, :2999-3013 and :3062 @0.5.10 (same @0.5.10.post1), environ.py "
    "SGLANG_ENABLE_SPEC_V2 = EnvBool(False) (:362 @0.5.7, :442 @0.5.10); speculative/eagle_worker_v2.py:484 @0.5.7, "
    ":517 @0.5.9, :553 @0.5.10 (`_draft_extend_for_decode`: num_steps + 1 tokens per request); spec_info.py:265-269 "
    "@0.5.7, :76-79 @0.5.10 (overlap on: EAGLEWorkerV2); sglang#13352, #14077"
)
SPEC_V2_SRC_DEFAULT = (
    "sglang server_args.py:3460-3473 (falls back to spec v1 only for a given topk > 1) before the auto choice "
    ":3519-3527 @0.5.11, :3748-3761 and :3816 @0.5.12 (same @0.5.12.post1); environ.py SGLANG_ENABLE_SPEC_V2 = "
    "EnvBool(True) (:459 @0.5.11, :470 @0.5.12); speculative/eagle_worker_v2.py:561 @0.5.11, :573 @0.5.12 "
    "(num_tokens_per_req = num_steps + 1), spec_info.py:93-96 @0.5.11 (overlap on: EAGLEWorkerV2); fixed @0.5.13 "
    "(eagle_worker_v2.py:707 num_draft_tokens); sglang#13352, #14077"
)


def _sg_spec_v2_auto_topk(env_opt_in: bool) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        topk = st.v["topk"]
        if any(st.given[k] is not None for k in TRIPLE) or topk is None or topk <= 1:
            return
        if st.v["algorithm"] not in ("EAGLE", "EAGLE3"):
            return
        if env_opt_in:  # SGLANG_ENABLE_SPEC_V2=1 turns the overlap scheduler on, whatever the command says
            if not st.env_true("SGLANG_ENABLE_SPEC_V2", False):
                return
            why = "SGLANG_ENABLE_SPEC_V2=1 selects spec v2 (and turns the overlap scheduler on)"
        else:
            if st.v["disable_overlap_schedule"]:
                return
            why = "spec v2 is on by default with the overlap scheduler"
        triple = (st.v["num_steps"], topk, st.v["num_draft_tokens"])
        st.emit(
            rule,
            "--speculative-eagle-topk",
            None,
            None,
            f"{why}, and SGLang checks only a topk you give: the auto-chosen {triple} (topk {topk}, a tree) reaches "
            "the spec v2 worker, which extends the draft by num_steps + 1 tokens per request (a chain): "
            "RuntimeError 'Sizes of tensors must match' on the first decode (sglang#13352)",
        )
        st.force_topk1.append("spec v2 runs a chain (topk 1) in this version")

    return apply


def _fix_spec_v2_auto_topk(alternative: str) -> Callable[[State, Change], FlagFix]:
    def fix(st: State, change: Change) -> FlagFix:
        chain = fix_triple(st, change)
        return FlagFix(chain.rule, chain.edits, chain.description, alternative)

    return fix


SPEC_V2_KEEP_TREE_ENV = (
    "or unset SGLANG_ENABLE_SPEC_V2 (spec v1 runs the auto-chosen tree); --disable-overlap-schedule does not help "
    "here: spec v2 turns the overlap scheduler back on"
)
SPEC_V2_KEEP_TREE = (
    "or keep the tree by giving its sizes (e.g. --speculative-num-steps 5 --speculative-eagle-topk 4 "
    "--speculative-num-draft-tokens 8): a given topk > 1 runs spec v1, without the overlap scheduler; or "
    "--disable-overlap-schedule"
)


RULES += [
    rule("sglang.spec_v2_auto_topk", ">=0.5.7,<0.5.11", PROBLEM, SPEC_V2_SRC_ENV,
       "SGLANG_ENABLE_SPEC_V2 with an auto-chosen topk > 1: the v2 worker fails on the first decode",
       _sg_spec_v2_auto_topk(True), _fix_spec_v2_auto_topk(SPEC_V2_KEEP_TREE_ENV), fails=True, stage="runtime"),
    rule("sglang.spec_v2_auto_topk", ">=0.5.11,<0.5.13", PROBLEM, SPEC_V2_SRC_DEFAULT,
       "spec v2 (the default) with an auto-chosen topk > 1: the v2 worker fails on the first decode",
       _sg_spec_v2_auto_topk(False), _fix_spec_v2_auto_topk(SPEC_V2_KEEP_TREE), fails=True, stage="runtime"),
]  # fmt: skip


def _sg_page_topk_to_1(user_set: bool) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        topk, page = st.v["topk"], st.v["page_size"]
        if topk is None or page is None or not (page > 1 and topk > 1):
            return
        if user_set != (st.given["topk"] is not None):
            return
        st.emit(
            rule,
            "--speculative-eagle-topk",
            topk,
            1,
            f"with --page-size {page} SGLang sets topk := 1 in this version (the tree becomes a chain)",
        )
        st.v["topk"] = 1
        if user_set:
            st.force_topk1.append(f"--page-size {page} forces topk 1")

    return apply


RULES += [
    rule("sglang.page_size_topk_to_1", ">=0.4.5,<0.4.9", PROBLEM,
       "sglang 0.4.5-0.4.8 server_args.py: `if self.page_size > 1 and self.speculative_eagle_topk > 1: "
       "self.speculative_eagle_topk = 1`",
       "page size > 1 turns a tree into a chain", _sg_page_topk_to_1(True), fix_triple),
    rule("sglang.page_size_auto_topk_to_1", ">=0.4.5,<0.4.9", WARNING,
       "sglang 0.4.5-0.4.8 server_args.py (same rule, applied to the auto-chosen topk)",
       "page size > 1 turns the auto tree into a chain", _sg_page_topk_to_1(False)),
]  # fmt: skip


def _sg_page_flashinfer_mtp(rule: FlagRule, st: State) -> None:
    page = st.v["page_size"]
    archs = frozenset({"DeepseekV3ForCausalLM", "Glm4MoeForCausalLM"})
    if (
        st.target_arch in archs
        and page is not None
        and page != 1
        and st.v["attention_backend"] == "flashinfer"
    ):
        st.emit(
            rule,
            "--page-size",
            page,
            None,
            f"{st.target_arch} + flashinfer + page size {page}: ValueError 'Speculative decoding with "
            "page_size != 1 is not supported' in this version",
        )


RULES += [
    rule("sglang.page_size_flashinfer_mtp", ">=0.5.1,<0.5.2", PROBLEM,
       "sglang 0.5.1 server_args.py: 'Speculative decoding with page_size != 1 is not supported. Please set "
       "page_size to 1.' (DeepSeek-V3/GLM-4-MoE with flashinfer)",
       "page size != 1 with flashinfer on MTP targets", _sg_page_flashinfer_mtp,
       lambda st, c: FlagFix(c.rule, (Edit("--page-size", "1"),), "--page-size 1"), fails=True),
]  # fmt: skip


def _sg_topk_unset(rule: FlagRule, st: State) -> None:
    if st.v["num_steps"] is not None and st.v["topk"] is None and not st.v["adaptive"]:
        st.emit(
            rule,
            "--speculative-eagle-topk",
            None,
            None,
            "--speculative-num-steps set without --speculative-eagle-topk: topk stays None and the `topk > 1` "
            "checks raise TypeError at startup",
        )


RULES += [
    rule("sglang.topk_unset", ">=0.4.5", PROBLEM,
       f"{SG_HOOK}:1268-1283 (`cfg.speculative_eagle_topk > 1` with topk None raises TypeError); 0.5.2-0.5.12 "
       "server_args.py the same comparison (older: later, inferred)",
       "num_steps without topk", _sg_topk_unset, fix_triple, fails=True),
]  # fmt: skip


def _sg_trtllm(rule: FlagRule, st: State) -> None:
    keys = ("attention_backend", "decode_attention_backend", "prefill_attention_backend")
    topk = st.v["topk"]
    used = [SG_KEYS[k] for k in keys if st.v[k] == "trtllm_mha"]
    if used and topk is not None and topk > 1:
        if any(st.given[k] == "trtllm_mha" for k in keys):
            backend = f"{used[0]} trtllm_mha"
        else:
            backend = f"trtllm_mha (SGLang's default for {st.target_arch} on {st.gpu.key}, no backend given)"
        st.emit(
            rule,
            "--speculative-eagle-topk",
            topk,
            None,
            f"{backend} supports only topk 1: ValueError 'trtllm_mha backend only supports topk = 1 for "
            "speculative decoding.' at startup",
        )
        st.force_topk1.append("trtllm_mha supports only topk 1")


def _fix_trtllm(st: State, change: Change) -> FlagFix:
    chain = fix_triple(st, change)
    keys = ("attention_backend", "decode_attention_backend", "prefill_attention_backend")
    if any(st.given[k] == "trtllm_mha" for k in keys):
        return chain
    return FlagFix(chain.rule, chain.edits, chain.description,
                   "or keep the tree with --attention-backend triton (the backend was SGLang's default, not yours)")  # fmt: skip


RULES += [
    rule("sglang.trtllm_mha_topk", ">=0.5.1", PROBLEM,
       f"{SG_HOOK}:1176-1180; sglang 0.5.1-0.5.12 server_args.py ('trtllm_mha backend only supports topk = 1')",
       "trtllm_mha needs topk 1", _sg_trtllm, _fix_trtllm, fails=True),
]  # fmt: skip


def _sg_block_verification(rule: FlagRule, st: State) -> None:
    if (
        st.v["block_verification"]
        and st.v["algorithm"] in ("EAGLE", "EAGLE3")
        and not st.v["rejection_sampling"]
    ):
        st.emit(
            rule,
            "--speculative-use-rejection-sampling",
            False,
            True,
            "--speculative-use-block-verification turns rejection sampling on for EAGLE/EAGLE3 (it needs sampled "
            "proposals and their full distributions): every rejection-sampling check below applies",
        )
        st.v["rejection_sampling"] = True


RULES += [
    rule("sglang.block_verification_rejection_sampling", ">=0.5.22", INFO,
       "sglang 0.5.22 srt/arg_groups/speculative_hook.py:161-181, 0.5.23 :175-193 (`if "
       "cfg.speculative_algorithm in ('EAGLE', 'EAGLE3') and not cfg.speculative_use_rejection_sampling: "
       "declare_resolution(..., speculative_use_rejection_sampling=True)`), read by the rejection-sampling checks "
       "through resolved_view (:1119 @0.5.22, :1210 @0.5.23)",
       "block verification turns rejection sampling on", _sg_block_verification),
]  # fmt: skip


def _sg_rejection_topk(rule: FlagRule, st: State) -> None:
    topk = st.v["topk"]
    if st.v["rejection_sampling"] and topk is not None and topk != 1:
        st.emit(
            rule,
            "--speculative-eagle-topk",
            topk,
            None,
            "--speculative-use-rejection-sampling requires --speculative-eagle-topk=1 (ValueError at startup)",
        )
        st.force_topk1.append("rejection sampling requires topk 1")


RULES += [
    rule("sglang.rejection_sampling_topk", ">=0.5.14", PROBLEM,
       f"{SG_HOOK}:1218-1224 ('--speculative-use-rejection-sampling requires --speculative-eagle-topk=1.')",
       "rejection sampling needs topk 1", _sg_rejection_topk, fix_triple, fails=True),
]  # fmt: skip


THRESHOLDS = ("accept_threshold_single", "accept_threshold_acc")


def _sg_rejection_thresholds(rule: FlagRule, st: State) -> None:
    if not st.v["rejection_sampling"]:
        return
    # the default of both is 1.0 (argparse type=float); parse_launch has checked each given value is a float
    set_ = [k for k in THRESHOLDS if st.v[k] is not None and float(st.v[k]) != 1.0]
    if not set_:
        return
    how = (
        "--speculative-use-rejection-sampling"
        if st.given["rejection_sampling"]
        else "rejection sampling (turned on by --speculative-use-block-verification)"
    )
    given = " and ".join(f"{SG_KEYS[k]} {st.v[k]}" for k in set_)
    st.emit(
        rule,
        SG_KEYS[set_[0]],
        st.given[set_[0]],
        None,
        f"{given} with {how}: ValueError '--speculative-use-rejection-sampling is incompatible with "
        "--speculative-accept-threshold-single / --speculative-accept-threshold-acc; rejection sampling ignores "
        "the accept thresholds.' at startup",
    )


def _fix_drop_thresholds(st: State, change: Change) -> FlagFix:
    edits = tuple(Edit(SG_KEYS[k], None, remove=True) for k in THRESHOLDS if st.cmd.has(SG_KEYS[k]))
    return FlagFix(
        change.rule,
        edits,
        f"drop {' and '.join(e.flag for e in edits)}: rejection sampling accepts by the draft and target "
        "probabilities, not by thresholds",
        "or keep the thresholds and drop --speculative-use-rejection-sampling / --speculative-use-block-verification",
    )


RULES += [
    rule("sglang.rejection_sampling_thresholds", ">=0.5.14", PROBLEM,
       "sglang 0.5.14 srt/arg_groups/speculative_hook.py:356-366, 0.5.18 :642-651, 0.5.22 :1134-1143, 0.5.23 "
       ":1231-1240 (`if "
       "cfg.speculative_accept_threshold_single != 1.0 or cfg.speculative_accept_threshold_acc != 1.0: raise "
       "ValueError('--speculative-use-rejection-sampling is incompatible with ...')`)",
       "rejection sampling refuses accept thresholds", _sg_rejection_thresholds, _fix_drop_thresholds, fails=True),
]  # fmt: skip


def _sg_chain(user_set: bool) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        steps, topk, ndt = st.v["num_steps"], st.v["topk"], st.v["num_draft_tokens"]
        if topk != 1 or steps is None or ndt == steps + 1:
            return
        if user_set != (ndt is not None and ndt == st.given["num_draft_tokens"]):
            return
        if user_set:
            msg = (
                f"with --speculative-eagle-topk 1 SGLang sets num_draft_tokens := num_steps + 1 = {steps + 1} "
                f"(logged once as 'speculative_num_draft_tokens is adjusted to speculative_num_steps + 1 when "
                f"speculative_eagle_topk == 1'): each step verifies {steps + 1} tokens ({steps} drafts), not "
                f"{ndt}"
            )
        else:
            msg = f"topk 1: num_draft_tokens := num_steps + 1 = {steps + 1}"
        st.emit(rule, "--speculative-num-draft-tokens", st.given["num_draft_tokens"], steps + 1, msg)
        st.v["num_draft_tokens"] = steps + 1

    return apply


RULES += [
    rule("sglang.chain_rule", ">=0.4.6", PROBLEM,
       f"{SG_HOOK}:1255-1266 _handle_eagle_family; {SG_SA} (from 0.4.6; absent in 0.4.5)",
       "topk 1 forces num_draft_tokens = num_steps + 1", _sg_chain(True), fix_triple),
    rule("sglang.chain_rule_fill", ">=0.4.6", INFO,
       f"{SG_HOOK}:1255-1266 _handle_eagle_family; {SG_SA}",
       "topk 1 sets num_draft_tokens = num_steps + 1", _sg_chain(False)),
]  # fmt: skip


def _sg_page_tree_backend(allowed: tuple[str, ...], backend_known: bool) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        topk, page, backend = st.v["topk"], st.v["page_size"], st.v["attention_backend"]
        if topk is None or page is None or not (topk > 1 and page > 1):
            return
        if backend_known != (backend is not None) or backend in allowed:
            return
        if backend_known:
            msg = f"topk {topk} with page size {page} needs --attention-backend in {allowed}: ValueError at startup"
        else:
            msg = (
                f"topk {topk} with page size {page} works only if the auto-selected attention backend is one of "
                f"{allowed}; otherwise ValueError at startup"
            )
        st.emit(rule, "--attention-backend", backend, None, msg)
        if backend_known:
            st.force_topk1.append(f"page size {page} with {backend} needs topk 1")
        else:
            st.gpu_dependent.append(rule.name)

    return apply


RULES += [
    rule("sglang.page_size_tree_backend", ">=0.5.2,<0.5.6", PROBLEM,
       "sglang 0.5.2-0.5.5 server_args.py ('This combination is only supported for the 'flashinfer' backend.')",
       "topk > 1 with page size > 1 needs flashinfer", _sg_page_tree_backend(("flashinfer",), True), fix_triple,
       fails=True),
    rule("sglang.page_size_tree_backend", ">=0.5.6,<0.5.13", PROBLEM,
       "sglang 0.5.6-0.5.12 server_args.py (`attention_backend not in ['flashinfer', 'fa3']`)",
       "topk > 1 with page size > 1 needs flashinfer/fa3", _sg_page_tree_backend(("flashinfer", "fa3"), True),
       fix_triple, fails=True),
    rule("sglang.page_size_tree_backend", ">=0.5.13", PROBLEM,
       f"{SG_HOOK}:1268-1283 (_PAGE_TREE_SPEC_BACKENDS = ('flashinfer', 'fa3', 'triton'))",
       "topk > 1 with page size > 1 needs flashinfer/fa3/triton",
       _sg_page_tree_backend(("flashinfer", "fa3", "triton"), True), fix_triple, fails=True),
    rule("sglang.page_size_tree_backend_auto", ">=0.5.2", WARNING,
       f"{SG_HOOK}:1268-1283; sglang 0.5.2-0.5.12 server_args.py",
       "topk > 1 with page size > 1 depends on the auto-selected backend",
       _sg_page_tree_backend(("flashinfer", "fa3", "triton"), False)),
]  # fmt: skip


def _sg_ndt_unset_tree(rule: FlagRule, st: State) -> None:
    steps, topk, ndt = st.v["num_steps"], st.v["topk"], st.v["num_draft_tokens"]
    if steps is not None and topk is not None and topk >= 1 and ndt is None:
        why = "topk > 1" if topk > 1 else "topk 1 in a version without the num_steps + 1 rule"
        st.emit(
            rule,
            "--speculative-num-draft-tokens",
            None,
            None,
            f"{why} without --speculative-num-draft-tokens: nothing sets it and the draft tree cannot be built "
            "(inferred: fails on first use)",
        )


RULES += [
    rule("sglang.num_draft_tokens_unset", ">=0.4.5", PROBLEM,
       f"{SG_HOOK}:1159-1266 (num_draft_tokens is only set by the auto choice or the topk-1 rule; inferred)",
       "topk set, num_draft_tokens never set", _sg_ndt_unset_tree, fix_triple, fails=True, stage="runtime"),
]  # fmt: skip


def _sg_nothing_proposed(rule: FlagRule, st: State) -> None:
    steps, topk, ndt = st.v["num_steps"], st.v["topk"], st.v["num_draft_tokens"]
    if steps is not None and steps < 1:
        flag, value, why = "--speculative-num-steps", steps, "num_steps < 1 drafts nothing"
    elif topk is not None and topk < 1:
        flag, value, why = (
            "--speculative-eagle-topk",
            topk,
            "topk < 1 selects no draft token (torch.topk k < 1)",
        )
    elif ndt is not None and ndt < 2:
        flag, value, why = (
            "--speculative-num-draft-tokens",
            ndt,
            "num_draft_tokens - 1 < 1 drafts are verified",
        )
    else:
        return
    st.emit(rule, flag, value, value, f"{why}: speculation only costs time (no startup check; inferred)")


RULES += [
    rule("sglang.nothing_proposed", ">=0.4.5", PROBLEM,
       "sglang 0.5.23 speculative/eagle_utils.py:110 torch.topk(score_list, num_draft_token - 1); no startup check "
       "in speculative_hook.py (inferred)",
       "sizes that propose no draft token", _sg_nothing_proposed, fix_triple),
]  # fmt: skip


def _sg_tree_pool(rule: FlagRule, st: State) -> None:
    steps, topk, ndt = st.v["num_steps"], st.v["topk"], st.v["num_draft_tokens"]
    if None in (steps, topk, ndt) or topk < 1 or steps < 1 or ndt < 2:
        return
    pool = tree_pool(steps, topk)
    if ndt - 1 > pool:
        st.emit(
            rule,
            "--speculative-num-draft-tokens",
            ndt,
            None,
            f"num_draft_tokens - 1 = {ndt - 1} > the {pool} candidates a depth-{steps}, top-{topk} tree holds "
            f"(topk + (num_steps-1)*topk^2): torch.topk(score_list, {ndt - 1}) raises on the first decode; "
            "there is no startup check (inferred)",
        )


RULES += [
    rule("sglang.tree_pool_too_small", ">=0.4.5", PROBLEM,
       "sglang 0.5.23 speculative/eagle_utils.py:100-110 organize_draft_results (pool topk + (num_steps-1)*topk^2, "
       "torch.topk(score_list, num_draft_token - 1)); 0.4.5-0.4.10 build_eagle_tree.py; no check in "
       "speculative_hook.py (inferred)",
       "more draft tokens than tree candidates", _sg_tree_pool, fix_triple, fails=True, stage="runtime"),
]  # fmt: skip
