"""The GPU is an input of the lint: SGLang picks attention backends and page sizes per GPU generation, and those
decide whether a draft tree starts (a Kimi-K2.5 EAGLE3 launch with top-k 2 starts on an H200 and fails on a B200).

A profile is what the engines' argument code asks the GPU (compute capability, name, memory); `detect_local`
asks nvidia-smi (no torch). "unknown" is a profile too: rules whose verdict depends on the GPU then say so.
"""

from __future__ import annotations

import shutil
import subprocess
from dataclasses import dataclass

from eaglewire.errors import InputError

UNKNOWN = "unknown"


@dataclass(frozen=True)
class GpuProfile:
    """One GPU model as the engines see it. `capability` None: unknown (every GPU-dependent rule says so)."""

    key: str
    name: str
    capability: tuple[int, int] | None
    memory_mib: int | None
    sms: int = 132

    @property
    def known(self) -> bool:
        return self.capability is not None

    @property
    def hopper(self) -> bool:
        """SGLang `is_hopper_with_cuda_12_3` (sm90, CUDA >= 12.3; srt/utils/common.py:292-296)."""
        return self.capability is not None and self.capability[0] == 9

    @property
    def sm100(self) -> bool:
        """SGLang `is_sm100_supported` (major 10, CUDA >= 12.8; srt/utils/common.py:309-313): B200/GB200/B300."""
        return self.capability is not None and self.capability[0] == 10

    def probe_request(self, count: int = 8) -> dict | None:
        """What the engine probe answers for this GPU (enginecode/probe.py)."""
        if self.capability is None or self.memory_mib is None:
            return None
        return {"name": self.name, "capability": list(self.capability), "memory_mib": self.memory_mib,
                "count": count, "cuda": "12.9", "sms": self.sms}  # fmt: skip


GPUS: dict[str, GpuProfile] = {
    g.key: g
    for g in (
        GpuProfile("a100", "NVIDIA A100-SXM4-80GB", (8, 0), 81920, 108),
        GpuProfile("h100", "NVIDIA H100 80GB HBM3", (9, 0), 81559, 132),
        GpuProfile("h200", "NVIDIA H200", (9, 0), 143771, 132),
        GpuProfile("b200", "NVIDIA B200", (10, 0), 183359, 148),
        GpuProfile("gb200", "NVIDIA GB200", (10, 0), 189471, 152),
        GpuProfile("b300", "NVIDIA B300 SXM6 AC", (10, 3), 275040, 148),
        GpuProfile(UNKNOWN, "unknown GPU", None, None),
    )
}
# One profile per generation the rules tell apart (sm80, sm90, sm100): what an unknown GPU is compared across.
GPU_GENERATIONS = ("a100", "h200", "b200")


def by_name(name: str) -> GpuProfile | None:
    """The profile whose key occurs in an nvidia-smi name (longest key first: gb200 before b200)."""
    low = name.lower().replace(" ", "")
    for key in sorted((k for k in GPUS if k != UNKNOWN), key=len, reverse=True):
        if key in low:
            return GPUS[key]
    return None


def detect_local() -> GpuProfile:
    """The local GPU via nvidia-smi, or the unknown profile (no GPU, no nvidia-smi, or a GPU not in GPUS)."""
    if shutil.which("nvidia-smi") is None:
        return GPUS[UNKNOWN]
    try:
        out = subprocess.run(
            ["nvidia-smi", "--query-gpu=name", "--format=csv,noheader"],
            capture_output=True, text=True, timeout=10, check=True,
        ).stdout  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return GPUS[UNKNOWN]
    first = out.strip().splitlines()[0] if out.strip() else ""
    return by_name(first) or GPUS[UNKNOWN]


def resolve_gpu(text: str | None) -> GpuProfile:
    """`--gpu` as given: a key of GPUS, "local" (or None: the local GPU if any), "unknown"."""
    if text is None or text.strip().lower() == "local":
        return detect_local()
    key = text.strip().lower()
    if key in GPUS:
        return GPUS[key]
    found = by_name(key)
    if found is not None:
        return found
    raise InputError(f"--gpu {text}: unknown GPU; use one of {', '.join(GPUS)} or local")
