#!/usr/bin/env bash
# One launcher process of the smoke run, at tiny scale: on CPU for scripts/scale_smoke.sh and
# scripts/scale/crash_launch.py (which kills one mid-step), on GPUs for scripts/gpu_check.py.
#
#   bash scripts/scale/smoke_launch.sh OUT MODEL RUN N STEPS [key=value ...]
#
# OUT holds data/ (deepscaler/train.parquet and task_test/test.parquet, as
# scripts/prepare_deepscaler.py writes them) and receives OUT/RUN/: metrics-N.jsonl (verl's
# file logger), trace.jsonl (tandem runs), partner.jsonl (runs with the partner score), engines-N.jsonl (the vLLM version and model runner
# each rollout worker reports: vllm_source/model_runner.py), hydra-N/ and the checkpoints under ckpt/RUN.
# MODEL is the senior (a path or a hub name). RUN is tandem, tandem_split (the tandem launcher
# with tandem.placement=split: one rollout replica over two workers, senior on tensor-parallel
# rank 0, junior on rank 1; on GPUs its attention backend, one that reads each rank's heads from
# its own layers, is named by the launcher's config step, verl/tandem_verl/wiring.py, and logged), vanilla, grpo_score or grpo_transfer (the vanilla launcher, for a run given
# partner_reward.* keys) or kl_reg (the KL ablation, KL_COEF default 0.001); STEPS
# is trainer.total_training_steps; extra overrides go last. Output goes to stdout.
# Environment: SMOKE_DEVICE=cpu (default: verl/cpu_overrides.sh, one worker) or gpu
# (SMOKE_N_GPUS GPUs, default 1, and room for a real model's prompts and answers);
# JUNIOR_MODEL, the tandem runs' junior (default: the senior, self-paired); SMOKE_ROLLOUT_TP,
# the `tandem` run's rollout tensor-parallel size, 1 (default) or 2 (two workers, each
# holding half of the senior and half of the junior).
set -euo pipefail
cd "$(dirname "$0")/../.."
[ $# -ge 5 ] || { echo "error: usage: smoke_launch.sh OUT MODEL RUN N STEPS [key=value ...]" >&2; exit 2; }
OUT="$1" MODEL="$2" RUN="$3" N="$4" STEPS="$5"; shift 5
PLACEMENT_ARGS=()
case "$RUN" in
  tandem) SCRIPT=verl/run_tandem_native_grpo_deepscaler.sh ;;
  tandem_split) SCRIPT=verl/run_tandem_native_grpo_deepscaler.sh
                PLACEMENT_ARGS=(tandem.placement=split actor_rollout_ref.rollout.tensor_model_parallel_size=2) ;;
  vanilla|grpo_score|grpo_transfer) SCRIPT=verl/run_vanilla_grpo_deepscaler.sh ;;  # grpo_*: give partner_reward.* keys
  kl_reg) SCRIPT=verl/run_kl_reg_grpo_deepscaler.sh; export KL_COEF="${KL_COEF:-0.001}" ;;
  *) echo "error: RUN must be tandem, tandem_split, vanilla, grpo_score, grpo_transfer or kl_reg, not $RUN" >&2; exit 2 ;;
esac
case "${SMOKE_DEVICE:-cpu}" in
  cpu) source verl/cpu_overrides.sh; DEVICE_ARGS=("${CPU_ARGS[@]}"); GPUS=1; SCALE_ARGS=() ;;
  gpu) DEVICE_ARGS=(); GPUS="${SMOKE_N_GPUS:-1}"
       SCALE_ARGS=(data.max_prompt_length=512 data.max_response_length=512
                   actor_rollout_ref.rollout.max_model_len=1024 actor_rollout_ref.rollout.max_num_batched_tokens=8192
                   actor_rollout_ref.rollout.gpu_memory_utilization=0.5) ;;
  *) echo "error: SMOKE_DEVICE must be cpu or gpu, not $SMOKE_DEVICE" >&2; exit 2 ;;
esac
TP="${SMOKE_ROLLOUT_TP:-1}"
case "$TP" in 1|2) ;; *) echo "error: SMOKE_ROLLOUT_TP must be 1 or 2, not $TP" >&2; exit 2 ;; esac
if [ "$TP" = 2 ] && [ "$RUN" != tandem ]; then
  echo "error: SMOKE_ROLLOUT_TP=2 is for RUN tandem (tandem_split always has 2 ranks), not $RUN" >&2; exit 2
fi
[ "$TP" = 1 ] || PLACEMENT_ARGS=(actor_rollout_ref.rollout.tensor_model_parallel_size=2)
if [ "$RUN" = tandem_split ] || [ "$TP" = 2 ]; then  # two workers (on CPU: two processes, one fake Ray GPU each)
  GPUS=2
  [ "${SMOKE_DEVICE:-cpu}" = gpu ] || DEVICE_ARGS+=(ray_kwargs.ray_init.num_gpus=2 trainer.n_gpus_per_node=2)
fi
SMOKE_ARGS=(
  data.train_files="$OUT/data/deepscaler/train.parquet"
  "data.val_files=[$OUT/data/task_test/test.parquet]"
  data.train_batch_size=8 data.val_batch_size=32 data.dataloader_num_workers=0
  data.max_prompt_length=128 data.max_response_length=64
  actor_rollout_ref.actor.optim.lr=1e-4
  actor_rollout_ref.actor.ppo_mini_batch_size=8 actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=16
  actor_rollout_ref.rollout.log_prob_micro_batch_size_per_gpu=16 actor_rollout_ref.ref.log_prob_micro_batch_size_per_gpu=16
  actor_rollout_ref.rollout.n=4 actor_rollout_ref.rollout.val_kwargs.n=2
  actor_rollout_ref.rollout.max_model_len=256 actor_rollout_ref.rollout.max_num_batched_tokens=2048
  actor_rollout_ref.rollout.max_num_seqs=64
  trainer.save_freq=2 trainer.test_freq=2 trainer.val_before_train=False
  "trainer.logger=[console,file]"
)
DIR="$OUT/$RUN"
mkdir -p "$DIR"
DATA_DIR="$OUT/data" CKPT_DIR="$DIR/ckpt" SENIOR_MODEL="$MODEL" N_GPUS="$GPUS" NAME="$RUN" \
  VERL_FILE_LOGGER_PATH="$DIR/metrics-$N.jsonl" TANDEM_ROLLOUT_TRACE="$DIR/trace.jsonl" \
  TANDEM_PARTNER_TRACE="$DIR/partner.jsonl" \
  TANDEM_ENGINE_REPORT="$DIR/engines-$N.jsonl" \
  exec bash "$SCRIPT" "${DEVICE_ARGS[@]}" "${SMOKE_ARGS[@]}" "${SCALE_ARGS[@]}" "${PLACEMENT_ARGS[@]}" \
  trainer.total_training_steps="$STEPS" hydra.run.dir="$DIR/hydra-$N" "$@"
