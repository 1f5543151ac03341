#!/usr/bin/env bash
# An offline wheelhouse: every wheel the GPU stack (vllm_source/stack.py) and this package need,
# for a GPU node without internet. Build it where there is internet:
#
#   bash scripts/gpu_wheelhouse.sh --out DIR [--python 3.12] [--present FILE] [--part-mib N]
#   bash scripts/gpu_wheelhouse.sh --join DIR     # on the target: put split files back, check sha256
#
# Writes DIR/manifest.json (vLLM release, per file name, version, sha256, bytes; the total).
# Then `bash scripts/gpu_check.sh --wheelhouse DIR --out OUT` installs from it with no index.
# The logic is scripts/gpu_wheelhouse.py (standard library only; `--help` explains each flag).
# Paths are taken relative to the current directory.
set -euo pipefail
exec "${GPU_WHEELHOUSE_LAUNCHER_PYTHON:-python3}" "$(dirname "$0")/gpu_wheelhouse.py" "$@"
