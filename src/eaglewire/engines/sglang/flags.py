"""SGLang's speculative-flag rules, each function beside its table row(s), in the order SGLang applies them:
algorithm and drafter, scheduler, then the three sizes (`sglang_sizes.py`), then the token map and adaptive mode.

Sources: the sglang wheels 0.4.5-0.5.23 from PyPI, unzipped and read (`versions.SGLANG_CHECKED`); each row cites
file and lines. To add a release: add rows (or move an upper bound) and a scenario test in tests/test_flags.py
(CONTRIBUTING.md).
"""

from __future__ import annotations

import functools
import json
from collections.abc import Callable

from packaging.specifiers import SpecifierSet
from packaging.version import Version

from eaglewire.engines.sglang import backends as sglang_backends
from eaglewire.engines.sglang import draft as sglang_draft
from eaglewire.engines.sglang import families as sglang_families
from eaglewire.engines.sglang import graphs as sglang_graphs
from eaglewire.engines.sglang import sizes as sglang_sizes
from eaglewire.engines.sglang.args import SG_HOOK, SG_KEYS, SG_SA, SGLANG, SGLANG_ALGORITHMS
from eaglewire.engines.sglang.sizes import fix_algorithm, fix_draft_path, fix_no_algorithm, fix_triple
from eaglewire.rules import engine_data, parsers
from eaglewire.rules.flags import FlagRule, State, row
from eaglewire.rules.launch import INFO, PROBLEM, WARNING, Change, Edit, FlagFix

rule = functools.partial(row, SGLANG)
# argparse first (speculative flags the release does not define, prefixes of flags; the other flags its parser
# refuses: last, so an earlier row that knows a flag's history speaks for it); then the attention backend and page size, resolved
# before the speculative hook, for every command.
PARSED_FIRST, PARSED_LAST = parsers.rows(SGLANG)
RULES: list[FlagRule] = [*sglang_draft.RELEASE_RULES, *PARSED_FIRST, *sglang_backends.RULES]


# Llama-4 targets: ServerArgs asserts that the attention backend is one Llama-4's attention runs on, for every launch
# (speculative or not). Until 0.5.5.post3 the assert runs before any default is picked (check_server_args; then
# model_specific_adjustments, ahead of model_runner's default up to 0.5.2 and of
# _handle_attention_backend_compatibility's from 0.5.3; 0.5.4.post1-0.5.5.post3 set their sm100 trtllm_mha default
# only after the assert): without --attention-backend it sees None and fails on every GPU. From 0.5.6 the default
# (trtllm_mha on sm100, fa3 on sm90, triton elsewhere: backends.ARCH_DEFAULTS) comes first and always passes; only a
# given backend outside the set fails.
# One entry per release run: (versions, the backends it accepts, its message; "{}" = the backend it got).
LLAMA4_ASSERTS = (
    (">=0.4.9.post4,<0.5.1", ("fa3",), "fa3 is required for Llama4 model"),
    (">=0.5.1,<0.5.2", ("fa3", "aiter"), "fa3 or aiter is required for Llama4 model"),
    (">=0.5.2,<0.5.4.post1", ("fa3", "aiter", "triton"), "fa3, aiter, or triton is required for Llama4 model"),
    (">=0.5.4.post1,<0.5.5.post1", ("fa3", "aiter", "triton", "trtllm_mha"),
     "fa3, aiter, triton, or trtllm_mha is required for Llama4 model"),
    (">=0.5.5.post1,<0.5.5.post3", ("fa3", "aiter", "triton", "trtllm_mha", "intel_xpu"),
     "fa3, aiter, triton, trtllm_mha or intel_xpu is required for Llama4 model"),
    (">=0.5.5.post3,<0.5.10", ("fa3", "aiter", "triton", "trtllm_mha", "intel_xpu"),
     "fa3, aiter, triton, trtllm_mha or intel_xpu is required for Llama4 model but got {}"),
    (">=0.5.10", ("fa3", "aiter", "triton", "ascend", "trtllm_mha", "intel_xpu"),
     "fa3, aiter, triton, ascend, trtllm_mha or intel_xpu is required for Llama4 model but got {}"),
)  # fmt: skip
LLAMA4_DEFAULT_FIRST = Version("0.5.6")  # the default backend is picked before the assert
LLAMA4_CPU_EXEMPT = Version("0.5.3")  # `and self.device != "cpu"`
LLAMA4_ARCH_LIST = Version("0.5.11")  # `model_arch in LLAMA4_MODEL_ARCHS`; before, `"Llama4" in model_arch`
LLAMA4_SRC_BEFORE = (
    "sglang server_args.py check_server_args (entrypoints/engine.py _launch_subprocesses) :1808-1809 @0.4.9.post4, "
    ":1859-1860 @0.4.9.post5, :1936-1937 @0.4.10.post2; model_specific_adjustments (__post_init__, before "
    "model_runner.py:414 picks the default @0.5.1) :2165-2166 @0.5.0rc2, :2278-2282 @0.5.1, :2493-2498 @0.5.2; "
    "_handle_model_specific_adjustments (before _handle_attention_backend_compatibility's default, :1057 "
    "@0.5.4.post1) :786-791 @0.5.3, :964-969 @0.5.4, :951-962 @0.5.4.post1 (the sm100 trtllm_mha default after the "
    "assert), :999-1010 @0.5.5, :1011-1018 @0.5.5.post1, :1027-1038 @0.5.5.post3"
)
LLAMA4_SRC_AFTER = (
    "sglang server_args.py :1125-1147 @0.5.6 (`if self.attention_backend is None` picks trtllm_mha/fa3/triton, then "
    "the assert), :1178-1200 @0.5.6.post2, :1835-1858 @0.5.10 (ascend added), :2044-2067 @0.5.11, :4014-4037 @0.5.14, "
    ":4109-4122 @0.5.15 and :5646-5659 @0.5.18 (resolved_view; the default in arg_groups/overrides.py), "
    "arg_groups/model_hook.py:456-469 @0.5.19, :616-630 @0.5.23 (default: model_overrides/llama4.py:16-37)"
)


