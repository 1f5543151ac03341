#!/usr/bin/env bash
# Ablation: GRPO with a KL penalty toward the frozen pre-RL base (the release's train/kl_reg.sh).
#
# Solo rollouts as in run_vanilla_grpo_deepscaler.sh, plus a per-token KL term in the
# loss toward the reference policy, which verl loads from actor_rollout_ref.model.path:
# the base, the same model the tandem run uses as its junior. The arm separates "stays
# near the base" from "co-writes with a partner" as explanations of the tandem effect.
# Differences from the vanilla launcher, the whole list:
#   actor.use_kl_loss=True             (this is what makes verl start the reference worker)
#   actor.kl_loss_coef=$KL_COEF        required: the swept beta, e.g. 0.001
#   actor.kl_loss_type=$KL_LOSS_TYPE   default low_var_kl (the k3 estimator)
#   ref.fsdp_config.param_offload=True (the reference weights wait in host memory)
# algorithm.use_kl_in_reward stays False: a loss regulariser, not reward shaping.
#
#   KL_COEF=0.001 bash verl/run_kl_reg_grpo_deepscaler.sh [extra key=value overrides]
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
: "${KL_COEF:?set KL_COEF, the KL loss coefficient (the swept beta, e.g. KL_COEF=0.001)}"
source "$HERE/deepscaler_common.sh"

KL_LOSS_TYPE=${KL_LOSS_TYPE:-low_var_kl}   # kl | abs | mse | low_var_kl | full
NAME=${NAME:-kl_reg_grpo_deepscaler_$(basename "$SENIOR_MODEL")_b$(echo "$KL_COEF" | tr '.' 'p')}
export WANDB_PROJECT=${WANDB_PROJECT:-vanilla-grpo-deepscaler}

KL_ARGS=(
    actor_rollout_ref.actor.use_kl_loss=True
    actor_rollout_ref.actor.kl_loss_coef=$KL_COEF
    actor_rollout_ref.actor.kl_loss_type=$KL_LOSS_TYPE
    actor_rollout_ref.ref.fsdp_config.param_offload=True
)
# The shared list says use_kl_loss=False; leave that entry out rather than override it.
ARGS=()
for a in "${COMMON_ARGS[@]}"; do
    [[ $a == actor_rollout_ref.actor.use_kl_loss=* ]] || ARGS+=("$a")
done

PYTHONUNBUFFERED=1 python -m verl.trainer.main_ppo \
    "${ARGS[@]}" \
    "${KL_ARGS[@]}" \
    trainer.project_name="$WANDB_PROJECT" \
    trainer.experiment_name="$NAME" \
    trainer.default_local_dir="$CKPT_DIR/$NAME" \
    "$@"
