"""Each engine release's launch parser, as the release builds it (executed: tests/engines/options.py records every
option string and how many words it takes, `engines/<engine>/data/options.json`). `lint` parses a command the way
that parser does. Why it matters: argparse takes any unambiguous prefix of a flag (`allow_abbrev`, on in every
release recorded), so `--speculative-algo EAGLE3` turns speculation on and `--speculative-num-step 3` sets the
steps; a prefix two flags share, or a flag the release does not define, stops the launch at argparse.

A version between two releases recorded is answered by the newest recorded at or below it (`exact` False); a
version below them all has no parser here (the caller keeps its own reading)."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from functools import lru_cache

from packaging.version import InvalidVersion, Version

from eaglewire.rules import engine_data
from eaglewire.rules.flags import FlagRule, State, row
from eaglewire.rules.launch import INFO, PROBLEM, Change, Edit, FlagFix, Option

EXACT, ABBREVIATION, AMBIGUOUS, UNKNOWN = "exact", "abbreviation", "ambiguous", "unknown"
SWITCH, OPTIONAL, LIST, VALUE = "switch", "optional", "list", "value"


@dataclass(frozen=True)
class Resolution:
    """What the parser makes of one flag as written (the part before any `=`)."""

    how: str  # EXACT | ABBREVIATION | AMBIGUOUS | UNKNOWN
    flag: str  # the option string it resolves to (as written where it resolves to none)
    candidates: tuple[str, ...] = ()  # AMBIGUOUS: every option string it is a prefix of


@dataclass(frozen=True)
class Parser:
    engine: str
    release: str  # the release recorded that answers
    exact: bool  # the version asked is that release
    allow_abbrev: bool
    options: dict[str, str]  # option string -> SWITCH | OPTIONAL | LIST | VALUE

    def resolve(self, name: str) -> Resolution:
        """argparse's `_parse_optional` for a long option: the exact string, else the one option it is a prefix
        of; several is ambiguous, none is unrecognized."""
        if name in self.options:
            return Resolution(EXACT, name)
        if self.allow_abbrev and name.startswith("--"):
            found = tuple(o for o in self.options if o.startswith(name))
            if len(found) == 1:
                return Resolution(ABBREVIATION, found[0])
            if found:
                return Resolution(AMBIGUOUS, name, found)
        return Resolution(UNKNOWN, name)

    @property
    def label(self) -> str:
        return f"{self.engine} {self.release}'s launch parser, executed (data/options.json)"


@lru_cache(maxsize=4)
def _load(engine: str) -> dict | None:
    path = engine_data(engine, "options.json")
    return json.loads(path.read_text()) if path.is_file() else None


def recorded(engine: str) -> tuple[str, ...]:
    data = _load(engine)
    return tuple(data["releases"]) if data else ()


@lru_cache(maxsize=256)
def parser_for(engine: str, version: str | None) -> Parser | None:
    """The parser of the release that answers for `version` (None: the newest recorded)."""
    data = _load(engine)
    if not data:
        return None
    releases = list(data["releases"])
    try:
        Version(version or "0")
    except (
        InvalidVersion
    ):  # not a version ("latest"): lint refuses it, naming it; the parse goes on with the newest
        version = None
    if version is None:
        release = releases[-1]
    else:
        below = [r for r in releases if Version(r) <= Version(version)]
        if not below:
            return None
        release = below[-1]
    index = releases.index(release)
    options = {
        flag: kind
        for flag, spans in data["options"].items()
        for kind, first, last in spans
        if releases.index(first) <= index <= releases.index(last)
    }
    # no version: lint assumes the newest release (and says so), whose parser this is
    exact = version is None or Version(version) == Version(release)
    return Parser(engine, release, exact, data["releases"][release]["allow_abbrev"], options)


# ---- the lint rows that apply the parser (each engine's flags.py lists them) -------------------------------------


def _source(parser: Parser) -> str:
    return f"{parser.label}; CPython argparse _parse_optional (allow_abbrev)"


def _reported(st: State, given: str) -> bool:
    """A rule earlier in the order already reported this flag (e.g. a removed speculative flag, with its history)."""
    return any(c.flag == given for c in st.changes)


def _spans(engine: str, name: str) -> str:
    """The releases recorded in which `name` is a flag, or the prefix of one ("" where none)."""
    hits = [r for r in recorded(engine) if parser_for(engine, r).resolve(name).how in (EXACT, ABBREVIATION)]
    if not hits:
        return ""
    return hits[0] if len(hits) == 1 else f"{hits[0]}-{hits[-1]}"


def _written(engine: str, o: Option) -> str:
    """The flag as written, without its value (`=...`) or vLLM's dotted key (`.KEY`): what the parser resolves."""
    name = o.given_as.split("=")[0]
    return name.split(".")[0] if engine == "vllm" else name


def _each(st: State, how: str) -> list[tuple[str, Option]]:
    """(flag as written, its first option) for every flag the parser read as `how`, once each."""
    found: dict[str, Option] = {}
    for o in st.cmd.options:
        if o.resolution == how:
            found.setdefault(_written(st.cmd.engine, o), o)
    return list(found.items())