def _llama4_assert(st: State) -> tuple[tuple[str, ...], str]:
    return next(
        (allowed, message)
        for versions, allowed, message in LLAMA4_ASSERTS
        if SpecifierSet(versions).contains(st.version, prereleases=True)
    )


def _sg_llama4_backend(rule: FlagRule, st: State) -> None:
    arch = st.target_arch or ""
    if not (arch in sglang_backends.LLAMA4 if st.version >= LLAMA4_ARCH_LIST else "Llama4" in arch):
        return
    if st.version >= LLAMA4_CPU_EXEMPT and st.cmd.get("--device") == "cpu":
        return
    allowed, message = _llama4_assert(st)
    given = st.given["attention_backend"]
    if given in allowed or (given is None and st.version >= LLAMA4_DEFAULT_FIRST):
        return
    if given is None:
        split = [SG_KEYS[k] for k in ("prefill_attention_backend", "decode_attention_backend") if st.given[k]]
        why = "no --attention-backend: SGLang asserts the backend before it picks a default, so the assert sees None"
        if split:
            why += f" ({' and '.join(split)} do not count)"
    else:
        why = (
            f"--attention-backend {given} is not one this release accepts for Llama-4 ({', '.join(allowed)})"
        )
    st.emit(rule, "--attention-backend", given, None,
            f"{arch} target: {why}: AssertionError '{message.format(given)}' at startup, on every GPU")  # fmt: skip


def _fix_llama4_backend(st: State, change: Change) -> FlagFix:
    allowed, _ = _llama4_assert(st)
    topk = st.v["topk"]
    if st.gpu.sm100 and "trtllm_mha" in allowed and (topk is None or topk <= 1):
        backend, why = "trtllm_mha", f"SGLang's own Llama-4 choice on {st.gpu.key} (sm100) from 0.5.6"
    elif st.gpu.known and not st.gpu.hopper and "triton" in allowed:
        backend, why = "triton", f"a backend Llama-4 accepts that runs on {st.gpu.key}"
    elif "triton" in allowed:
        backend, why = "fa3", "SGLang's own Llama-4 choice on Hopper (sm90); triton on other GPUs"
    else:
        backend = "fa3"
        why = (
            f"the only CUDA backend sglang {st.version} accepts for Llama-4 (SGLang's choice on Hopper; triton "
            "from 0.5.2)"
        )
    edit = Edit("--attention-backend", backend)
    return FlagFix(change.rule, (edit,), f"{edit.render()}: {why}")


RULES += [
    rule("sglang.llama4_attention_backend", ">=0.4.9.post4,<0.5.6", PROBLEM, LLAMA4_SRC_BEFORE,
       "Llama-4 asserts the attention backend before any default: --attention-backend is required",
       _sg_llama4_backend, _fix_llama4_backend, fails=True, families=("*",)),
    rule("sglang.llama4_attention_backend", ">=0.5.6", PROBLEM, LLAMA4_SRC_AFTER,
       "Llama-4 refuses a given attention backend it does not run on", _sg_llama4_backend, _fix_llama4_backend,
       fails=True, families=("*",)),
]  # fmt: skip


