# Shared hyper-parameters of the DeepScaleR runs (sourced by both launchers; not run alone).
#
# run_tandem_native_grpo_deepscaler.sh and run_vanilla_grpo_deepscaler.sh pass exactly
# this list; the tandem launcher adds only the `tandem.*` block and its entry point.
# Settings come from the paper (section 4.1) and the released launchers; where those two
# launchers disagreed (GPU count, param offload, save/test frequency, resume mode) one
# value is used for both runs here (model_spec/SCALE.md lists each choice).
#
# Environment (all optional):
#   DATA_DIR      parquet files from scripts/prepare_deepscaler.py  (default $HOME/data/tandem)
#   CKPT_DIR      checkpoints                                        (default $HOME/checkpoints/tandem)
#   SENIOR_MODEL  the trainable senior                               (default Qwen/Qwen3-4B-Instruct-2507)
#   N_GPUS        GPUs on this node                                  (default 2)
#   VAL_SET       what validation (and the best-checkpoint rule) reads (default benchmarks):
#                 benchmarks = AMC 23-25, AIME 24-26, Minerva at VAL_N=4, as the release's
#                 older launchers (the documented best-checkpoint rule, pass@4, needs n >= 4);
#                 heldout = the 1,000 DeepScaleR rows prepare_deepscaler.py holds out, at
#                 VAL_N=1, as its newest launchers (no reported benchmark picks the checkpoint)
#   VAL_N         responses per validation problem (default: 4 or 1, as above)
#   WANDB_API_KEY or WANDB_MODE=offline   enable the wandb logger (console only otherwise)
#
# A launcher calls `deepscaler_preflight "${COMMON_ARGS[@]}" ... "$@"` before its entry point:
# it exits with one line when the actor's attention implementation cannot be imported.

DEEPSCALER_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
deepscaler_preflight() { python "$DEEPSCALER_DIR/preflight.py" "$@"; }
# The GRPO launchers run verl's stock entry point; a run that asks for the partner score
# (partner_reward.*: RLT's setting, a GRPO run scored by its base) needs ours, which composes
# that section and runs verl's sync trainer plus the score (tandem.enable=False).
grpo_entry() {
    GRPO_ENTRY=(-m verl.trainer.main_ppo)
    local a
    for a in "$@"; do
        case "$a" in partner_reward.*) GRPO_ENTRY=("$DEEPSCALER_DIR/main_tandem_ppo.py" tandem.enable=False) ;; esac
    done
}
# Both arms decode on vLLM's V1 model runner, the one the tandem model needs (vllm 0.24 would
# otherwise put plain Qwen3 on V2; vllm_source/model_runner.py). Ray workers on this node inherit it;
# on a multi-node cluster export it on every node. The preflight refuses a V2 request.
export VLLM_USE_V2_MODEL_RUNNER="${VLLM_USE_V2_MODEL_RUNNER:-0}"

DATA_DIR=${DATA_DIR:-$HOME/data/tandem}
CKPT_DIR=${CKPT_DIR:-$HOME/checkpoints/tandem}
SENIOR_MODEL=${SENIOR_MODEL:-Qwen/Qwen3-4B-Instruct-2507}
N_GPUS=${N_GPUS:-2}
VAL_SET=${VAL_SET:-benchmarks}
case "$VAL_SET" in
    benchmarks) VAL_FILES="[$DATA_DIR/amc_23_25/test.parquet,$DATA_DIR/aime_24_26/test.parquet,$DATA_DIR/minerva/test.parquet]"
                VAL_N=${VAL_N:-4} ;;
    heldout) VAL_FILES="[$DATA_DIR/deepscaler/heldout.parquet]"; VAL_N=${VAL_N:-1} ;;
    *) echo "error: VAL_SET must be benchmarks or heldout, not $VAL_SET" >&2; exit 2 ;;
esac

if [ -n "${WANDB_API_KEY:-}" ] || [ "${WANDB_MODE:-}" = "offline" ]; then
    LOGGERS="[console,wandb]"
