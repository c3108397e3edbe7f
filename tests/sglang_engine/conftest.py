"""The SGLang tier: SGLang 0.5.23 serves the zoo with EAGLE-3 on the CPU, through the harness venv that
../shared/sglang-cpu/install.sh builds (`make test-sglang`).

SGLang runs in its own interpreter (EAGLEWIRE_SGLANG_PYTHON); the tests talk to it through files and HTTP only, so
nothing of SGLang is imported into eaglewire's environment. Without the variable the tier is skipped; with it set
to a missing interpreter, or one whose SGLang kernels do not import, the tier fails (CI must not pass by skipping).
"""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest
from real_engine.conftest import engine_python

pytestmark = pytest.mark.sglang_engine

# what ../shared/sglang-cpu/install.sh installs; another release through the same kernels (a venv built the same
# way with that wheel): EAGLEWIRE_SGLANG_VERSION
SGLANG_VERSION = os.environ.get("EAGLEWIRE_SGLANG_VERSION", "0.5.23")
ENGINE = f"sglang=={SGLANG_VERSION}"


@pytest.fixture(scope="session")
def sglang_python() -> Path:
    path = engine_python("EAGLEWIRE_SGLANG_PYTHON", "test-sglang")
    env = os.environ | {"SGLANG_USE_CPU_ENGINE": "1", "SGL_TEST_FORCE_AMX": "1"}
    probe = subprocess.run(
        [str(path), "-c", "import sglang, sgl_kernel; print(sglang.__version__)"],
        env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert probe.returncode == 0, (
        f"{path}: SGLang or its CPU kernels do not import (exit {probe.returncode}; -4 is an illegal instruction: "
        f"kernels built for another CPU): {probe.stderr[-1500:]}"
    )
    assert probe.stdout.strip() == SGLANG_VERSION, probe.stdout
    return path
