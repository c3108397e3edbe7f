"""SGLang's algorithms beyond EAGLE/EAGLE3: which handler resolves each one, STANDALONE's and NGRAM's own rules,
and `--speculative-adaptive` (which sets num_steps/topk/num_draft_tokens itself).

Read in sglang 0.5.23 (`srt/arg_groups/speculative_hook.py`, `srt/speculative/spec_info.py`,
`srt/speculative/adaptive_spec_params.py`) and checked against that code by `make test-engines`. Older versions
keep the rows they had; a new family row for them needs their source read first (CONTRIBUTING.md).
"""

from __future__ import annotations

import functools
import json
from pathlib import Path

from eaglewire.engines.sglang.args import SG_HOOK, SG_KEYS, SGLANG, SGLANG_FAMILIES, TRIPLE
from eaglewire.rules.flags import FlagRule, State, row
from eaglewire.rules.launch import PROBLEM, WARNING, Change, Edit, FlagFix

rule = functools.partial(row, SGLANG)
SPEC_INFO = "sglang 0.5.23 srt/speculative/spec_info.py"
ADAPTIVE = "sglang 0.5.23 srt/speculative/adaptive_spec_params.py"
# adaptive_spec_params.py:29-54 DEFAULT_ADAPTIVE_CONFIG; resolve_candidate_steps_from_config = the sorted union.
DEFAULT_CANDIDATE_STEPS = (0, 1, 3, 5, 7)


def attn_dp(st: State) -> bool:
    """Attention data parallelism on: --attn-dp-size > 1, or the deprecated --dp-size N --enable-dp-attention
    (sglang 0.5.23 srt/arg_groups/parallel_hook.py:39-61; runtime_context.py:191-199 attn_dp_enabled_of)."""
    v = st.v
    attn = v.get("attn_dp_size") or 1
    if v.get("enable_dp_attention") and attn == 1:
        attn = v.get("dp_size") or 1
    return attn > 1


# ---- algorithm families -----------------------------------------------------------------------------------------


def _sg_family(rule: FlagRule, st: State) -> None:
    algorithm = st.v["algorithm"]
    family = SGLANG_FAMILIES.get(algorithm.upper())
    if family is None:
        st.emit(
            rule, "--speculative-algorithm", algorithm, None,
            f"unknown speculative algorithm {algorithm!r}: SpeculativeAlgorithm.from_string raises ValueError "
            f"'Unknown speculative algorithm name' at startup (builtins: {', '.join(SGLANG_FAMILIES)})",
        )  # fmt: skip
        st.halted = True
        return
    if family == "other":
        st.notes.append(
            f"{algorithm}: eaglewire replays the EAGLE/EAGLE3/STANDALONE and NGRAM handlers only; the sizes shown "
            f"are as given (run `lint --engine-code` for {algorithm}'s own resolution)"
        )


def _fix_unknown_algorithm(st: State, change: Change) -> FlagFix:
    edit = Edit("--speculative-algorithm", "EAGLE3")
    return FlagFix(change.rule, (edit,), f"{edit.render()} (or another builtin)", mechanical=False)


ALGORITHM_RULES = [
    rule("sglang.algorithm_family", ">=0.5.12", PROBLEM,
       f"{SPEC_INFO}:32-66 from_string (unknown names raise ValueError), 235-266 handle_server_args (EAGLE/EAGLE3/"
       f"STANDALONE -> _handle_eagle_family, NGRAM -> _handle_ngram); {SG_HOOK}:248-283",
       "the algorithm picks the handler; unknown names fail", _sg_family, _fix_unknown_algorithm, fails=True,
       families=("*",)),
]  # fmt: skip


# ---- --speculative-adaptive (resolved before the family handler) -----------------------------------------------


def _sg_adaptive_off(rule: FlagRule, st: State) -> None:
    if not st.v["adaptive"]:
        return
    algorithm, topk = st.v["algorithm"], st.v["topk"]
    if algorithm not in ("EAGLE", "EAGLE3"):
        why = f"speculative_algorithm={algorithm} (only EAGLE/EAGLE3 are supported)"
    elif topk is not None and topk != 1:
        why = f"speculative_eagle_topk={topk} (only topk=1 is supported)"
    elif attn_dp(st):
        why = "attention DP is not supported"
    else:
        return
    st.emit(rule, "--speculative-adaptive", True, False,
            f"adaptive speculation is disabled ({why}): static speculative settings are used")  # fmt: skip
    st.v["adaptive"] = False


def _candidate_steps(st: State) -> tuple[tuple[int, ...] | None, str]:
    path = st.v.get("adaptive_config")
    if path is None:
        return DEFAULT_CANDIDATE_STEPS, "the default adaptive config"
    try:
        data = json.loads(Path(path).expanduser().read_text())
        steps = sorted(
            {int(s) for key, e in data.items() if str(key).isdigit() for s in e["candidate_steps"]}
        )
    except (OSError, ValueError, KeyError, TypeError, AttributeError):
        return None, f"{path} (not readable here)"
    return tuple(steps), str(path)


