#!/bin/bash
# build.sh SRC SHARED OUT: rebuilds this folder's wheel. SRC: a checkout of github.com/mingfeima/sglang at
# 2f14d6c6f (branch main of 2026-07-19, the source of ../shared/sglang-cpu's wheel); SHARED: ../shared/sglang-cpu
# (its call shim for SGLang 0.5.23); OUT: where the wheel goes. Needs libnuma-dev, cmake, g++. About 5 minutes on
# 2 cores. Same source and shim as the shipped build; only the target differs: x86-64-v3 (AVX2, FMA) in place of
# x86-64-v4 with AVX512-BF16, VNNI and AMX, and the local version +avx2 so a venv says which build it holds.
set -euo pipefail
SRC=${1:?usage: build.sh SRC SHARED OUT}; S=${2:?}; OUT=${3:?}
W=$(mktemp -d); trap 'rm -rf "$W"' EXIT
cp -r "$SRC/sgl-kernel" "$W/"; cd "$W/sgl-kernel"
patch -s -p0 csrc/cpu/torch_extension_cpu.cpp < "$S/patches/sgl-kernel-0.5.23-call-shim.diff"
python3 - <<'PY'
from pathlib import Path
p = Path("csrc/cpu/CMakeLists.txt")
old = "        -march=x86-64-v4\n        -mavx512bf16\n        -mavx512vnni\n        -mamx-tile\n        -mamx-bf16\n        -mamx-int8\n"
text = p.read_text()
assert old in text, "sgl-kernel's x86_64 compile options changed: edit build.sh"
p.write_text(text.replace(old, "        -march=x86-64-v3\n"))
p = Path("pyproject.toml")
p.write_text(Path("pyproject_cpu.toml").read_text().replace("torch==2.12.0", "torch==2.13.0")
             .replace('version = "0.4.5"', 'version = "0.4.5+avx2"'))
PY
python3 -m venv "$W/venv"
"$W/venv/bin/pip" install -q torch==2.13.0 scikit-build-core wheel
MAX_JOBS=2 CMAKE_BUILD_PARALLEL_LEVEL=2 "$W/venv/bin/pip" wheel -q --no-build-isolation --no-deps -w "$OUT" .
