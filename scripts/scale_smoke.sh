#!/usr/bin/env bash
# Both DeepScaleR launchers, for real, at tiny scale on CPU: 2 GRPO steps each, then a third
# step resumed from the checkpoint, then one summary line and DIR/summary.json.
#
#   bash scripts/scale_smoke.sh --out DIR [--base DIR] [--only tandem|vanilla]
#
# What runs is the real stack: verl 0.9.1's trainer on Ray, its FSDP2 actor, its vLLM
# rollout server (vLLM's CPU build; the tandem engine for the tandem run), weight syncs
# every step, the project's reward function (tandem_eval's grader) and checkpoints. The
# launchers are used unchanged: only environment variables and key=value overrides differ
# (verl/cpu_overrides.sh for the CPU, the SMOKE_ARGS below for the tiny scale).
#
# The senior is a tiny base SFT'd on a one-operation version of the synthetic task
# (tandem.train.tiny_base, built under DIR/base unless --base names one), so rewards vary
# and GRPO has non-zero advantages; the parquet files come from scripts/prepare_deepscaler.py
# on that task's local JSONL files.
#
# Output: DIR/<run>/launch-{1,2}.log, metrics-{1,2}.jsonl (verl's file logger), trace.jsonl
# (tandem: one line per response, tandem.integrations.verl_agent_loop), checkpoints under
# DIR/<run>/ckpt, and DIR/summary.json: {"runs": {"tandem": {...}, "vanilla": {...}}}.
# Needs the scale venv (SCALE_VENV, default .venv-scale: `bash scripts/test_scale.sh --install-only`).
# Environment: SMOKE_TIMEOUT seconds per launch (default 900).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
OUT="" BASE="" ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --base) BASE="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    -h|--help) sed -n '2,23p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || { echo "error: --out DIR is required (see --help)" >&2; exit 2; }
case "$ONLY" in ""|tandem|vanilla) ;; *) echo "error: --only takes tandem or vanilla" >&2; exit 2 ;; esac
mkdir -p "$OUT"; OUT="$(cd "$OUT" && pwd)"
VENV="${SCALE_VENV:-$REPO/.venv-scale}"
if [ -x "$VENV/bin/python" ]; then export PATH="$VENV/bin:$PATH"; fi
python -c "import vllm, verl" 2>/dev/null || {
  echo "error: this python lacks vLLM or verl; build the scale venv: bash scripts/test_scale.sh --install-only" >&2; exit 2; }

BASE="${BASE:-$OUT/base}"
echo "[smoke] tiny base in $BASE"
python -m tandem.train.tiny_base --out "$BASE" >/dev/null
echo "[smoke] parquet files in $OUT/data"
python scripts/prepare_deepscaler.py --out "$OUT/data" --train "$BASE/task_train.jsonl" \
  --val "$BASE/task_test.jsonl" --instruction "" --heldout 0 --max-train 64 --max-val 32 >/dev/null 2>&1

source verl/cpu_overrides.sh
SMOKE_ARGS=(
  data.train_files="$OUT/data/deepscaler/train.parquet"
  "data.val_files=[$OUT/data/task_test/test.parquet]"
  data.train_batch_size=8 data.val_batch_size=32 data.dataloader_num_workers=0
  data.max_prompt_length=128 data.max_response_length=64
  actor_rollout_ref.actor.optim.lr=1e-4
  actor_rollout_ref.actor.ppo_mini_batch_size=8 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16
  actor_rollout_ref.rollout.n=4 actor_rollout_ref.rollout.val_kwargs.n=2
  actor_rollout_ref.rollout.max_model_len=256 actor_rollout_ref.rollout.max_num_batched_tokens=2048
  actor_rollout_ref.rollout.max_num_seqs=64
  trainer.save_freq=2 trainer.test_freq=2 trainer.val_before_train=False
  "trainer.logger=[console,file]"
)

launch() {  # launch RUN N STEPS: one launcher process, retried once if its port was taken
  local run="$1" n="$2" steps="$3" dir="$OUT/$1" script
  script="verl/run_tandem_native_grpo_deepscaler.sh"
  [ "$run" = vanilla ] && script="verl/run_vanilla_grpo_deepscaler.sh"
  for attempt in 1 2; do
    rm -f "$dir/metrics-$n.jsonl"
    local t0=$SECONDS rc=0
    DATA_DIR="$OUT/data" CKPT_DIR="$dir/ckpt" SENIOR_MODEL="$BASE/model" N_GPUS=1 NAME="$run" \
      VERL_FILE_LOGGER_PATH="$dir/metrics-$n.jsonl" TANDEM_ROLLOUT_TRACE="$dir/trace.jsonl" \
      timeout -s INT -k 60 "${SMOKE_TIMEOUT:-900}" bash "$script" "${CPU_ARGS[@]}" "${SMOKE_ARGS[@]}" \
      trainer.total_training_steps="$steps" hydra.run.dir="$dir/hydra-$n" > "$dir/launch-$n.log" 2>&1 || rc=$?
    echo "$((SECONDS - t0))" > "$dir/launch-$n.seconds"
    if [ "$rc" = 0 ]; then return 0; fi
    if [ "$attempt" = 1 ] && grep -qE "EADDRINUSE|Address already in use" "$dir/launch-$n.log"; then
      echo "[smoke] $run launch $n: port in use, retrying once"; continue
    fi
    echo "error: $run launch $n failed (exit $rc); last lines of $dir/launch-$n.log:" >&2
    tail -25 "$dir/launch-$n.log" >&2
    return 1
  done
}

for run in tandem vanilla; do
  [ -z "$ONLY" ] || [ "$ONLY" = "$run" ] || continue
  rm -rf "$OUT/$run"; mkdir -p "$OUT/$run"
  echo "[smoke] $run: 2 steps"
  launch "$run" 1 2
  echo "[smoke] $run: step 3, resumed from the step-2 checkpoint"
  launch "$run" 2 3
done
python scripts/scale/smoke_summary.py --out "$OUT"
