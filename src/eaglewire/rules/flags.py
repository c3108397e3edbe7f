"""One rule and the state rules share. A `FlagRule` is one row: name, engine, version range, severity, source,
and `apply` (condition and effect on the lint state) with the `fix` it proposes. `State` is what the rules of one
lint read and change, in the order the engine applies them."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from packaging.version import Version

from eaglewire.rules.gpus import GPUS, UNKNOWN, GpuProfile
from eaglewire.rules.launch import PROBLEM, Change, FlagFix, LaunchCommand
from eaglewire.rules.ledger import ledger
from eaglewire.rules.row import Row


@dataclass(frozen=True)
class ReadWhen(Row):
    """An argument (an SGLang flag or a vLLM speculative-config key; a name ending in '-' or '_' is a prefix) and
    when the engine reads it: the record behind both engines' "accepted and never used" rules."""

    engine: str
    name: str
    versions: str
    reads: Callable[[State], bool]
    when: str  # in words, for the message ("never: ..." when no code reads it)
    source: str

    def unread(self, st: State) -> bool:
        """The release accepts the argument and, in this launch, nothing reads it."""
        return self.covers(st.version) and not self.reads(st)

    def message(self, given: str, engine: str, version: Version, here: str) -> str:
        """`here`: the launch's setting that leaves it unread, e.g. "with method 'ngram'"."""
        if self.when.startswith("never"):
            what = f"{given} is accepted and never used by {engine} {version} ({self.when.removeprefix('never: ')})"
        else:
            what = f"{given} is read only {self.when}; {here} {engine} accepts it and never uses it"
        return f"{what} ({self.source})"


@dataclass(frozen=True)
class FlagRule(Row):
    """One engine rule, in one version range. `apply` reads and updates the lint state; `fix` proposes flags."""

    name: str
    engine: str
    versions: str  # PEP 440 specifier set, e.g. ">=0.4.6"; "" = every encoded version
    severity: str
    citation: str
    summary: str
    apply: Callable[[FlagRule, State], None] = field(repr=False, compare=False)
    fix: Callable[[State, Change], FlagFix | None] | None = field(default=None, repr=False, compare=False)
    fails_startup: bool = False
    # The algorithm families the row applies to (SGLang: "eagle" = EAGLE/EAGLE3/STANDALONE, "ngram", "other");
    # "*" = every family. vLLM rows read the method themselves.
    families: tuple[str, ...] = ("*",)
    # Where a failing row fails: "args" (the engine's argument code raises), "load" (loading the drafter), or
    # "runtime" (the first decode; inferred). The engine oracle compares the "args" verdicts.
    stage: str = "args"
    # what the row's facts were read from per release: the argument code ("flags"), or the engine's generated
    # model registry ("registry": a per-release list, e.g. SGLang's NextN targets)
    read_as: str = "flags"
    # the records of the release's own code, executed, that showed the row ("model-code: ..."), or of a running
    # engine; None: read at source only (rules.row.Row.level)
    observed: str | None = None
    # runs whatever the speculative settings (a halted lint included): argparse reads every flag before anything
    always: bool = False

    def applies_to(self, family: str) -> bool:
        return "*" in self.families or family in self.families

    @property
    def source(self) -> str:
        """The citation, under the name every `Row` uses."""
        return self.citation

    @property
    def checked(self) -> tuple[str, ...]:
        """The versions whose source was read and that this row covers."""
        return tuple(v for v in ledger(self.engine).read(self.read_as) if self.covers(Version(v)))


@dataclass
class State:
    cmd: LaunchCommand
    version: Version
    target_arch: str | None
    text_arch: str | None
    drafter_kind: str | None
    drafter_source: str | None
    drafter: dict | None
    given: dict[str, Any]
    v: dict[str, Any]  # current (effective) values
    changes: list[Change] = field(default_factory=list)
    fix_for: dict[int, Callable[[State, Change], FlagFix | None]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)
    fails: bool = False
    halted: bool = False
    force_topk1: list[str] = field(default_factory=list)  # why a fix must use topk 1
    auto: tuple[int, int, int] | None = None  # the auto choice for this target and version
    spec_intended: dict = field(default_factory=dict)  # vLLM: the config the user meant (legacy/short merged)
    gpu: GpuProfile = field(default_factory=lambda: GPUS[UNKNOWN])
    gpu_dependent: list[str] = field(default_factory=list)  # rules that could not decide without the GPU
    target_config: dict | None = None  # the target's config.json when local
    family: str = "eagle"  # the algorithm family the SGLang rows of this lint apply to
    failing: dict[str, str] = field(default_factory=dict)  # failing rule -> stage

    def emit(self, rule: FlagRule, flag: str, given: Any, effective: Any, message: str) -> Change:
        change = Change(
            flag, given, effective, rule.name, rule.severity, rule.citation, message, rule.versions
        )
        self.changes.append(change)
        if rule.fails_startup:
            self.fails = True
            self.failing.setdefault(rule.name, rule.stage)
        if rule.fix is not None and rule.severity == PROBLEM:
            self.fix_for[len(self.changes) - 1] = rule.fix
        return change

    def env_true(self, name: str, default: bool) -> bool:
        value = self.cmd.env.get(name)
        return default if value is None else value.strip().lower() in ("1", "true", "yes", "on")


Apply = Callable[[FlagRule, State], None]
MakeFix = Callable[[State, Change], FlagFix | None]


def row(
    engine: str,
    name: str,
    versions: str,
    severity: str,
    citation: str,
    summary: str,
    apply: Apply,
    fix: MakeFix | None = None,
    fails: bool = False,
    families: tuple[str, ...] | None = None,
    stage: str = "args",
    read_as: str = "flags",
    observed: str | None = None,
    always: bool = False,
) -> FlagRule:
    """One table row (positional, so the rows read as a table). SGLang rows default to the EAGLE family."""
    if families is None:
        families = ("eagle",) if engine == "sglang" else ("*",)
    return FlagRule(
        name,
        engine,
        versions,
        severity,
        citation,
        summary,
        apply,
        fix,
        fails,
        families,
        stage,
        read_as,
        observed,
        always,
    )