# Targets whose own checkpoint carries the MTP draft layer: SGLang defaults the draft path to the target path
# (and logs "DeepSeek MTP does not require setting speculative_draft_model_path." when one is given). The list of
# each release is its own `model_arch` list, read from the wheel (data/registry.json "nextn"); one row per run of
# releases with the same list.
def _mtp_targets() -> tuple[tuple[str, frozenset[str]], ...]:
    data = json.loads(engine_data(SGLANG, "registry.json").read_text())["releases"]
    runs: list[tuple[str, frozenset[str]]] = []
    for version in sorted(data, key=Version):
        archs = frozenset(data[version]["nextn"]["architectures"])
        if not runs or runs[-1][1] != archs:
            runs.append((version, archs))
    return tuple(
        (f">={start}" + (f",<{runs[n + 1][0]}" if n + 1 < len(runs) else ""), archs)
        for n, (start, archs) in enumerate(runs)
        if archs
    )


MTP_TARGETS: tuple[tuple[str, frozenset[str]], ...] = _mtp_targets()
MTP_NO_WARNING = frozenset({"MistralLarge3ForCausalLM", "PixtralForConditionalGeneration"})


def _sg_no_algorithm(rule: FlagRule, st: State) -> None:
    if st.family == "none":  # no speculative flag at all: only the backend rows above apply
        st.halted = True
        return
    if st.v["algorithm"] is None:
        spec_flags = sorted({o.flag for o in st.cmd.options if o.flag.startswith("--speculative-")})
        st.emit(
            rule,
            "--speculative-algorithm",
            None,
            None,
            f"{', '.join(spec_flags)} set but --speculative-algorithm is not: SGLang runs without speculation "
            "and ignores them",
        )
        st.halted = True


RULES += [
    rule("sglang.no_algorithm", "", PROBLEM,
       f"{SG_HOOK}:121-284 handle_speculative_decoding (every EAGLE step needs `speculative_algorithm is not "
       f"None`); {SG_SA}",
       "speculative flags without --speculative-algorithm are ignored", _sg_no_algorithm, fix_no_algorithm,
       families=("*",)),
]  # fmt: skip


def _sg_algorithm_case(upper_case: bool) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        algorithm = st.v["algorithm"]
        if algorithm == algorithm.upper():
            return
        if upper_case:
            msg = f"SGLang upper-cases the algorithm: {algorithm} is {algorithm.upper()}"
        else:
            msg = (
                f"--speculative-algorithm accepts only upper-case choices ({', '.join(SGLANG_ALGORITHMS)}) "
                f"in this version: {algorithm!r} is rejected by argparse at startup"
            )
        st.emit(rule, "--speculative-algorithm", algorithm, algorithm.upper() if upper_case else None, msg)
        st.v["algorithm"] = algorithm.upper()

    return apply


RULES += [
    rule("sglang.algorithm_choices", ">=0.4.5,<0.5.12", PROBLEM,
       "sglang 0.4.5-0.5.11 server_args.py add_cli_args: --speculative-algorithm "
       "choices=[EAGLE, EAGLE3, NEXTN, ...]",
       "lower-case algorithm names are rejected", _sg_algorithm_case(False),
       lambda st, c: fix_algorithm(str(c.given).upper())(st, c), fails=True, families=("*",)),
    rule("sglang.algorithm_upper", ">=0.5.12", INFO,
       f"sglang 0.5.12 server_args.py _handle_speculative_decoding; {SG_HOOK}:136-143",
       "the algorithm is upper-cased", _sg_algorithm_case(True), families=("*",)),
]  # fmt: skip


def _sg_nextn(rule: FlagRule, st: State) -> None:
    if st.v["algorithm"] == "NEXTN":
        st.emit(
            rule,
            "--speculative-algorithm",
            "NEXTN",
            "EAGLE",
            "NEXTN is an alias of EAGLE (MTP / EAGLE-1/2 drafters); EAGLE-3 drafters need EAGLE3",
        )
        st.v["algorithm"] = "EAGLE"


RULES += [
    rule("sglang.nextn_alias", ">=0.4.5", INFO,
       f"{SG_HOOK}:109-115 _resolve_speculative_algorithm_alias; {SG_SA}",
       "NEXTN is EAGLE", _sg_nextn, families=("*",)),
    *sglang_families.ALGORITHM_RULES,
    *sglang_families.ADAPTIVE_RULES,
    *sglang_families.STANDALONE_RULES,
]  # fmt: skip


def _sg_eagle_with_eagle3(rule: FlagRule, st: State) -> None:
    if st.v["algorithm"] == "EAGLE" and st.drafter_kind == "eagle3":
        st.emit(
            rule,
            "--speculative-algorithm",
            st.given["algorithm"],
            "EAGLE",
            f"the drafter ({st.drafter_source}) is EAGLE-3, but EAGLE does not capture the target's aux hidden "
            "states: its fc is silently skipped (the input is already hidden_size wide) and the accept length "
            "falls to ~1.0, with no warning",
        )


