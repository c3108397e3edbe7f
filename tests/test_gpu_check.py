"""scripts/gpu-check.sh: its dry run (the CPU on both sides) passes here, so the script itself is proven before
anyone is lent a GPU; on a GPU (pytest -m gpu) the real check runs and must pass."""

import json
import os
import subprocess
from pathlib import Path

import pytest
import torch

from eaglewire import zoo

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "gpu-check.sh"
pytestmark = pytest.mark.skipif(not zoo.is_built(), reason="needs the bundled zoo")


def _run(tmp_path: Path, *args: str) -> dict:
    env = dict(os.environ, PYTHON=os.environ.get("PYTHON", __import__("sys").executable), OMP_NUM_THREADS="1")
    r = subprocess.run(["bash", str(SCRIPT), *args, "--out", str(tmp_path / "out")], capture_output=True,
                       text=True, env=env, timeout=900)  # fmt: skip
    assert r.returncode == 0, (r.stdout[-3000:], r.stderr[-3000:])
    return json.loads((tmp_path / "out" / "summary.json").read_text())


@pytest.mark.slow  # every job once on the CPU (~40 s); each job has its own tests in make test
def test_gpu_check_dry_run(tmp_path):
    summary = _run(tmp_path, "--dry-run")
    assert summary["dry_run"] and summary["passed"]
    names = [c["check"] for c in summary["checks"]]
    for what in (
        "capture",
        "test (chain)",
        "test (teacher)",
        "test --dump",
        "search",
        "doctor",
        "train",
        "generate",
        "bench",
    ):
        assert any(n.startswith(what) for n in names), (what, names)
    assert (tmp_path / "out" / "cpu-dry" / "bench" / "decode.json").exists()


@pytest.mark.gpu
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA device")
def test_gpu_check_on_cuda(tmp_path):
    summary = _run(tmp_path)
    assert summary["passed"] and summary["seconds"] < 480, summary


def test_the_default_output_folder_is_ignored_by_git():
    """The check (and its dry run) writes into gpu-check-results/ unless told otherwise: never into tracked files."""
    import importlib.util
    import shutil

    spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT.with_name("gpu_check.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    root = SCRIPT.parents[1]
    if shutil.which("git") is None or not (root / ".git").exists():
        pytest.skip("not a git checkout")
    probe = mod.DEFAULT_OUT / "summary.json"
    r = subprocess.run(["git", "check-ignore", "-q", str(probe)], cwd=root)
    assert r.returncode == 0, f"{probe} is not ignored by git: add {mod.DEFAULT_OUT}/ to .gitignore"
