"""Launch flags: parse a SGLang or vLLM launch command, replay the engine's own adjustment rules, and advise.

Why this exists: both engines rewrite speculative-decoding flags at startup, with at most a log line. With
`--speculative-eagle-topk 1` SGLang sets num_draft_tokens := num_steps + 1, so the Kimi-K2.5 launch
`--speculative-num-steps 1 --speculative-eagle-topk 1 --speculative-num-draft-tokens 16` verified 2 tokens per
step while its authors believed 16, and speculation ran slower than none. `lint` replays those rules and returns
the effective settings, every silent change (flag, value given, value used, rule, source, severity) and a fixed
command that lints clean.

The rules are data: one `FlagRule` per rule and engine version range, written beside the function that applies
it (`sglang.py`, `sglang_sizes.py`, `vllm.py`), in the order the engine applies them, each citing the file it was
read from. A new engine version is a new row (or a new upper bound), not a new if-branch (CONTRIBUTING.md).
Rules marked "inferred" describe what the code does without a startup check (e.g. `torch.topk` raising on the
first decode); they were read, not run.

Layout: `values.py` (what lint returns), `parse.py` (argv), `versions.py`, `gpus.py` (the GPU as an input),
`context.py` (target and drafter configs on disk), `rule.py` (a rule and the lint state), the engine rule modules
(SGLang: `sglang.py`, `sglang_sizes.py`, `sglang_families.py` for STANDALONE/NGRAM/adaptive, `sglang_backends.py`
for the per-GPU attention backend and page size, `sglang_draft.py` for the draft model's own settings and arguments
no code reads; vLLM: `vllm.py`, `vllm_config.py`, `vllm_methods.py` for mtp, ngram, suffix, draft_model,
`vllm_draft.py` likewise), `lint.py` (the engine). Every speculative argument of every release read is enumerated
from the wheels (`arg_scan.py`, `scripts/speculative_args.py`, `engine_args/*.json`, `scanned.py`) and classified
in `arguments.py` (honoured, adjusted, ignored, refused; the rows that report it). `make test-engines` checks the rows against the engines' own
code (docs/engine-oracle.md); `lint --engine-code` does it for one command (`eaglewire.enginecode`).
"""

from eaglewire.flags.lint import RULES, lint, rules_for
from eaglewire.flags.parse import parse_launch
from eaglewire.flags.rule import FlagRule
from eaglewire.flags.values import (
    INFO,
    PROBLEM,
    SEVERITIES,
    WARNING,
    Change,
    Edit,
    FlagFix,
    LaunchCommand,
    LintReport,
    Option,
    Settings,
)
from eaglewire.flags.versions import (
    CHECKED,
    ENGINES,
    NEWEST,
    OLDEST,
    SGLANG,
    SGLANG_CHECKED,
    VLLM,
    VLLM_CHECKED,
)

__all__ = [
    "CHECKED", "ENGINES", "INFO", "NEWEST", "OLDEST", "PROBLEM", "RULES", "SEVERITIES", "SGLANG",
    "SGLANG_CHECKED", "VLLM", "VLLM_CHECKED", "WARNING", "Change", "Edit", "FlagFix", "FlagRule",
    "LaunchCommand", "LintReport", "Option", "Settings", "lint", "parse_launch", "rules_for",
]  # fmt: skip