RULES += [
    rule("sglang.eagle_with_eagle3_drafter", ">=0.4.5", PROBLEM,
       "sglang 0.5.23 srt/model_executor/model_runner_components/spec_aux_hidden_state.py:140-196 (aux hidden "
       "states only for is_eagle3) and srt/models/llama_eagle3.py:238-247 (`if hidden_states.shape[-1] != "
       "embeds.shape[-1]: ... self.fc(...)`); same fc guard in 0.4.5/0.5.1/0.5.10; sgl-project/sglang#21272",
       "EAGLE with an EAGLE-3 drafter skips fc: accept length ~1.0", _sg_eagle_with_eagle3,
       fix_algorithm("EAGLE3")),
]  # fmt: skip


def _sg_max_running(logged: str) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        if st.v["max_running_requests"] is None:
            st.emit(
                rule,
                "--max-running-requests",
                None,
                48,
                f"max running requests is reset to 48 for speculative decoding ({logged}); throughput "
                "benchmarks above 48 concurrent requests queue: set --max-running-requests explicitly",
            )
            st.v["max_running_requests"] = 48

    return apply


RULES += [
    rule("sglang.max_running_requests", ">=0.4.5,<0.5.4", WARNING,
       f"{SG_SA}: `if self.max_running_requests is None: self.max_running_requests = 48`",
       "max running requests 48", _sg_max_running("no log line in this version"), families=("eagle", "ngram")),
    rule("sglang.max_running_requests", ">=0.5.4", WARNING,
       f"{SG_HOOK}:1086-1095 _handle_eagle_family; sglang 0.5.4-0.5.12 server_args.py "
       "_handle_speculative_decoding",
       "max running requests 48", _sg_max_running("logged once as a warning"), families=("eagle", "ngram")),
]  # fmt: skip


def _attn_dp_workers(st: State) -> int:
    """How many attention-DP workers share --max-running-requests (1 when attention DP is off)."""
    v = st.v
    attn = v.get("attn_dp_size") or 1
    if v.get("enable_dp_attention") and attn == 1:
        attn = v.get("dp_size") or 1
    return int(attn)


def _sg_per_dp_worker(round_up: bool) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        workers, total = _attn_dp_workers(st), st.v["max_running_requests"]
        if workers <= 1 or total is None:
            return
        quotient = total // workers
        per, extra = quotient, ""
        if quotient < 1:
            per = 1 if round_up else 0
            extra = (
                "; SGLang rounds that up to 1"
                if round_up
                else "; startup stops at `max_running_request is zero`"
            )
        where = "the speculative default" if st.given.get("max_running_requests") is None else "as given"
        st.emit(
            rule,
            "--max-running-requests",
            total,
            per,
            f"--max-running-requests {total} ({where}) is the total over the {workers} attention-DP workers: "
            f"each runs at most {total} // {workers} = {quotient} concurrent requests (sglang#20063){extra}; "
            f"for N per worker pass --max-running-requests N*{workers}",
        )
        if per < 1:
            st.fails = True
            st.failing.setdefault(rule.name, "load")  # the worker asserts it, after argument checks

    return apply


RULES += [
    rule("sglang.max_running_per_dp_worker", ">=0.4.5,<0.5.23", WARNING,
       "sglang 0.4.5-0.5.13 managers/tp_worker.py (`server_args.max_running_requests // (server_args.dp_size if "
       "server_args.enable_dp_attention else 1)`, assert > 0); 0.5.14-0.5.22 model_runner_kv_cache_mixin.py / "
       "mem_cache/kv_cache_configurator.py _resolve_max_num_reqs (`requested_per_worker = max_num_reqs // "
       "attn_dp_size`); sgl-project/sglang#20063, #34290 (open: derive the default from the CUDA-graph ladder)",
       "max running requests divided across attention-DP workers", _sg_per_dp_worker(round_up=False),
       families=("eagle", "ngram")),
    rule("sglang.max_running_per_dp_worker", ">=0.5.23", WARNING,
       "sglang 0.5.23 mem_cache/kv_cache_configurator.py:3128 (`max(1, max_num_reqs // self.attn_dp_size)`), "
       "model_executor/pool_configurator.py:956; sgl-project/sglang#20063, #34290 (open)",
       "max running requests divided across attention-DP workers", _sg_per_dp_worker(round_up=True),
       families=("eagle", "ngram")),
]  # fmt: skip


def _sg_overlap_always_off(rule: FlagRule, st: State) -> None:
    if not st.v["disable_overlap_schedule"]:
        st.emit(
            rule,
            "--disable-overlap-schedule",
            False,
            True,
            "the overlap scheduler is disabled for EAGLE speculative decoding in this version",
        )
        st.v["disable_overlap_schedule"] = True


RULES += [
    rule("sglang.overlap_schedule", ">=0.4.5,<0.5.3.post2", INFO,
       f"{SG_SA}: `self.disable_overlap_schedule = True` for EAGLE/EAGLE3",
       "overlap scheduler off", _sg_overlap_always_off),
]  # fmt: skip


