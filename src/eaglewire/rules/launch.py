"""The values `lint` returns: the parsed command, settings, each silent change, fixes, the report."""

from __future__ import annotations

import json
import shlex
from dataclasses import asdict, dataclass, field
from typing import Any

from eaglewire.errors import EXIT_CODES, InputError

PROBLEM = "problem"  # changes what the user asked for, or fails at startup: lint exit code 1
WARNING = "warning"  # a silent change worth knowing (e.g. max running requests 48)
INFO = "info"
SEVERITIES = (PROBLEM, WARNING, INFO)


@dataclass(frozen=True)
class Option:
    """One flag occurrence in the command: its canonical name, how it was written, and where it sits in argv."""

    flag: str  # canonical spelling, e.g. "--speculative-draft-model-path" (vLLM: dashes, as vLLM normalizes)
    given_as: str  # as written, e.g. "--speculative-draft-model" or "--speculative_config"
    value: str | None  # None for a switch
    start: int  # index of the flag token in LaunchCommand.argv
    stop: int  # index after its last token
    inline: bool = False  # written as --flag=value
    key: str | None = None  # vLLM dotted form: --speculative-config.KEY VALUE
    # how the release's parser read it (rules/parsers.py: exact, abbreviation, ambiguous, unknown); None: no parser
    resolution: str | None = None
    candidates: tuple[str, ...] = ()  # a prefix: the option string it is (one), or every one it could be


@dataclass(frozen=True)
class LaunchCommand:
    """A parsed launch command. Values stay strings as written; `lint` interprets them per engine version."""

    engine: str  # "sglang" | "vllm"
    argv: tuple[str, ...]
    env: dict[str, str]  # leading VAR=value assignments (SGLANG_ENABLE_SPEC_V2=1 python -m ...)
    entry: tuple[str, ...]  # the program part, e.g. ("python", "-m", "sglang.launch_server")
    model: str | None  # target model path or id
    options: tuple[Option, ...]
    speculative_config: dict | None = None  # vLLM: the dict vLLM's parser ends up with (JSON and dotted keys)
    model_option: bool = False  # the model came from a flag, not a positional argument
    # the release's launch parser it was parsed with (rules.parsers.Parser; None: none recorded)
    parser: Any = field(default=None, compare=False)

    def get(self, flag: str) -> str | None:
        """The value of the last occurrence of `flag` (argparse semantics), or None."""
        found = [o for o in self.options if o.flag == flag and o.key is None]
        return found[-1].value if found else None

    def has(self, flag: str) -> bool:
        return any(o.flag == flag for o in self.options)

    def switch(self, flag: str) -> bool | None:
        """An argparse BooleanOptionalAction: True where `flag` is given last, False where its `--no-` form is,
        None where neither is."""
        off = "--no-" + flag.removeprefix("--")
        given = [o.flag for o in self.options if o.flag in (flag, off)]
        return given[-1] == flag if given else None

    def flags(self) -> list[str]:
        return [o.flag for o in self.options]


@dataclass(frozen=True)
class Settings:
    """Speculative settings, as given or as the engine uses them. vLLM rows carry the SGLang equivalent too."""

    algorithm: str | None = None
    num_steps: int | None = None
    topk: int | None = None
    num_draft_tokens: int | None = None  # SGLang: verify width, the root (last verified token) included
    proposed_drafts_per_verify: int | None = (
        None  # num_draft_tokens - 1 (SGLang); num_speculative_tokens (vLLM)
    )
    max_accept_length: int | None = None  # tokens per verify step at best, bonus token included
    num_speculative_tokens: int | None = None  # vLLM
    method: str | None = None  # vLLM
    draft_model: str | None = None
    max_running_requests: int | None = None  # SGLang
    draft_tensor_parallel_size: int | None = None  # vLLM


@dataclass(frozen=True)
class Change:
    """What the engine does to one flag (or config key), and why we know."""

    flag: str  # e.g. "--speculative-num-draft-tokens" or "--speculative-config.num_speculative_tokens"
    given: Any  # the value in the command (None: not given)
    effective: Any  # the value the engine uses (None: it does not start, or nothing is used)
    rule: str
    severity: str
    citation: str
    message: str
    versions: str = ""  # the engine versions the rule row covers (PEP 440 specifier set)


