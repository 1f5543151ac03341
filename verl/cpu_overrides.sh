# Overrides that run either DeepScaleR launcher on CPU with verl's CPU platform (sourced, not run).
#
# For CI, laptops and debugging with tiny models; scripts/scale_smoke.sh uses them. Export
# the environment and append the array to a launcher's arguments:
#
#   source verl/cpu_overrides.sh
#   bash verl/run_tandem_native_grpo_deepscaler.sh "${CPU_ARGS[@]}" [more key=value ...]
#
# The platform itself (device `cpu`, gloo, shims) is verl/tandem_verl/cpu_platform.py.

export VERL_PLATFORM=cpu               # select the CPU platform ...
# ... which verl imports in each of its processes from this list (verl/__init__.py), nowhere else
export VERL_USE_EXTERNAL_MODULES="${VERL_USE_EXTERNAL_MODULES:+$VERL_USE_EXTERNAL_MODULES,}tandem_verl.cpu_platform"
export VERL_ENGINE_DEVICE=cuda         # verl's FSDP engine registers for cuda/npu only; its code then uses `cpu`
export VLLM_TARGET_DEVICE=cpu          # vLLM's CPU backend
export VLLM_CPU_KVCACHE_SPACE="${VLLM_CPU_KVCACHE_SPACE:-1}"       # GiB of KV cache per engine
export VLLM_CPU_OMP_THREADS_BIND="${VLLM_CPU_OMP_THREADS_BIND:-nobind}"
export OMP_NUM_THREADS="${OMP_NUM_THREADS:-1}"   # unset, vLLM's CPU build decoded 30-40x slower here

CPU_ARGS=(
    # --- Ray: one fake GPU stands for one worker slot (verl indexes Ray's GPU ids) ----------
    +ray_kwargs.ray_init.num_gpus=1
    trainer.device=cpu
    trainer.n_gpus_per_node=1
    # --- actor: FSDP2 in float32, no flash-attn, no compile, no offload ---------------------
    actor_rollout_ref.actor.strategy=fsdp2                # FSDP1 hard-codes sync_module_states (needs a GPU)
    actor_rollout_ref.actor.fsdp_config.strategy=fsdp2
    actor_rollout_ref.actor.fsdp_config.dtype=float32
    '++actor_rollout_ref.actor.fsdp_config.mixed_precision={param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}'
    actor_rollout_ref.actor.fsdp_config.param_offload=False
    actor_rollout_ref.actor.fsdp_config.optimizer_offload=False
    # --- reference policy (the KL ablation): FSDP2 in float32 like the actor, so KL(actor || ref) starts at 0
    actor_rollout_ref.ref.fsdp_config.strategy=fsdp2
    actor_rollout_ref.ref.fsdp_config.dtype=float32
    '++actor_rollout_ref.ref.fsdp_config.mixed_precision={param_dtype:fp32,reduce_dtype:fp32,buffer_dtype:fp32}'
    actor_rollout_ref.actor.use_torch_compile=False
    actor_rollout_ref.actor.use_dynamic_bsz=False
    actor_rollout_ref.model.use_remove_padding=False      # remove-padding needs flash-attn
    actor_rollout_ref.model.enable_gradient_checkpointing=False
    ++actor_rollout_ref.model.override_config.attn_implementation=sdpa   # also deepscaler_common.sh's
    # --- rollout: vLLM's CPU backend, float32, never asleep ----------------------------------
    actor_rollout_ref.rollout.dtype=float32
    actor_rollout_ref.rollout.free_cache_engine=False
    +actor_rollout_ref.rollout.enable_sleep_mode=False    # vLLM has no sleep mode on CPU
    actor_rollout_ref.rollout.log_prob_use_dynamic_bsz=False
    # --- fewer processes: each one imports torch, verl and vLLM ------------------------------
    actor_rollout_ref.rollout.agent.num_workers=1
    reward.num_workers=1
    transfer_queue.backend.SimpleStorage.num_data_storage_units=1
    +ray_kwargs.ray_init.include_dashboard=False
)