def _sg_overlap_opt_in(algorithms: tuple[str, ...], switch: str) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        if st.v["disable_overlap_schedule"]:
            return
        on = st.v["beta_spec"] if switch.startswith("--") else st.env_true(switch, False)
        if on and st.v["algorithm"] in algorithms:
            return
        how = (
            f"{switch} with {'/'.join(algorithms)}"
            if switch.startswith("--")
            else f"{switch}=1 with {'/'.join(algorithms)}"
        )
        st.emit(
            rule,
            "--disable-overlap-schedule",
            False,
            True,
            f"the overlap scheduler is disabled: spec v2 is opt-in in this version ({how})",
        )
        st.v["disable_overlap_schedule"] = True

    return apply


def _sg_overlap_forced_on(algorithms: tuple[str, ...]) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        if not (st.given["disable_overlap_schedule"] and st.env_true("SGLANG_ENABLE_SPEC_V2", False)):
            return
        if st.v["algorithm"] not in algorithms:
            return
        st.emit(
            rule,
            "--disable-overlap-schedule",
            True,
            False,
            f"SGLANG_ENABLE_SPEC_V2=1 with {'/'.join(algorithms)} turns the overlap scheduler back on whatever "
            "--disable-overlap-schedule says ('Spec v2 is enabled for eagle/eagle3 speculative decoding and overlap "
            "schedule is turned on.'): the v2 worker runs",
        )
        st.v["disable_overlap_schedule"] = False

    return apply


RULES += [
    rule("sglang.overlap_schedule_forced_on", ">=0.5.4.post1,<0.5.7", WARNING,
       "sglang server_args.py:1434-1438 @0.5.4.post1, :1745-1749 @0.5.6.post2 (`self.disable_overlap_schedule = "
       "False` when speculative_algorithm == 'EAGLE' and SGLANG_ENABLE_SPEC_V2)",
       "SGLANG_ENABLE_SPEC_V2 overrides --disable-overlap-schedule", _sg_overlap_forced_on(("EAGLE",))),
    rule("sglang.overlap_schedule_forced_on", ">=0.5.7,<0.5.11", WARNING,
       "sglang server_args.py:2000-2007 @0.5.7, :2999-3006 @0.5.10 (`self.disable_overlap_schedule = False` for "
       "EAGLE/EAGLE3 with SGLANG_ENABLE_SPEC_V2, a warning)",
       "SGLANG_ENABLE_SPEC_V2 overrides --disable-overlap-schedule", _sg_overlap_forced_on(("EAGLE", "EAGLE3"))),
]  # fmt: skip


RULES += [
    # --enable-beta-spec exists in 0.5.3.post2, 0.5.3.post3 and 0.5.4 only; 0.5.4.post1 reads SGLANG_ENABLE_SPEC_V2
    rule("sglang.overlap_schedule", ">=0.5.3.post2,<0.5.4.post1", INFO,
       "sglang 0.5.3.post2 server_args.py:1179-1189 (`if not self.enable_beta_spec`: off; EAGLE3/STANDALONE keep "
       "the scheduler with the opt-in, and scheduler.py:671 then runs EAGLEWorkerV2), 0.5.4 "
       "_handle_speculative_decoding (enable_beta_spec)",
       "overlap scheduler off unless --enable-beta-spec",
       _sg_overlap_opt_in(("EAGLE", "EAGLE3", "STANDALONE"), "--enable-beta-spec")),
    rule("sglang.overlap_schedule", ">=0.5.4.post1,<0.5.7", INFO,
       "sglang 0.5.4.post1 server_args.py:1434-1447 (`if not SGLANG_ENABLE_SPEC_V2`: off; EAGLE3/STANDALONE keep "
       "the scheduler with the opt-in, and scheduler.py:564 then runs EAGLEWorkerV2), :1745-1758 @0.5.6.post2; "
       "environ.py SGLANG_ENABLE_SPEC_V2 = EnvBool(False)",
       "overlap scheduler off unless SGLANG_ENABLE_SPEC_V2",
       _sg_overlap_opt_in(("EAGLE", "EAGLE3", "STANDALONE"), "SGLANG_ENABLE_SPEC_V2")),
    rule("sglang.overlap_schedule", ">=0.5.7,<0.5.11", INFO,
       "sglang 0.5.7-0.5.10 server_args.py _handle_speculative_decoding; environ.py SGLANG_ENABLE_SPEC_V2 = "
       "EnvBool(False)",
       "overlap scheduler off unless SGLANG_ENABLE_SPEC_V2",
       _sg_overlap_opt_in(("EAGLE", "EAGLE3"), "SGLANG_ENABLE_SPEC_V2")),
]  # fmt: skip


