"""Engine versions for the launch-flag rules: which SGLang and vLLM releases were read to encode them, and the
release a lint runs at. All of it comes from each engine's release ledger (`<engine>/data/ledger.json`).

A version inside the encoded range is linted with the rows that cover it; a newer one with the newest rows (and a
note saying they are assumed); an older one than the first release with EAGLE-3 is refused.
"""

from __future__ import annotations

from packaging.version import Version

from eaglewire.engines.sglang.args import SGLANG
from eaglewire.engines.vllm.args import VLLM
from eaglewire.errors import InputError
from eaglewire.rules.ledger import ledger
from eaglewire.rules.row import parse_version

ENGINES = (SGLANG, VLLM)

# Releases whose launch-flag code was read (wheel from PyPI, unzipped); rules are encoded from the oldest to the newest.
SGLANG_CHECKED = ledger(SGLANG).read("flags")
VLLM_CHECKED = ledger(VLLM).read("flags")
CHECKED = {SGLANG: SGLANG_CHECKED, VLLM: VLLM_CHECKED}
# The first release with EAGLE-3 (sglang 0.4.5: 0.4.3 has only EAGLE; vllm 0.8.5: 0.8.3 and 0.8.4 have no "eagle3")
OLDEST = {e: ledger(e).oldest for e in ENGINES}
NEWEST = {e: CHECKED[e][-1] for e in ENGINES}


def resolve_version(engine: str, text: str | None) -> tuple[Version, bool, list[str]]:
    notes: list[str] = []
    if text is None:
        notes.append(f"engine version not given: assumed {engine} {NEWEST[engine]}, the newest encoded")
        return Version(NEWEST[engine]), True, notes
    version = parse_version(text, "engine version")
    if version < Version(OLDEST[engine]):
        raise InputError(
            f"engine version {text}: eaglewire encodes {engine} {OLDEST[engine]}-{NEWEST[engine]}; "
            f"{OLDEST[engine]} is the first with EAGLE-3"
        )
    if version > Version(NEWEST[engine]):
        notes.append(
            f"{engine} {version} is newer than the newest version read ({NEWEST[engine]}): its rules are assumed"
        )
    return version, False, notes