def apply_prefix(rule: FlagRule, st: State) -> None:
    """A prefix of one flag is that flag (said, so the reader sees which setting it is)."""
    for name, o in _each(st, ABBREVIATION):
        st.emit(rule, name, o.value, o.value,
                f"{name} is read as {o.candidates[0]}: argparse takes an unambiguous prefix of a flag "
                f"({_source(st.cmd.parser)})")  # fmt: skip


def _refused(how: str) -> Callable[[FlagRule, State], None]:
    """The launch stops at argparse: a prefix of several flags (AMBIGUOUS), or a flag the release's parser does not
    define (UNKNOWN); a flag an earlier row already reported is left to it."""

    def apply(rule: FlagRule, st: State) -> None:
        for name, o in _each(st, how):
            if not _reported(st, name):
                st.emit(rule, name, o.value, None, f"{_refusal(st, name, o)} ({_source(st.cmd.parser)})")

    return apply


def _refusal(st: State, name: str, o: Option) -> str:
    engine, release = st.cmd.engine, st.cmd.parser.release
    if o.resolution == AMBIGUOUS:
        meant = unique_elsewhere(engine, as_parsed(engine, name))
        then = f"; in {meant[1]} it meant {meant[0]}" if meant else ""
        return (f"{engine} {release}'s argparse exits at startup: ambiguous option: {name} could match "
                f"{', '.join(o.candidates)}{then}")  # fmt: skip
    elsewhere = _spans(engine, as_parsed(engine, name))
    known = f" (it is one in {engine} {elsewhere})" if elsewhere else ""
    return (f"{name} is not an argument of {engine} {release}{known}: argparse exits at startup with 'unrecognized "
            "arguments'")  # fmt: skip


def as_parsed(engine: str, name: str) -> str:
    """The flag as the parser sees it: vLLM's FlexibleArgumentParser turns underscores into dashes first (engines/
    parse.py reads every long flag through this)."""
    return "--" + name[2:].replace("_", "-") if engine == "vllm" and name.startswith("--") else name


@lru_cache(maxsize=256)
def unique_elsewhere(engine: str, name: str) -> tuple[str, str] | None:
    """(the flag, "<engine> <release>") of the newest release recorded where the prefix `name` is one flag."""
    for release in reversed(recorded(engine)):
        found = parser_for(engine, release).resolve(name)
        if found.how == ABBREVIATION:
            return found.flag, f"{engine} {release}"
    return None


def fix_ambiguous(st: State, change: Change) -> FlagFix | None:
    meant = unique_elsewhere(st.cmd.engine, as_parsed(st.cmd.engine, change.flag))
    if meant is None:
        return FlagFix(change.rule, (Edit(change.flag, remove=True),), f"write {change.flag} in full",
                       mechanical=False)  # fmt: skip
    # the option was parsed as the flag it meant (engines/parse.py): setting that flag rewrites it, in full
    flag = next(o.flag for o in st.cmd.options if _written(st.cmd.engine, o) == change.flag)
    return FlagFix(change.rule, (Edit(flag, change.given),),
                   f"write {meant[0]} in full (what {change.flag} meant in {meant[1]})")  # fmt: skip


def fix_unknown(st: State, change: Change) -> FlagFix:
    return FlagFix(change.rule, (Edit(change.flag, remove=True),), f"remove {change.flag}")


def rows(engine: str) -> tuple[list[FlagRule], list[FlagRule]]:
    """(the row that runs first: prefixes said; the rows that run last: the launch stops at argparse). Each holds
    for the releases recorded, and only where the command was parsed with a release's parser."""
    first = recorded(engine)[0] if recorded(engine) else "0"
    where = f"engines/{engine}/data/options.json (each release's launch parser, executed: tests/engines/options.py)"
    return (
        [row(engine, f"{engine}.flag_prefix", f">={first}", INFO, where,
             "a prefix of one flag is that flag (argparse allow_abbrev)", _when_parsed(apply_prefix),
             families=("*",), observed=f"model-code: {where}", always=True)],
        [row(engine, f"{engine}.flag_ambiguous", f">={first}", PROBLEM, where,
             "a prefix of several flags stops the launch", _when_parsed(_refused(AMBIGUOUS)), fix_ambiguous,
             fails=True, families=("*",), observed=f"model-code: {where}", always=True),
         row(engine, f"{engine}.flag_unknown", f">={first}", PROBLEM, where,
             "a flag the release's parser does not define stops the launch", _when_parsed(_refused(UNKNOWN)),
             fix_unknown, fails=True, families=("*",), observed=f"model-code: {where}", always=True)],
    )  # fmt: skip


def _when_parsed(apply: Callable[[FlagRule, State], None]) -> Callable[[FlagRule, State], None]:
    """Only a command parsed with a parser recorded for this very release (or the newest, assumed) is judged."""

    def run(rule: FlagRule, st: State) -> None:
        if st.cmd.parser is not None and st.cmd.parser.exact:
            apply(rule, st)

    return run
