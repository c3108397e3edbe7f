"""Which build of SGLang's CPU kernels this CPU runs (standard library only: install.sh, the harness interpreter and
the tests all ask it).

../shared/sglang-cpu's wheel is compiled for x86-64-v4 with AVX512-BF16 and VNNI (-march in sgl-kernel's
csrc/cpu/CMakeLists.txt): on a CPU without them its import dies with an illegal instruction. Such a CPU gets the
same source built for x86-64-v3 (kernels/README.md), whose two kernels with no path below AVX-512 the harness
replaces (harness/sitecustomize.py).

    python cpu.py    # prints avx512 or avx2
"""

from __future__ import annotations

import sys
from pathlib import Path

# what the shipped build executes: x86-64-v4's AVX-512 subsets, then -mavx512bf16 -mavx512vnni
AVX512_FLAGS = ("avx512f", "avx512dq", "avx512cd", "avx512bw", "avx512vl", "avx512_bf16", "avx512_vnni")


def cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    line = next((ln for ln in text.splitlines() if ln.startswith("flags")), "")
    return set(line.partition(":")[2].split())


def has_avx512() -> bool:
    """Whether the shipped kernel build runs here; without it the harness's x86-64-v3 build does."""
    return set(AVX512_FLAGS) <= cpu_flags()


def kernel_build() -> str:
    return "avx512" if has_avx512() else "avx2"


if __name__ == "__main__":
    sys.stdout.write(kernel_build() + "\n")