def _sg_adaptive_params(rule: FlagRule, st: State) -> None:
    if not st.v["adaptive"]:
        return
    steps, source = _candidate_steps(st)
    if st.v["topk"] is None:
        st.emit(rule, "--speculative-eagle-topk", None, 1, "adaptive speculation sets topk 1")
        st.v["topk"] = 1
    if steps is None:
        st.notes.append(f"adaptive candidate steps unknown ({source}): num_steps not checked")
        return
    n = st.v["num_steps"]
    if n is None:
        n = steps[len(steps) // 2]
        st.emit(rule, "--speculative-num-steps", None, n,
                f"adaptive speculation starts at num_steps {n}, the middle of the candidate steps {list(steps)} "
                f"({source}), and changes it at runtime")  # fmt: skip
        st.v["num_steps"] = n
    ndt = st.v["num_draft_tokens"]
    if ndt != n + 1:
        st.emit(rule, "--speculative-num-draft-tokens", st.given["num_draft_tokens"], n + 1,
                f"adaptive speculation sets num_draft_tokens := num_steps + 1 = {n + 1}")  # fmt: skip
        st.v["num_draft_tokens"] = n + 1


def _sg_adaptive_steps(rule: FlagRule, st: State) -> None:
    steps, _ = _candidate_steps(st)
    n = st.v["num_steps"]
    if st.v["adaptive"] and steps is not None and n not in steps:
        st.emit(rule, "--speculative-num-steps", n, None,
                f"--speculative-num-steps={n} is not in the adaptive candidate_steps {list(steps)}: ValueError at "
                "startup")  # fmt: skip
        st.force_topk1.append("adaptive speculation needs topk 1")


def _fix_adaptive_steps(st: State, change: Change) -> FlagFix:
    steps, _ = _candidate_steps(st)
    n = max(s for s in steps or DEFAULT_CANDIDATE_STEPS if s >= 1)
    given = st.v["num_steps"] or 0
    n = min((s for s in steps or () if s >= given), default=n)
    edits = tuple(Edit(SG_KEYS[k], str(v)) for k, v in zip(TRIPLE, (n, 1, n + 1), strict=True))
    return FlagFix(change.rule, edits, f"a num_steps among the adaptive candidates ({n})")


ADAPTIVE_RULES = [
    rule("sglang.adaptive_disabled", ">=0.5.23", WARNING,
       f"{SG_HOOK}:257-260, 1374-1389 _maybe_disable_adaptive; {ADAPTIVE}:57-99 adaptive_unsupported_reason",
       "adaptive is turned off for other algorithms, topk > 1, attention DP", _sg_adaptive_off, families=("*",)),
    rule("sglang.adaptive_params", ">=0.5.23", WARNING,
       f"{SG_HOOK}:1392-1427 _init_adaptive_speculative_params; {ADAPTIVE}:29-54, 142-150 candidate steps",
       "adaptive sets topk 1, num_steps from the candidates, num_draft_tokens = num_steps + 1",
       _sg_adaptive_params, families=("*",)),
    rule("sglang.adaptive_steps", ">=0.5.23", PROBLEM,
       f"{SG_HOOK}:1416-1421 ('--speculative-num-steps=... is not in the adaptive config candidate_steps')",
       "num_steps outside the adaptive candidates: ValueError", _sg_adaptive_steps, _fix_adaptive_steps,
       fails=True, families=("*",)),
]  # fmt: skip


# ---- STANDALONE ---------------------------------------------------------------------------------------------------


def _sg_standalone_dp(rule: FlagRule, st: State) -> None:
    if st.v["algorithm"] == "STANDALONE" and attn_dp(st):
        st.emit(rule, "--enable-dp-attention", True, None,
                "standalone speculative decoding does not support dp attention: ValueError at startup")  # fmt: skip


def _fix_drop_dp(st: State, change: Change) -> FlagFix:
    edits = tuple(Edit(f, remove=True) for f in ("--enable-dp-attention", "--attn-dp-size") if st.cmd.has(f))
    return FlagFix(change.rule, edits, "run without attention DP (or use EAGLE3 with an EAGLE-3 drafter)")


STANDALONE_RULES = [
    rule("sglang.standalone_dp_attention", ">=0.5.23", PROBLEM,
       f"{SG_HOOK}:1078-1084 _handle_eagle_family", "STANDALONE refuses attention DP", _sg_standalone_dp,
       _fix_drop_dp, fails=True),
]  # fmt: skip


def _sg_standalone_auto(rule: FlagRule, st: State) -> None:
    if st.v["algorithm"] != "STANDALONE" or st.v["adaptive"] or any(st.v[k] is not None for k in TRIPLE):
        return
    for key, value in zip(TRIPLE, (3, 1, 4), strict=True):
        st.emit(rule, SG_KEYS[key], None, value,
                "all three sizes unset: STANDALONE auto-chooses (num_steps, topk, num_draft_tokens) = (3, 1, 4) "
                "whatever the target")  # fmt: skip
        st.v[key] = value


STANDALONE_AUTO_RULES = [
    rule("sglang.auto_choice_standalone", ">=0.5.23", WARNING,
       f"{SG_HOOK}:1430-1437 _auto_choose_speculative_params (`if speculative_algorithm == 'STANDALONE': return "
       "(3, 1, 4)`)",
       "STANDALONE's auto choice", _sg_standalone_auto),
]  # fmt: skip


# ---- NGRAM (_handle_ngram) ---------------------------------------------------------------------------------------


def _sg_ngram_topk(rule: FlagRule, st: State) -> None:
    breadth = st.v.get("ngram_bfs") or 10  # fields/spec.py:256-259 default 10
    topk = st.given["topk"]
    if topk is not None and topk != breadth:
        st.emit(
            rule,
            "--speculative-eagle-topk",
            topk,
            breadth,
            f"NGRAM ignores --speculative-eagle-topk: topk := --speculative-ngram-max-bfs-breadth = {breadth}",
        )
    st.v["topk"] = breadth


def _sg_ngram_defaults(rule: FlagRule, st: State) -> None:
    if st.v["num_draft_tokens"] is None:
        st.emit(rule, "--speculative-num-draft-tokens", None, 12,
                "NGRAM sets num_draft_tokens to 12 by default (logged as a warning)")  # fmt: skip
        st.v["num_draft_tokens"] = 12
    if st.v["num_steps"] is None:
        steps = st.v["num_draft_tokens"] // st.v["topk"]
        st.emit(rule, "--speculative-num-steps", None, steps,
                f"NGRAM sets num_steps := num_draft_tokens // topk = {steps}")  # fmt: skip
        st.v["num_steps"] = steps
    st.v["enable_mixed_chunk"] = False


def _fix_ngram_topk(st: State, change: Change) -> FlagFix:
    edits = (Edit("--speculative-eagle-topk", remove=True),
             Edit("--speculative-ngram-max-bfs-breadth", str(change.given)))  # fmt: skip
    return FlagFix(change.rule, edits, "NGRAM's branching is --speculative-ngram-max-bfs-breadth")


def _sg_ngram_page(rule: FlagRule, st: State) -> None:
    topk, page, backend = st.v["topk"], st.v["page_size"], st.v["attention_backend"]
    if not (topk > 1 and page is not None and page > 1) or backend == "flashinfer":
        return
    if backend is None:
        st.gpu_dependent.append(rule.name)
        st.notes.append(f"NGRAM with page size {page} starts only if the attention backend is flashinfer "
                        "(it depends on the GPU: pass --gpu)")  # fmt: skip
        return
    st.emit(rule, "--page-size", page, None,
            f"NGRAM topk {topk} > 1 with page size {page} > 1 is only supported on flashinfer (attention backend "
            f"{backend}): ValueError at startup")  # fmt: skip


def _sg_ngram_dp(rule: FlagRule, st: State) -> None:
    if attn_dp(st):
        st.emit(rule, "--enable-dp-attention", True, None,
                "ngram speculative decoding does not support dp attention: ValueError at startup")  # fmt: skip


NGRAM_RULES = [
    rule("sglang.ngram_topk", ">=0.5.23", PROBLEM,
       f"{SG_HOOK}:1306-1311 _handle_ngram (topk := speculative_ngram_max_bfs_breadth); fields/spec.py:256-259",
       "NGRAM ignores --speculative-eagle-topk", _sg_ngram_topk, _fix_ngram_topk, families=("ngram",)),
    rule("sglang.ngram_defaults", ">=0.5.23", WARNING,
       f"{SG_HOOK}:1312-1327 _handle_ngram (num_draft_tokens 12, num_steps := num_draft_tokens // topk)",
       "NGRAM's default sizes", _sg_ngram_defaults, families=("ngram",)),
    rule("sglang.ngram_page_size", ">=0.5.23", PROBLEM,
       f"{SG_HOOK}:1357-1366 _handle_ngram ('This combination is only supported for the 'flashinfer' backend.')",
       "NGRAM trees with page size > 1 need flashinfer", _sg_ngram_page,
       lambda st, c: FlagFix(c.rule, (Edit("--page-size", "1"),), "--page-size 1 (or --attention-backend "
                             "flashinfer)"), fails=True, families=("ngram",)),
    rule("sglang.ngram_dp_attention", ">=0.5.23", PROBLEM,
       f"{SG_HOOK}:1367-1371 _handle_ngram", "NGRAM refuses attention DP", _sg_ngram_dp, _fix_drop_dp,
       fails=True, families=("ngram",)),
]  # fmt: skip
