"""The speculative arguments each engine release defines, as read from its wheel by `scripts/speculative_args.py`
(`engine_args/<engine>.json`, committed with the releases it came from). Lint reads facts from here that used to
be written by hand: which `--speculative-config` keys a vLLM release accepts, which SGLang flags are switches.

A version between two releases read is answered by the newest release read at or below it; a version above the
newest by the newest (the lint notes that such rules are assumed)."""

from __future__ import annotations

import json
from functools import lru_cache

from packaging.version import Version

from eaglewire.rules import engine_data


@lru_cache(maxsize=4)
def load(engine: str) -> dict:
    """The committed scan of one engine: {"engine", "source", "releases": {version: {"arguments", ...}}}."""
    return json.loads(engine_data(engine, "arguments.json").read_text())


def releases(engine: str) -> tuple[str, ...]:
    return tuple(load(engine)["releases"])


def nearest(engine: str, version: Version | str) -> str:
    """The release read that answers for `version`: the newest at or below it (the oldest below them all)."""
    v = Version(str(version))
    read = releases(engine)
    below = [r for r in read if Version(r) <= v]
    return below[-1] if below else read[0]


@lru_cache(maxsize=256)
def arguments(engine: str, release: str) -> dict[str, dict]:
    """name -> what the scan found (kind, flags, default, declared, written, type, read, reads)."""
    return {a["name"]: a for a in load(engine)["releases"][release]["arguments"]}


def draft_settings(engine: str, release: str) -> dict[str, dict]:
    """setting -> how the draft's config gets it (keyword, source expression, where)."""
    return {d["setting"]: d for d in load(engine)["releases"][release]["draft_settings"]}


def vllm_key_known(key: str, version: Version | str) -> bool:
    """`key` is a SpeculativeConfig field of the vLLM release that answers for `version`."""
    found = arguments("vllm", nearest("vllm", version)).get(key)
    return found is not None and not key.startswith("EngineArgs.")


@lru_cache(maxsize=2)
def switches(engine: str) -> frozenset[str]:
    """Flags of boolean arguments in the newest release read (they take no value on the command line)."""
    newest = releases(engine)[-1]
    return frozenset(
        f for a in arguments(engine, newest).values() if a.get("type") == "bool" for f in a["flags"]
    )