def _sg_spec_v2_topk(rule: FlagRule, st: State) -> None:
    topk = st.given["topk"]
    if (
        st.env_true("SGLANG_ENABLE_SPEC_V2", False)
        and st.v["algorithm"] in ("EAGLE", "EAGLE3")
        and topk
        and topk > 1
    ):
        st.emit(
            rule,
            "--speculative-eagle-topk",
            topk,
            None,
            "SGLANG_ENABLE_SPEC_V2 supports only topk 1 in this version: ValueError at startup",
        )
        st.force_topk1.append("spec v2 supports only topk 1")


RULES += [
    rule("sglang.spec_v2_topk", ">=0.5.7,<0.5.11", PROBLEM,
       "sglang 0.5.7-0.5.10 server_args.py: 'Spec v2 currently only supports topk = 1 for speculative "
       "decoding.'",
       "spec v2 needs topk 1", _sg_spec_v2_topk, fix_triple, fails=True),
]  # fmt: skip


def _sg_overlap_v1_fallback(rule: FlagRule, st: State) -> None:
    if st.v["disable_overlap_schedule"]:
        return
    topk = st.given["topk"]
    if topk is not None and topk > 1:
        why = "spec v2 supports only topk 1, so spec v1 runs without the overlap scheduler"
    elif not st.env_true("SGLANG_ENABLE_SPEC_V2", True):
        why = "SGLANG_ENABLE_SPEC_V2=False selects spec v1, without the overlap scheduler"
    else:
        return
    st.emit(rule, "--disable-overlap-schedule", False, True, why)
    st.v["disable_overlap_schedule"] = True


RULES += [
    rule("sglang.overlap_schedule", ">=0.5.11,<0.5.13", INFO,
       "sglang 0.5.11-0.5.12 server_args.py _handle_speculative_decoding (spec_v1_reason); environ.py "
       "SGLANG_ENABLE_SPEC_V2 = EnvBool(True)",
       "topk > 1 falls back to spec v1 without overlap", _sg_overlap_v1_fallback),
]  # fmt: skip


def _sg_overlap_env_off(rule: FlagRule, st: State) -> None:
    if not st.v["disable_overlap_schedule"] and not st.env_true("SGLANG_ENABLE_SPEC_V2", True):
        st.emit(
            rule,
            "--disable-overlap-schedule",
            False,
            True,
            "SGLANG_ENABLE_SPEC_V2=False selects the non-overlap (synchronous) spec v2 path",
        )
        st.v["disable_overlap_schedule"] = True


RULES += [
    rule("sglang.overlap_schedule", ">=0.5.13,<0.5.14", INFO,
       "sglang 0.5.13 srt/arg_groups/speculative_hook.py _handle_eagle_family",
       "SGLANG_ENABLE_SPEC_V2=False: non-overlap spec v2", _sg_overlap_env_off),
]  # fmt: skip


def _sg_mixed_chunk(rule: FlagRule, st: State) -> None:
    if st.v["enable_mixed_chunk"]:
        st.emit(
            rule,
            "--enable-mixed-chunk",
            True,
            False,
            "mixed chunked prefill is disabled for EAGLE speculative decoding in this version",
        )
        st.v["enable_mixed_chunk"] = False


RULES += [
    rule("sglang.mixed_chunk_disabled", ">=0.4.7,<0.5.19", INFO,
       f"{SG_SA}; sglang 0.5.13-0.5.18 speculative_hook.py _handle_eagle_family ('Mixed chunked prefill is "
       "disabled because of using eagle speculative decoding.'); from 0.5.19 only for algorithms without "
       "supports_mixed_chunk() (EAGLE/EAGLE3 keep it: speculative/spec_info.py)",
       "--enable-mixed-chunk is turned off", _sg_mixed_chunk),
]  # fmt: skip


def _sg_mtp_draft(archs: frozenset[str]) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        arch = st.target_arch
        if arch not in archs:
            return
        draft = st.v["draft_model"]
        if draft is None:
            st.emit(
                rule,
                "--speculative-draft-model-path",
                None,
                st.cmd.model,
                f"{arch} target: SGLang takes the draft from the target checkpoint (its MTP layer)",
            )
            st.v["draft_model"] = st.cmd.model
        elif arch not in MTP_NO_WARNING:
            st.emit(
                rule,
                "--speculative-draft-model-path",
                draft,
                draft,
                "SGLang logs 'DeepSeek MTP does not require setting speculative_draft_model_path.': harmless "
                "for a separate EAGLE-3 drafter, which is still used",
            )

    return apply


RULES += [
    *(
        rule("sglang.mtp_draft_path", versions, INFO,
           f"{SG_HOOK}:1120-1157 _handle_eagle_family (model_arch list); {SG_SA} (list per version)",
           "MTP targets default the draft path to the target", _sg_mtp_draft(archs), read_as="registry")
        for versions, archs in MTP_TARGETS
    ),
]  # fmt: skip


