"""One row type for every fact about an engine release, and one matcher.

Every fact eaglewire holds about another framework (which taps a model file captures, how a launch flag is
adjusted, which checkpoint structure a loader chokes on, which metric counts drafts, when an argument is read) is a
row: a payload plus the same four conditions, here. `Row` is that shared part; each kind of fact is a dataclass that
inherits it (`rules.taps.Convention`, `rules.flags.FlagRule`, `rules.flags.ReadWhen`, `rules.structure.StructureRule`,
`rules.metrics.CounterRow`) and spells the fields the same way:

- `engine`: the framework the row is about ("sglang", "vllm", "trtllm", a trainer, or "*" for every engine);
- `versions`: a PEP 440 specifier set of the releases it covers ("" = every release);
- `platform` / `runner`: the platform ("cpu", "cuda") and model runner ("v0": vLLM's old engine, "v1", "mrv2") it holds on (None = any);
- `source`: where the fact was read or seen (file:line at a release, a PR, a record);
- `observed`: the record of a running engine or of the release's model code that showed it (None = read only).

`match(rows, spec)` is the one function that picks the rows an engine spec (engine, release, platform, runner) is
answered by; every kind of fact goes through it.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TypeVar

from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from eaglewire.errors import InputError

LEVELS = ("engine", "model-code", "read", "none")  # evidence, strongest first


class Row:
    """The part every fact row shares. Subclasses are dataclasses whose fields include `engine` and `versions`
    (and may include `platform`, `runner`, `source`, `observed`); the defaults below stand in where they do not."""

    engine: str
    versions: str
    platform: str | None = None
    runner: str | None = None
    source: str = ""
    observed: str | None = None

    def covers(self, version: Version | str | None) -> bool:
        """The row holds at `version` (None: any release)."""
        if version is None or not self.versions:
            return True
        return SpecifierSet(self.versions).contains(Version(str(version)), prereleases=True)

    def holds_on(self, platform: str | None = None, runner: str | None = None) -> bool:
        """The row's platform and runner conditions admit this launch (an unknown platform or runner admits all;
        a row on platform "*" holds on every one)."""
        return (platform is None or self.platform in (None, "*", platform)) and (
            runner is None or self.runner in (None, runner)
        )

    @property
    def level(self) -> str:
        """The evidence the row rests on: a running engine's or model code's record, else its source read."""
        if self.observed:
            return "model-code" if self.observed.startswith("model-code") else "engine"
        return "read" if self.source else "none"


@dataclass(frozen=True)
class Spec:
    """What a row is matched against: an engine, a release (None: any), the platform and runner (None: unknown)."""

    engine: str
    version: Version | None = None
    platform: str | None = None
    runner: str | None = None

    def __str__(self) -> str:
        return self.engine + (f"=={self.version}" if self.version else "")


R = TypeVar("R", bound=Row)


def match(rows: Iterable[R], spec: Spec) -> list[R]:
    """The rows that answer `spec`, in their order: same engine (or "*"), covering the release, holding on the
    platform and runner. The one matcher every kind of fact uses."""
    return [
        r
        for r in rows
        if r.engine in (spec.engine, "*")
        and r.covers(spec.version)
        and r.holds_on(spec.platform, spec.runner)
    ]


def parse_version(text: str, what: str) -> Version:
    """A release number as users write it (`0.5.23`, `v0.33.0`); one line naming `what` otherwise."""
    try:
        return Version(str(text).strip().lstrip("vV"))
    except InvalidVersion:
        raise InputError(f"{what} {text!r} is not a version number (e.g. 0.5.23)") from None
