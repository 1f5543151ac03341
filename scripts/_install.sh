#!/usr/bin/env bash
# Shared by scripts/demo.sh and scripts/test.sh: create ./.venv and install the project.
# torch goes in first and pinned, so that pip does not pull a CUDA build with gigabytes of
# dependencies on a CPU machine. Override with TORCH_SPEC (e.g. TORCH_SPEC="torch==2.11.0"
# for verl's GPU extras) and PYTHON (the interpreter that creates the venv, 3.10-3.12).
set -euo pipefail
extras="${1:-}"
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q "$TORCH_SPEC"
fi
.venv/bin/python -m pip install -q -e ".${extras}"