else
    LOGGERS="[console]"
fi

COMMON_ARGS=(
    # --- algorithm: GRPO, no KL anywhere, no entropy bonus ---------------------------
    algorithm.adv_estimator=grpo
    algorithm.norm_adv_by_std_in_grpo=True
    algorithm.use_kl_in_reward=False
    actor_rollout_ref.actor.use_kl_loss=False
    actor_rollout_ref.actor.entropy_coeff=0
    actor_rollout_ref.actor.loss_agg_mode=token-mean
    # --- data: DeepScaleR train; validation per VAL_SET ----------------------------------
    data.train_files=$DATA_DIR/deepscaler/train.parquet
    "data.val_files=$VAL_FILES"
    data.train_batch_size=16              # prompts per step
    data.max_prompt_length=1024
    data.max_response_length=3000
    data.filter_overlong_prompts=True
    data.truncation=error
    # --- the senior (actor): FSDP, lr 1e-6 ---------------------------------------------
    actor_rollout_ref.model.path=$SENIOR_MODEL
    actor_rollout_ref.model.use_remove_padding=True
    actor_rollout_ref.model.enable_gradient_checkpointing=True
    # sdpa as released: verl's default is flash_attention_2, which verl[vllm] does not install
    ++actor_rollout_ref.model.override_config.attn_implementation=sdpa
    actor_rollout_ref.actor.strategy=fsdp
    actor_rollout_ref.actor.optim.lr=1e-6
    actor_rollout_ref.actor.ppo_mini_batch_size=8     # prompts per optimiser step (x n responses)
    actor_rollout_ref.actor.ppo_micro_batch_size_per_gpu=8
    actor_rollout_ref.actor.use_dynamic_bsz=True
    actor_rollout_ref.actor.ppo_max_token_len_per_gpu=10000
    actor_rollout_ref.actor.fsdp_config.param_offload=False
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=True
    actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=True
    # --- rollout: vLLM, 8 responses per prompt at temperature 0.6 ------------------------
    actor_rollout_ref.rollout.name=vllm
    actor_rollout_ref.rollout.mode=async
    actor_rollout_ref.rollout.n=8
    actor_rollout_ref.rollout.temperature=0.6
    actor_rollout_ref.rollout.tensor_model_parallel_size=1
    actor_rollout_ref.rollout.data_parallel_size=1
    actor_rollout_ref.rollout.pipeline_model_parallel_size=1
    actor_rollout_ref.rollout.gpu_memory_utilization=0.80
    actor_rollout_ref.rollout.free_cache_engine=True
    actor_rollout_ref.rollout.enforce_eager=True      # as released; CUDA graphs untested with two models
    actor_rollout_ref.rollout.load_format=auto        # the tandem engine loads the junior's weights at start
    # --- validation: solo senior at temperature 0.6, VAL_N samples (pass@4 needs 4) ----
    actor_rollout_ref.rollout.val_kwargs.n=$VAL_N
    actor_rollout_ref.rollout.val_kwargs.do_sample=True
    actor_rollout_ref.rollout.val_kwargs.temperature=0.6
    actor_rollout_ref.rollout.val_kwargs.top_p=0.95
    # --- reward: the team's final answer graded by tandem_eval.grade -------------------
    reward.reward_manager.name=naive
    reward.reward_model.enable=False
    reward.custom_reward_function.path=pkg://tandem_verl.reward
    reward.custom_reward_function.name=compute_score
    # --- trainer ------------------------------------------------------------------------
    "trainer.logger=$LOGGERS"
    trainer.n_gpus_per_node=$N_GPUS
    trainer.nnodes=1
    trainer.total_epochs=2
    trainer.save_freq=20
    trainer.test_freq=20
    trainer.val_before_train=False
    trainer.log_val_generations=10
    trainer.resume_mode=auto
    trainer.max_actor_ckpt_to_keep=1
    trainer.max_critic_ckpt_to_keep=1
    ray_kwargs.ray_init.num_cpus=16
)