@dataclass(frozen=True)
class Edit:
    """Set (or remove) one flag, or one key of vLLM's --speculative-config."""

    flag: str
    value: Any = None
    key: str | None = None
    remove: bool = False

    def render(self) -> str:
        name = f"{self.flag}.{self.key}" if self.key else self.flag
        if self.remove:
            return f"(remove {name})"
        if self.value is None and self.key is None:  # a switch: the flag alone
            return name
        value = self.value if isinstance(self.value, str) else json.dumps(self.value)
        return f"{name} {shlex.quote(value)}"


@dataclass(frozen=True)
class FlagFix:
    """A concrete fix for one problem, as flags. `mechanical` is False when it needs a value only you know."""

    rule: str
    edits: tuple[Edit, ...]
    description: str
    alternative: str | None = None
    mechanical: bool = True

    @property
    def flags(self) -> str:
        return " ".join(e.render() for e in self.edits)


@dataclass
class LintReport:
    """Everything `lint` found. The library never prints: `cli.py` renders this."""

    engine: str
    version: str
    version_defaulted: bool  # no version given: the newest encoded version was assumed
    argv: list[str]
    target_arch: str | None
    drafter_kind: str | None  # "eagle3" | "eagle" | None (unknown)
    given: Settings
    effective: Settings
    changes: list[Change]
    fixes: list[FlagFix]
    fixed_argv: list[str] | None
    starts: bool  # False: a rule says the server fails at startup
    notes: list[str] = field(default_factory=list)
    rules_applied: list[str] = field(default_factory=list)  # the rows that cover this engine version
    failing: dict[str, str] = field(default_factory=dict)  # rule -> where it fails: args, load or runtime
    gpu: str = "unknown"  # the GPU profile the verdicts assume (rules/gpus.py)
    # GPU unknown: the verdict on each GPU generation, where the rules tell them apart
    gpu_dependent: list[str] = field(default_factory=list)
    engine_code: dict | None = (
        None  # `lint --engine-code`: the installed engine's own resolution (enginecode)
    )
    # what the verdict rests on: {"level": one of rules.row.LEVELS, "basis": words} (jobs.lint.lint_evidence)
    evidence: dict[str, str] = field(default_factory=dict)
    # a release newer than the newest read for flags: its rules are assumed, so no verdict but a problem decides
    unread: str | None = None

    @property
    def starts_args(self) -> bool:
        """The engine's argument code accepts the command (what `make test-engines` checks against it)."""
        return not any(stage == "args" for stage in self.failing.values())

    @property
    def has_problem(self) -> bool:
        return any(c.severity == PROBLEM for c in self.changes)

    @property
    def problems(self) -> list[Change]:
        return [c for c in self.changes if c.severity == PROBLEM]

    @property
    def warnings(self) -> list[Change]:
        return [c for c in self.changes if c.severity == WARNING]

    @property
    def verdict(self) -> str:
        """The lint verdict: a problem; unverified when whether the server starts depends on a GPU not given, or
        the release is newer than any read (unless the installed engine's own argument code agreed); ok."""
        if self.has_problem:
            return "problem"
        code = self.engine_code
        settled = code is not None and code.get("agrees") and not code.get("unavailable")
        if self.unread and not settled:
            return "unverified"
        return "unverified" if any("refused" in d for d in self.gpu_dependent) else "ok"

    @property
    def exit_code(self) -> int:
        return EXIT_CODES[self.verdict]

    @property
    def fixed_command(self) -> str | None:
        return shlex.join(self.fixed_argv) if self.fixed_argv is not None else None

    def to_dict(self) -> dict:
        out = asdict(self)
        for fix, data in zip(self.fixes, out["fixes"], strict=True):
            data["flags"] = fix.flags
        out["has_problem"] = self.has_problem
        out["verdict"] = self.verdict
        out["starts_args"] = self.starts_args
        out["fixed_command"] = self.fixed_command
        return out


@dataclass(frozen=True)
class FlagSpec:
    kind: str  # "str" | "int" | "float" | "switch" | "json"
    aliases: tuple[str, ...] = ()


def as_int(flag: str, value: Any) -> int:
    """argparse `type=int` semantics (and pydantic's lax int for JSON values); one-line error naming the flag."""
    if isinstance(value, bool) or value is None:
        raise InputError(f"{flag}: expected an integer, got {json.dumps(value)}")
    if isinstance(value, int):
        return value
    if isinstance(value, float) and value.is_integer():
        return int(value)
    try:
        return int(str(value).strip())
    except ValueError:
        raise InputError(f"{flag}: expected an integer, got {str(value)!r}") from None


def as_float(flag: str, value: Any) -> float:
    try:
        return float(value)
    except (TypeError, ValueError):
        raise InputError(f"{flag}: expected a number, got {value!r}") from None
