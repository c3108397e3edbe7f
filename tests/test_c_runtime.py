"""A release venv on a newer C runtime (tests/real_engine/runtime.py): the Debian packages are fetched from an index
and checked by SHA256, unpacked whole or not at all, and the venv's interpreter is patched to load them. The archive
here is a real one laid out as Debian's (a file:// mirror of .deb files built in the test); the interpreter is
patched for real (patchelf) and run."""

from __future__ import annotations

import hashlib
import io
import lzma
import os
import platform
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest
from real_engine import runtime
from real_engine.install import native_runtime_missing

ARCH, TRIPLET, LOADER = runtime.ARCHES.get(platform.machine(), (None, None, None))
pytestmark = pytest.mark.skipif(
    ARCH is None or not sys.platform.startswith("linux"), reason="a Linux ELF machine"
)


def _tar(files: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def _deb(files: dict[str, bytes]) -> bytes:
    """A Debian package: an ar archive of debian-binary, control.tar.xz and data.tar.xz."""
    members = [("debian-binary", b"2.0\n"), ("control.tar.xz", lzma.compress(_tar({"./control": b"Package: x\n"}))),
               ("data.tar.xz", lzma.compress(_tar(files)))]  # fmt: skip
    out = b"!<arch>\n"
    for name, body in members:
        out += f"{name + '/':<16}{0:<12}{0:<6}{0:<6}{'100644':<8}{len(body):<10}`\n".encode() + body
        out += b"\n" if len(body) % 2 else b""
    return out


def _mirror(root: Path, libc: bytes = b"GLIBC_2.38\0GLIBC_2.41\0") -> Path:
    lib = f"./usr/lib/{TRIPLET}/"
    debs = {"libc6": _deb({lib + "libc.so.6": libc, lib + LOADER: b"\x7fELF loader"}),
            "libgcc-s1": _deb({lib + "libgcc_s.so.1": b"GCC_14.0\0"}),
            "libstdc++6": _deb({lib + "libstdc++.so.6": b"GLIBCXX_3.4.32\0GLIBCXX_3.4.33\0"})}  # fmt: skip
    stanzas = []
    for name, deb in debs.items():
        path = f"pool/main/{name}_1.0_{ARCH}.deb"
        (root / path).parent.mkdir(parents=True, exist_ok=True)
        (root / path).write_bytes(deb)
        stanzas.append(
            f"Package: {name}\nVersion: 1.0-{name}\nFilename: {path}\nSHA256: {hashlib.sha256(deb).hexdigest()}\n"
        )
    index = root / f"dists/{runtime.SUITE}/main/binary-{ARCH}/Packages.xz"
    index.parent.mkdir(parents=True)
    index.write_bytes(lzma.compress(("Package: other\nVersion: 1\n\n" + "\n".join(stanzas)).encode()))
    return root


def test_the_runtime_is_the_index_packages_unpacked_once_with_the_versions_they_hold(tmp_path):
    mirror = _mirror(tmp_path / "mirror")
    got = runtime.fetch(tmp_path / "rt", mirror=mirror.as_uri())
    assert got["glibc"] == "2.41" and got["glibcxx"] == "3.4.33"  # the newest version each library has
    assert got["packages"] == ["libc6 1.0-libc6", "libgcc-s1 1.0-libgcc-s1", "libstdc++6 1.0-libstdc++6"]
    assert (
        Path(got["loader"]).read_bytes() == b"\x7fELF loader" and Path(got["lib"], "libgcc_s.so.1").is_file()
    )
    # once there, it is not fetched again (the mirror is gone)
    for f in sorted(mirror.rglob("*"), reverse=True):
        f.unlink() if f.is_file() else f.rmdir()
    assert runtime.fetch(tmp_path / "rt", mirror=mirror.as_uri()) == got


def test_a_package_that_differs_from_the_index_is_refused_and_nothing_is_left(tmp_path):
    mirror = _mirror(tmp_path / "mirror")
    deb = next(mirror.glob("pool/main/libstdc++6_*.deb"))
    deb.write_bytes(deb.read_bytes() + b"\n")
    with pytest.raises(RuntimeError, match=r"libstdc\+\+6_1.0_.*\.deb: SHA256 differs"):
        runtime.fetch(tmp_path / "rt", mirror=mirror.as_uri())
    assert not (tmp_path / "rt").exists() and not (tmp_path / "rt.part").exists()


def test_a_venv_given_a_runtime_runs_its_interpreter_on_it(tmp_path):
    """The machine's own runtime stands for Debian's here (the same mechanism; the newer one is `make observe`'s):
    the venv's python is a copy whose loader and library path are the runtime's, and it still is the venv's."""
    libc = Path(os.path.realpath(f"/lib/{TRIPLET}/libc.so.6"))
    loader = Path(f"/lib64/{LOADER}") if Path(f"/lib64/{LOADER}").exists() else libc.parent / LOADER
    glibc = os.confstr("CS_GNU_LIBC_VERSION").split()[-1]
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(venv)], check=True)
    runtime.give(venv, {"lib": str(libc.parent), "loader": str(loader), "glibc": glibc})
    py = venv / "bin" / "python"
    out = subprocess.run([str(py), "-c", "import sys; print(sys.executable, sys.prefix != sys.base_prefix)"],
                         capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
    assert out == [str(py), "True"]
    real = Path(os.path.realpath(py))
    assert real.parent == venv / "bin" and not real.is_symlink()  # its own copy, not the base interpreter
    patchelf = Path(sys.executable).parent / "patchelf"

    def elf(flag: str) -> list[str]:
        return subprocess.run([str(patchelf), flag, str(real)], capture_output=True, text=True,
                              check=True).stdout.split()  # fmt: skip

    assert elf("--print-interpreter") == [str(loader)] and elf("--print-rpath")[0].startswith(
        f"{libc.parent}:"
    )
    assert {"libstdc++.so.6", "libgcc_s.so.1"} <= set(elf("--print-needed"))


def test_a_release_needs_the_runtime_only_where_its_kernels_name_newer_versions(tmp_path):
    site = tmp_path / "lib/python3.11/site-packages/vllm"
    site.mkdir(parents=True)
    (site / "_C.abi3.so").write_bytes(b"GLIBC_2.17\0GLIBCXX_3.4.32\0")
    missing = native_runtime_missing(tmp_path)
    have = max(
        runtime.versions(Path(f"/lib/{TRIPLET}/libstdc++.so.6").read_bytes(), rb"GLIBCXX"), default=None
    )
    if have and have < (3, 4, 32):
        assert "GLIBCXX_3.4.32" in missing and "GLIBC_" not in missing.split("GLIBCXX")[0]
    given = {"glibc": "2.41", "glibcxx": "3.4.33", "from": "Debian trixie"}
    assert native_runtime_missing(tmp_path, given) is None
    (site / "_C.abi3.so").write_bytes(b"GLIBC_2.42\0GLIBCXX_3.4.34\0")
    assert native_runtime_missing(tmp_path, given) == (
        "vllm/_C needs GLIBC_2.42 (Debian trixie: glibc 2.41) and GLIBCXX_3.4.34 (Debian trixie: up to "
        "GLIBCXX_3.4.33): vLLM would run without its CPU ops"
    )
