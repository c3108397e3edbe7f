#!/bin/bash
# install.sh VENV SHARED: the SGLang tier's harness venv (make test-sglang); SHARED is ../shared/sglang-cpu.
# On a CPU the shipped kernel build runs on (cpu.py: AVX-512 with BF16 and VNNI), SHARED/install.sh as it is.
# Elsewhere the same steps with kernels/'s x86-64-v3 build of the same kernel source (kernels/README.md): the shipped
# build dies there with an illegal instruction on import. Idempotent: does nothing when VENV already imports SGLang
# with the kernels for this CPU.
set -euo pipefail
V=${1:?usage: install.sh VENV SHARED}; S=${2:?usage: install.sh VENV SHARED}; H=$(cd "$(dirname "$0")" && pwd)
if [ "$(python3 "$H/cpu.py")" = avx512 ]; then exec "$S/install.sh" "$V"; fi
PY=$V/bin/python
ok() {
  SGL_TEST_FORCE_AMX=1 SGLANG_USE_CPU_ENGINE=1 "$PY" -c "import importlib.metadata as m, sglang.srt.configs, \
sglang.srt.server_args, sgl_kernel; assert m.version('sglang-kernel-cpu').endswith('+avx2')" >/dev/null 2>&1
}
if [ -x "$PY" ] && ok; then exit 0; fi
echo "install.sh: this CPU lacks AVX-512 BF16/VNNI: SGLang's CPU kernels built for x86-64-v3 ($H/kernels)" >&2
rm -rf "$V"; python3 -m venv "$V"
"$PY" -m pip install -q torch==2.13.0
"$PY" -m pip install -q --no-deps -r "$S/requirements.txt"
"$PY" -m pip install -q --no-deps sglang==0.5.23 torchvision==0.28.0 "$H"/kernels/sglang_kernel_cpu-0.4.5+avx2-*.whl
sp=$("$PY" -c "import sysconfig; print(sysconfig.get_paths()['purelib'])")
patch -s -p0 -d "$sp" < "$S/patches/sglang-force-amx.diff"
patch -s -p0 -d "$sp" < "$S/patches/torchvision-import-guard.diff"
ok || { echo "install.sh: SGLang does not import in $V" >&2; exit 1; }
