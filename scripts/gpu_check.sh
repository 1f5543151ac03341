#!/usr/bin/env bash
# Validate a GPU machine for the scale path (run this first on any new GPU machine):
#
#   bash scripts/gpu_check.sh --out DIR [--python PY] [--model Qwen/Qwen3-0.6B] [--only NAME ...] [--skip NAME ...]
#   bash scripts/gpu_check.sh --out DIR --wheelhouse WHEELHOUSE   # no internet: install from scripts/gpu_wheelhouse.sh's folder
#   bash scripts/gpu_check.sh --out DIR --v2-python .venv-v2/bin/python  # also the tandem engine on vLLM 0.32's V2 runner
#
# Without a usable stack it installs the tested one of vllm_source/stack.py into .venv-gpu
# (from the index, or from --wheelhouse with no index). Relative paths are taken from the checkout.
# Writes DIR/gpu_check.json (one entry per check: passed / failed / skipped with the reason,
# and the driver, CUDA, torch, vLLM and verl versions) and prints one summary line. Exit 0
# when no check failed, 1 when one did, 2 without a GPU. The logic is scripts/gpu_check.py
# (standard library only; `--help` lists the checks).
set -euo pipefail
cd "$(dirname "$0")/.."
exec "${GPU_CHECK_LAUNCHER_PYTHON:-python3}" scripts/gpu_check.py "$@"
