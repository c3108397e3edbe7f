#!/usr/bin/env bash
# The GPU check: capture, test (+ on a dump, + search), doctor, train (1 process; 2 under torchrun when there are
# two GPUs), generate and bench on the zoo target, on CUDA and on the CPU, compared (same taps, acc within 0.01 per
# step, greedy output identical in fp32). Under 8 minutes on one GPU. Details: scripts/gpu_check.py.
#
#   scripts/gpu-check.sh              on a machine with a GPU; writes gpu-check-results/summary.json (git-ignored)
#   scripts/gpu-check.sh --dry-run    the CPU on both sides, small sizes: proves the script works (make test-all
#                                     runs it: tests/test_gpu_check.py); the same default folder
#   scripts/gpu-check.sh --out DIR    another output folder
#
# PYTHON picks the interpreter (default: .venv/bin/python when it exists, else python3).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${PYTHON:-}" ]; then
  if [ -x .venv/bin/python ]; then PYTHON=.venv/bin/python; else PYTHON=python3; fi
fi
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-2}" TOKENIZERS_PARALLELISM=false HF_HUB_OFFLINE=1
exec timeout 900 "$PYTHON" scripts/gpu_check.py "$@"
