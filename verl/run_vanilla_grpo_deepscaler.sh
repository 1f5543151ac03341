#!/usr/bin/env bash
# Matched-optimisation GRPO baseline on DeepScaleR: the senior writes every token.
#
# Same hyper-parameters as run_tandem_native_grpo_deepscaler.sh (deepscaler_common.sh);
# the only difference is the tandem switch: stock verl entry point, no `tandem.*` block.
# With partner_reward.weight>0 (RLT's setting: the base scores the senior) it runs through
# verl/main_tandem_ppo.py with tandem.enable=False, which composes that section.
#
#   bash verl/run_vanilla_grpo_deepscaler.sh [extra key=value overrides]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/deepscaler_common.sh"

NAME=${NAME:-vanilla_grpo_deepscaler_$(basename "$SENIOR_MODEL")}
export WANDB_PROJECT=${WANDB_PROJECT:-vanilla-grpo-deepscaler}

deepscaler_preflight "${COMMON_ARGS[@]}" "$@"
grpo_entry "$@"
PYTHONUNBUFFERED=1 python "${GRPO_ENTRY[@]}" \
    "${COMMON_ARGS[@]}" \
    trainer.project_name="$WANDB_PROJECT" \
    trainer.experiment_name="$NAME" \
    trainer.default_local_dir="$CKPT_DIR/$NAME" \
    "$@"
