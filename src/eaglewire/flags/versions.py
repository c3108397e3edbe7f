"""Engine versions: which SGLang and vLLM releases were read to encode the rules, and the version a lint runs at.

A version inside the encoded range is linted with the rows that cover it; a newer one with the newest rows (and a
note saying they are assumed); an older one than the first release with EAGLE-3 is refused.
"""

from __future__ import annotations

from packaging.version import InvalidVersion, Version

from eaglewire.errors import InputError

SGLANG = "sglang"
VLLM = "vllm"
ENGINES = (SGLANG, VLLM)

# Versions whose source was read (wheel from PyPI, unzipped). Rules are encoded from the oldest to the newest.
SGLANG_CHECKED = (
    "0.4.5", "0.4.6", "0.4.7", "0.4.8", "0.4.9", "0.4.10",
    "0.5.1", "0.5.2", "0.5.3", "0.5.4", "0.5.5", "0.5.6", "0.5.7", "0.5.8", "0.5.9", "0.5.10", "0.5.11",
    "0.5.12", "0.5.13", "0.5.14", "0.5.15", "0.5.16", "0.5.17", "0.5.18", "0.5.19", "0.5.20", "0.5.21",
    "0.5.22", "0.5.23",
)  # fmt: skip
VLLM_CHECKED = (
    "0.8.5", "0.9.0", "0.10.0", "0.10.1.1", "0.10.2", "0.11.0", "0.14.0", "0.20.0", "0.21.0", "0.22.0",
    "0.23.0", "0.24.0", "0.27.0", "0.28.0", "0.29.0", "0.30.0", "0.33.0",
)  # fmt: skip
CHECKED = {SGLANG: SGLANG_CHECKED, VLLM: VLLM_CHECKED}
# The oldest version encoded: sglang 0.4.5 is the first with EAGLE3 (0.4.3 has only EAGLE); vllm 0.8.5 is the
# first with method "eagle3" (0.8.3 and 0.8.4 have none).
OLDEST = {SGLANG: "0.4.5", VLLM: "0.8.5"}
NEWEST = {SGLANG: SGLANG_CHECKED[-1], VLLM: VLLM_CHECKED[-1]}

# Source files, per era, as cited by the rules.
SG_HOOK = "sglang 0.5.23 srt/arg_groups/speculative_hook.py"
SG_SA = (
    "sglang 0.4.5-0.5.12 srt/server_args.py (speculative block of __post_init__; "
    "_handle_speculative_decoding from 0.5.4)"
)
VL_CFG = (
    "vllm 0.33.0 vllm/config/speculative.py SpeculativeConfig "
    "(0.8.5-0.10.2: vllm/config.py, vllm/config/__init__.py)"
)
VL_ARGS = "vllm 0.33.0 vllm/engine/arg_utils.py"


def resolve_version(engine: str, text: str | None) -> tuple[Version, bool, list[str]]:
    notes: list[str] = []
    if text is None:
        notes.append(f"engine version not given: assumed {engine} {NEWEST[engine]}, the newest encoded")
        return Version(NEWEST[engine]), True, notes
    try:
        version = Version(str(text).strip().lstrip("vV"))
    except InvalidVersion:
        raise InputError(f"engine version {text!r} is not a version number (e.g. 0.5.23)") from None
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