def _sg_draft_missing(known_target: bool) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        eagle3 = st.v["algorithm"] == "EAGLE3"
        # EAGLE3 needs its own drafter even where SGLang defaults the path to an MTP target's own checkpoint.
        if (st.given["draft_model"] if eagle3 else st.v["draft_model"]) is not None:
            return
        if known_target != (eagle3 or st.target_arch is not None):
            return
        what = (
            "EAGLE3 needs an EAGLE-3 drafter (an MTP target's own checkpoint is not one)"
            if eagle3
            else f"{st.target_arch or 'this target'} has no built-in MTP draft"
        )
        st.emit(
            rule,
            "--speculative-draft-model-path",
            None,
            None,
            f"no --speculative-draft-model-path: {what}; SGLang then loads the target's own checkpoint as the "
            "draft (the path falls back to --model-path) and fails at load or warm-up (sglang#36528: AttributeError)"
            + ("" if known_target else " (unless the target is an MTP model: pass its architecture)"),
        )

    return apply


RULES += [
    rule("sglang.draft_model_missing", ">=0.4.5", PROBLEM,
       f"{SG_HOOK}:1120-1157 (only MTP targets get a default draft path); speculative/eagle_worker_v2.py loads "
       "speculative_draft_model_path; configs/model_config.py:203 @0.5.3, :956 @0.5.23 (`model_path or "
       "server_args.model_path`: the target's checkpoint), managers/tp_worker.py:468-475 @0.5.23; sglang#36528",
       "no drafter", _sg_draft_missing(True), fix_draft_path, fails=True, stage="load"),
    rule("sglang.draft_model_missing_unknown_target", ">=0.4.5", WARNING,
       f"{SG_HOOK}:1120-1157", "no drafter, target unknown", _sg_draft_missing(False)),
]  # fmt: skip


# The sizes: num_steps, topk, num_draft_tokens (their rules run here, in SGLang's order).
RULES += sglang_sizes.RULES


# Spec v2 before SGLang refused a tree there (0.5.7: `sglang.spec_v2_topk`): with SGLANG_ENABLE_SPEC_V2=1, 0.5.4.post1-
# 0.5.6.post2 run the overlap scheduler's EAGLEWorkerV2 (EAGLE always, EAGLE3 unless --disable-overlap-schedule) and
# check no topk, given or auto-chosen. That worker handles a chain only: the scheduler reads each request's accepted
# tokens as the first accept-length tokens of a num_draft_tokens-wide stride (the chain's layout), and a tree's accepted
# path is moved to the front only from 0.5.13 (eagle_worker_v2.py:1300-1305 _finalize_accept_tree_path @0.5.13). Until
# 0.5.5.post3 the verify also returns the target's tokens for num_steps + 1 positions per request while the draft extend
# takes num_draft_tokens hidden states: a size mismatch on the first decode (sglang#13352, #14077) unless the two agree.
SPEC_V2_TREE_SRC = (
    "sglang server_args.py:1434-1447 @0.5.4.post1, :1556-1569 @0.5.5.post3 (no topk check with SGLANG_ENABLE_SPEC_V2); "
    "managers/scheduler.py:564 @0.5.4.post1 (`EAGLEWorkerV2 if self.enable_overlap`); speculative/eagle_info_v2.py:252 "
    "@0.5.4.post1, :278 @0.5.5.post3 (`predict`: bs * (spec_steps + 1)), eagle_worker_v2.py:435-456 @0.5.4.post1, "
    ":470-492 @0.5.5.post3 (_draft_extend_for_decode: num_draft_tokens per request), models/llama_eagle3.py:87 "
    "@0.5.4.post1 (`torch.cat([embeds, hidden_states])`); managers/scheduler_output_processor_mixin.py:242-245 "
    "@0.5.4.post1 (chain layout); sglang#13352, #14077 (its traceback lines eagle_worker_v2.py:511/:628 are "
    "0.5.5.post3's)"
)
SPEC_V2_TREE_SRC_0_5_6 = (
    "sglang server_args.py:1684-1697 @0.5.6, :1745-1758 @0.5.6.post2 (no topk check with SGLANG_ENABLE_SPEC_V2); "
    "speculative/spec_info.py:264-269 @0.5.6.post2 (overlap: EAGLEWorkerV2); eagle_info_v2.py:288-289 @0.5.6 "
    "(`predict` now num_draft_tokens per request); managers/scheduler_output_processor_mixin.py:272-277 @0.5.6 "
    "(`next_token_ids[i * stride : i * stride + accept_lens[i]]`: the chain layout); tree paths compacted from "
    "0.5.13 (eagle_worker_v2.py:1300-1305); refused from 0.5.7 ('Spec v2 currently only supports topk = 1')"
)


