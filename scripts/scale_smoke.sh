#!/usr/bin/env bash
# Both DeepScaleR launchers, for real, at tiny scale on CPU: 2 GRPO steps each, then a third
# step resumed from the checkpoint, then one summary line and DIR/summary.json. The `tandem`
# run's first launch saves after every step and is SIGKILLed, whole process tree, mid-step 3
# (scripts/scale/crash_launch.py, which writes DIR/tandem/kill.json); its relaunch resumes. The tandem
# launcher runs twice: placement shared with a rollout of two tensor-parallel ranks, each
# holding half of the senior and half of the self-paired junior, which follows the senior
# (tandem.junior_update=ema:0.5, SMOKE_JUNIOR_UPDATE; run `tandem`), and placement
# split with a smaller junior of another shape (run `tandem_split`: the senior on rank 0, the
# junior on rank 1 of one rollout replica, two processes on CPU), which also scores the
# senior (partner_reward.weight=0.1, SMOKE_PARTNER_WEIGHT; verl's reference worker holds it).
# Then `grpo_score`: the GRPO launcher with the same partner score, scored by the base (RLT's
# setting), for 2 steps in one launch (no resume: the score's resume is the split run's). Last,
# `grpo_transfer`: the GRPO launcher with RLTR's transfer reward (partner_reward.kind=transfer,
# weight SMOKE_TRANSFER_WEIGHT, default 0.5, RLTR's draw of the cut): its base rides in a tandem
# engine as the receiver and continues each training response's prefix there, 2 steps in one launch.
#
#   bash scripts/scale_smoke.sh --out DIR [--base DIR] [--split-junior MODEL]
#                               [--only tandem|tandem_split|vanilla|grpo_score|grpo_transfer]
#                               [--prepare-only]
#
# What runs is the real stack: verl 0.9.1's trainer on Ray, its FSDP2 actor, its vLLM
# rollout server (vLLM's CPU build; the tandem engine for the tandem run), weight syncs
# every step, the project's reward function (tandem_eval's grader) and checkpoints. The
# launchers are used unchanged: only environment variables and key=value overrides differ
# (verl/cpu_overrides.sh for the CPU, scripts/scale/smoke_launch.sh's SMOKE_ARGS for the tiny
# scale). --prepare-only builds the base and the parquet files and stops.
#
# The senior is a tiny base SFT'd on a one-operation version of the synthetic task
# (tandem_app.train.tiny_base, built under DIR/base unless --base names one), so rewards vary
# and GRPO has non-zero advantages; the parquet files come from scripts/prepare_deepscaler.py
# on that task's local JSONL files. The split run's junior is --split-junior (a model
# directory), else a tiny base of the zoo's small shape (tandem_app.zoo.SMALL_SHAPE: other depth,
# width, query and KV heads; the same tokenizer) built under DIR/junior-small.
#
# Output: DIR/<run>/launch-{1,2}.log, metrics-{1,2}.jsonl (verl's file logger), trace.jsonl
# (tandem: one line per response, tandem_verl.agent_loop), checkpoints under
# DIR/<run>/ckpt, and DIR/summary.json: {"runs": {"tandem": {...}, "tandem_split": {...}, "vanilla": {...},
# "grpo_score": {...}, "grpo_transfer": {...}}}.
# Needs the scale venv (SCALE_VENV, default .venv-scale: `bash scripts/test_scale.sh --install-only`).
# Environment: SMOKE_TIMEOUT seconds per launch (default 900); SMOKE_JUNIOR_UPDATE, the `tandem`
# run's tandem.junior_update (default ema:0.5; `frozen` is the paper's junior); SMOKE_PARTNER_WEIGHT,
# the `tandem_split` and `grpo_score` runs' partner_reward.weight (default 0.1).
set -euo pipefail
cd "$(dirname "$0")/.."
REPO="$(pwd)"
OUT="" BASE="" SPLIT_JUNIOR="" ONLY="" PREPARE_ONLY=""
while [ $# -gt 0 ]; do
  case "$1" in
    --out) OUT="$2"; shift 2 ;;
    --base) BASE="$2"; shift 2 ;;
    --split-junior) SPLIT_JUNIOR="$2"; shift 2 ;;
    --only) ONLY="$2"; shift 2 ;;
    --prepare-only) PREPARE_ONLY=1; shift ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "error: unknown argument $1 (see --help)" >&2; exit 2 ;;
  esac
done
[ -n "$OUT" ] || { echo "error: --out DIR is required (see --help)" >&2; exit 2; }
case "$ONLY" in ""|tandem|tandem_split|vanilla|grpo_score|grpo_transfer) ;;
  *) echo "error: --only takes tandem, tandem_split, vanilla, grpo_score or grpo_transfer" >&2; exit 2 ;; esac
if [ -n "$SPLIT_JUNIOR" ] && [ ! -f "$SPLIT_JUNIOR/config.json" ]; then
  echo "error: --split-junior $SPLIT_JUNIOR holds no config.json; pass a model directory" >&2; exit 2
