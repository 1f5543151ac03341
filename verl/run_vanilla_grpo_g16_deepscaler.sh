#!/usr/bin/env bash
# Ablation: the GRPO baseline with 16 responses per prompt (the release's train/grpo_g16.sh).
#
# A tandem rollout runs two models over every sequence; this arm gives the solo baseline
# a comparable rollout budget. The only difference from run_vanilla_grpo_deepscaler.sh is
# actor_rollout_ref.rollout.n=16 (instead of 8), and the run's name.
#
#   bash verl/run_vanilla_grpo_g16_deepscaler.sh [extra key=value overrides]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/deepscaler_common.sh"

NAME=${NAME:-vanilla_grpo_g16_deepscaler_$(basename "$SENIOR_MODEL")}
export WANDB_PROJECT=${WANDB_PROJECT:-vanilla-grpo-deepscaler}

ARGS=()
for a in "${COMMON_ARGS[@]}"; do
    [[ $a == actor_rollout_ref.rollout.n=* ]] || ARGS+=("$a")
done

grpo_entry "$@"
PYTHONUNBUFFERED=1 python "${GRPO_ENTRY[@]}" \
    "${ARGS[@]}" \
    actor_rollout_ref.rollout.n=16 \
    trainer.project_name="$WANDB_PROJECT" \
    trainer.experiment_name="$NAME" \
    trainer.default_local_dir="$CKPT_DIR/$NAME" \
    "$@"
