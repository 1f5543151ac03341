#!/usr/bin/env bash
# An offline wheelhouse: every wheel the GPU stack (vllm_source/stack.py) and this package need,
# for a GPU node without internet. Build it on any machine with internet and a Python 3.11+
# (the target's Python need not be there: uv resolves for it):
#
#   bash scripts/gpu_wheelhouse.sh --out DIR [--python 3.12] [--present FILE] [--part-mib N]
#   bash scripts/gpu_wheelhouse.sh --out DIR --resolve-only ...  # DIR/lock.txt, DIR/plan.json; no download
#   bash scripts/gpu_wheelhouse.sh --join DIR     # on the target: put split files back, check sha256
#
# Writes DIR/manifest.json (resolver, vLLM release, per file name, version, sha256, bytes; the
# total) and DIR/lock.txt. Then `bash scripts/gpu_check.sh --wheelhouse DIR --out OUT` installs
# from it with no index. The logic is scripts/wheelhouse/ (standard library only; `--help`
# explains each flag). Paths are taken relative to the current directory.
set -euo pipefail
exec "${GPU_WHEELHOUSE_LAUNCHER_PYTHON:-python3}" "$(dirname "$0")/gpu_wheelhouse.py" "$@"