fi
mkdir -p "$OUT"; OUT="$(cd "$OUT" && pwd)"
VENV="${SCALE_VENV:-$REPO/.venv-scale}"
if [ -x "$VENV/bin/python" ]; then export PATH="$VENV/bin:$PATH"; fi
python -c "import vllm, verl" 2>/dev/null || {
  echo "error: this python lacks vLLM or verl; build the scale venv: bash scripts/test_scale.sh --install-only" >&2; exit 2; }

BASE="${BASE:-$OUT/base}"
echo "[smoke] tiny base in $BASE"
python -m tandem_app.train.tiny_base --out "$BASE" >/dev/null
echo "[smoke] parquet files in $OUT/data"
python scripts/prepare_deepscaler.py --out "$OUT/data" --train "$BASE/task_train.jsonl" \
  --val "$BASE/task_test.jsonl" --instruction "" --heldout 0 --max-train 64 --max-val 32 >/dev/null 2>&1

if [ -n "$PREPARE_ONLY" ]; then echo "[smoke] prepared $BASE and $OUT/data"; exit 0; fi

if [ -z "$ONLY" ] || [ "$ONLY" = tandem_split ]; then
  if [ -z "$SPLIT_JUNIOR" ]; then
    echo "[smoke] smaller junior in $OUT/junior-small"
    python -c "import sys; from tandem_app.train.tiny_base import SMALL_JUNIOR, build_tiny_base
build_tiny_base(sys.argv[1], SMALL_JUNIOR)" "$OUT/junior-small" >/dev/null  # the lane's recipe
    SPLIT_JUNIOR="$OUT/junior-small/model"
  fi
fi

launch() {  # launch RUN N STEPS: one launcher process (scripts/scale/smoke_launch.sh), retried once if its port was taken
  local run="$1" n="$2" steps="$3" dir="$OUT/$1"
  for attempt in 1 2; do
    rm -f "$dir/metrics-$n.jsonl"
    local t0=$SECONDS rc=0
    local run_env=() run_args=()  # the tandem run at rollout TP=2 with a moving junior; the split run with the smaller junior
    case "$run" in
      tandem) run_env=(SMOKE_ROLLOUT_TP=2 JUNIOR_MODEL="$BASE/model")
              run_args=("tandem.junior_update=${SMOKE_JUNIOR_UPDATE:-ema:0.5}") ;;
      tandem_split) run_env=(JUNIOR_MODEL="$SPLIT_JUNIOR")
                    run_args=("partner_reward.weight=${SMOKE_PARTNER_WEIGHT:-0.1}") ;;
      grpo_score) run_args=("partner_reward.weight=${SMOKE_PARTNER_WEIGHT:-0.1}") ;;
      grpo_transfer) run_args=(partner_reward.kind=transfer "partner_reward.weight=${SMOKE_TRANSFER_WEIGHT:-0.5}") ;;
    esac
    env "${run_env[@]}" timeout -s INT -k 60 "${SMOKE_TIMEOUT:-900}" \
      bash scripts/scale/smoke_launch.sh "$OUT" "$BASE/model" "$run" "$n" "$steps" "${run_args[@]}" \
      > "$dir/launch-$n.log" 2>&1 || rc=$?
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

crash_launch() {  # the tandem run's first launch: 3 steps, saving each, SIGKILLed mid-step 3 (scripts/scale/crash_launch.py)
  local dir="$OUT/tandem" t0=$SECONDS rc=0
  SMOKE_ROLLOUT_TP=2 JUNIOR_MODEL="$BASE/model" python scripts/scale/crash_launch.py "$OUT" "$BASE/model" tandem 1 3 \
    --after 2 "tandem.junior_update=${SMOKE_JUNIOR_UPDATE:-ema:0.5}" || rc=$?
  echo "$((SECONDS - t0))" > "$dir/launch-1.seconds"
  if [ "$rc" != 0 ]; then
    echo "error: tandem launch 1 failed (exit $rc); last lines of $dir/launch-1.log:" >&2
    tail -25 "$dir/launch-1.log" >&2
    return 1
  fi
}

for run in tandem tandem_split vanilla; do
  [ -z "$ONLY" ] || [ "$ONLY" = "$run" ] || continue
  rm -rf "$OUT/$run"; mkdir -p "$OUT/$run"
  if [ "$run" = tandem ]; then
    echo "[smoke] $run: 2 steps, then SIGKILL mid-step 3"
    crash_launch
  else
    echo "[smoke] $run: 2 steps"
    launch "$run" 1 2
  fi
  echo "[smoke] $run: step 3, resumed from the step-2 checkpoint"
  launch "$run" 2 3
done
if [ -z "$ONLY" ] || [ "$ONLY" = grpo_score ]; then
  rm -rf "$OUT/grpo_score"; mkdir -p "$OUT/grpo_score"
  echo "[smoke] grpo_score: 2 steps, the GRPO launcher scored by its base"
  launch grpo_score 1 2
fi
if [ -z "$ONLY" ] || [ "$ONLY" = grpo_transfer ]; then
  rm -rf "$OUT/grpo_transfer"; mkdir -p "$OUT/grpo_transfer"
  echo "[smoke] grpo_transfer: 2 steps, the GRPO launcher with the transfer reward (its base continues each prefix)"
  launch grpo_transfer 1 2
fi
python scripts/scale/smoke_summary.py --out "$OUT"
