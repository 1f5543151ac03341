#!/usr/bin/env bash
# A device smoke that fits a short lease (one H100/H200 with only PyTorch, CUDA 13, no internet):
#
#   bash scripts/gpu_smoke.sh --prepare [--wheels DIR]      # here, with PyPI: the wheels (<= 60 MiB) into DIR
#   bash scripts/gpu_smoke.sh [--wheels DIR] --out DIR      # on the GPU machine, under 8 minutes
#   bash scripts/gpu_smoke.sh --dry-run --out DIR           # on a CPU: what needs no GPU; lists the rest
#
# DIR defaults to shared/wheels-gpu-smoke (the checkout's, which travels to a lent machine).
# Writes OUT/gpu_smoke.json and prints one summary line. Exit 0 when no step failed, 1 when one
# did, 2 for bad arguments. The logic is scripts/gpu_smoke.py (standard library only; --help).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${GPU_SMOKE_PYTHON:-python3}" scripts/gpu_smoke.py "$@"
