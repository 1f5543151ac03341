#!/usr/bin/env bash
# Tandem RL (TRL) on DeepScaleR: Qwen3-4B-Instruct-2507 senior, self-paired frozen junior.
#
# Every rollout is co-written by the trainable senior and a frozen copy of its pre-RL
# checkpoint (the junior), switching author at word boundaries by a fair coin (at most
# 32 tokens between redraws); the GRPO loss counts senior-written tokens only.
# Hyper-parameters are shared with run_vanilla_grpo_deepscaler.sh (deepscaler_common.sh).
#
#   bash verl/run_tandem_native_grpo_deepscaler.sh [extra key=value overrides]
#
# Needs the GPU image of Dockerfile.repro (verl 0.9.1 + vLLM 0.24 + this package).
# Extra environment: JUNIOR_MODEL (default: the senior's checkpoint, i.e. self-paired).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/deepscaler_common.sh"

JUNIOR_MODEL=${JUNIOR_MODEL:-$SENIOR_MODEL}
NAME=${NAME:-tandem_word_grpo_deepscaler_$(basename "$SENIOR_MODEL")}
export WANDB_PROJECT=${WANDB_PROJECT:-tandem-native-grpo-deepscaler}

TANDEM_ARGS=(
    tandem.enable=True
    tandem.selection_strategy=word       # switch authors at word boundaries (Ġ-prefixed tokens)
    tandem.prob_senior=0.5               # fair coin at each redraw
    tandem.max_gap_tokens=32             # redraw at the latest after 32 tokens without a boundary
    tandem.junior_token_loss_weight=0    # junior-written tokens get no gradient
    tandem.loss_denominator=all_response_tokens  # token-mean over all response tokens, as the release's runs
    tandem.junior_model=$JUNIOR_MODEL
    tandem.seed=0
)

deepscaler_preflight "${COMMON_ARGS[@]}" "${TANDEM_ARGS[@]}" "$@"
PYTHONUNBUFFERED=1 python "$HERE/main_tandem_ppo.py" \
    "${COMMON_ARGS[@]}" \
    "${TANDEM_ARGS[@]}" \
    trainer.project_name="$WANDB_PROJECT" \
    trainer.experiment_name="$NAME" \
    trainer.default_local_dir="$CKPT_DIR/$NAME" \
    "$@"
