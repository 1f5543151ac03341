#!/usr/bin/env bash
# Shared by scripts/demo.sh and scripts/test.sh: create ./.venv and install the project.
# torch goes in first and pinned (TORCH_SPEC, default torch==2.13.0), so that nothing later
# pulls another build. On Linux, PyPI's torch==2.13.0 is the CUDA build (several GB, with
# its CUDA libraries); for the CPU build set TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu.
# The project's CI machines carry the CPU wheel locally, so the default needs no index there.
# PYTHON picks the interpreter that creates the venv (3.10-3.12).
set -euo pipefail
extras="${1:-}"
PYTHON="${PYTHON:-python3}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
if [ ! -x .venv/bin/python ]; then
  "$PYTHON" -m venv .venv
  .venv/bin/python -m pip install -q --upgrade pip
fi
# pip byte-compiles every file it installs on one core (torch alone: 40 of 57 s on the 2-core CI
# machine); installing with --no-compile and compiling the venv once on every core is faster.
if ! .venv/bin/python -c "import torch" 2>/dev/null; then
  .venv/bin/python -m pip install -q --no-compile ${TORCH_INDEX_URL:+--index-url "$TORCH_INDEX_URL" --extra-index-url https://pypi.org/simple} "$TORCH_SPEC"
fi
.venv/bin/python -m pip install -q --no-compile -e ".${extras}"
bash scripts/_compile_venv.sh .venv
