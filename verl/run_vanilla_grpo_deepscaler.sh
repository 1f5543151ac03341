#!/usr/bin/env bash
# Matched-optimisation GRPO baseline on DeepScaleR: the senior writes every token.
#
# Same hyper-parameters as run_tandem_native_grpo_deepscaler.sh (deepscaler_common.sh);
# the only difference is the tandem switch: stock verl entry point, no `tandem.*` block.
#
#   bash verl/run_vanilla_grpo_deepscaler.sh [extra key=value overrides]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
source "$HERE/deepscaler_common.sh"

NAME=${NAME:-vanilla_grpo_deepscaler_$(basename "$SENIOR_MODEL")}
export WANDB_PROJECT=${WANDB_PROJECT:-vanilla-grpo-deepscaler}

deepscaler_preflight "${COMMON_ARGS[@]}" "$@"
PYTHONUNBUFFERED=1 python -m verl.trainer.main_ppo \
    "${COMMON_ARGS[@]}" \
    trainer.project_name="$WANDB_PROJECT" \
    trainer.experiment_name="$NAME" \
    trainer.default_local_dir="$CKPT_DIR/$NAME" \
    "$@"