def _sg_spec_v2_tree(size_check: bool) -> Callable[[FlagRule, State], None]:
    def apply(rule: FlagRule, st: State) -> None:
        topk, steps, ndt = st.v["topk"], st.v["num_steps"], st.v["num_draft_tokens"]
        if st.v["algorithm"] not in ("EAGLE", "EAGLE3") or topk is None or topk <= 1:
            return
        if not st.env_true("SGLANG_ENABLE_SPEC_V2", False) or st.v["disable_overlap_schedule"]:
            return
        given = st.given["topk"] is not None
        what = f"--speculative-eagle-topk {topk}" if given else f"the auto-chosen topk {topk}"
        head = (
            f"SGLANG_ENABLE_SPEC_V2=1 runs the overlap scheduler's spec v2 worker, and this release checks no topk: "
            f"{what} (a tree) reaches a worker that handles only a chain (SGLang refuses it from 0.5.7)"
        )
        if size_check and steps is not None and ndt is not None and ndt != steps + 1:
            tail = (
                f"the target's tokens come back for num_steps + 1 = {steps + 1} positions per request and the draft "
                f"extend takes num_draft_tokens = {ndt} hidden states: RuntimeError 'Sizes of tensors must match' in "
                "the draft model on the first decode (sglang#13352, #14077)"
            )
            st.fails = True
            st.failing.setdefault(rule.name, "runtime")
        else:
            tail = (
                "each request's accepted tokens are read as the first nodes of the flattened tree (a chain's "
                "layout; SGLang moves a tree's accepted path there only from 0.5.13): once the accepted path leaves "
                "them (typically two draft tokens accepted, or a branch other than the top one) the server returns "
                "wrong tokens, with no error"
            )
        st.emit(rule, "--speculative-eagle-topk", st.given["topk"], None, f"{head}: {tail}")
        st.force_topk1.append("spec v2 runs a chain (topk 1) in this version")

    return apply


def _fix_spec_v2_tree(st: State, change: Change) -> FlagFix:
    chain = fix_triple(st, change)
    keep = "or unset SGLANG_ENABLE_SPEC_V2 to keep the tree (spec v1 runs it, without the overlap scheduler)"
    if st.v["algorithm"] == "EAGLE3":
        keep += "; or --disable-overlap-schedule (EAGLE3 then runs spec v1)"
    return FlagFix(chain.rule, chain.edits, chain.description, keep)


RULES += [
    rule("sglang.spec_v2_tree", ">=0.5.4.post1,<0.5.6", PROBLEM, SPEC_V2_TREE_SRC,
       "SGLANG_ENABLE_SPEC_V2 with topk > 1: the chain-only v2 worker runs the tree (fails on the first decode, or "
       "returns wrong tokens)", _sg_spec_v2_tree(True), _fix_spec_v2_tree, stage="runtime"),
    rule("sglang.spec_v2_tree", ">=0.5.6,<0.5.7", PROBLEM, SPEC_V2_TREE_SRC_0_5_6,
       "SGLANG_ENABLE_SPEC_V2 with topk > 1: the chain-only v2 worker returns wrong tokens", _sg_spec_v2_tree(False),
       _fix_spec_v2_tree),
]  # fmt: skip
# NGRAM's own handler (_handle_ngram), instead of the EAGLE family's.
RULES += sglang_families.NGRAM_RULES


def _sg_token_map(rule: FlagRule, st: State) -> None:
    if st.v["algorithm"] == "EAGLE3" and st.v["token_map"] is not None:
        st.emit(
            rule,
            "--speculative-token-map",
            st.v["token_map"],
            None,
            "EAGLE3 drafters carry their own d2t vocabulary map: SGLang logs 'Speculative token map specified, "
            "but EAGLE3 models already have this. Ignoring the specified token map.'; remove the flag",
        )
        st.v["token_map"] = None


RULES += [
    rule("sglang.token_map_ignored", ">=0.4.5", WARNING,
       "sglang 0.5.23 speculative/eagle_worker_v2.py:323-333 init_token_map; 0.4.5-0.5.x "
       "speculative/eagle_worker.py",
       "EAGLE3 ignores --speculative-token-map", _sg_token_map),
]  # fmt: skip


def _sg_adaptive(rule: FlagRule, st: State) -> None:
    if st.v["adaptive"]:
        st.emit(
            rule,
            "--speculative-adaptive",
            True,
            True,
            "adaptive speculation changes num_steps at runtime (topk 1 only): the settings reported are the "
            "starting point, not what every step uses",
        )


RULES += [
    rule("sglang.adaptive", ">=0.5.11,<0.5.23", WARNING,
       f"{SG_HOOK}:1374-1427 (_init_adaptive_speculative_params); sglang 0.5.11 server_args.py",
       "adaptive steps", _sg_adaptive),
]  # fmt: skip


# The draft model's own settings (quantization, context length) and arguments no code reads for this algorithm.
RULES += sglang_draft.RULES
RULES += sglang_graphs.RULES

# argparse refuses the command: an ambiguous prefix, a flag the release's parser does not define
RULES += PARSED_LAST
