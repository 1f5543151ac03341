"""Adapters that plug the tandem process into external training stacks (verl 0.9.1, Hugging Face TRL 1.16).

- `hf_trl`: a `rollout_func` for TRL's `GRPOTrainer` over the reference engine (CPU-tested).
- `verl_tandem`: config, the senior gate on verl's loss masks, and the Hydra-config wiring
  (no GPU, no Ray: CPU-tested).
- `verl_reward`: verl's `compute_score`, bridged to `tandem.grading.grade`.
- `verl_agent_loop`, `verl_workers`, `verl_trainer`, `verl_rollout`: the verl classes the
  wiring selects (agent loop, actor worker, trainer and task runner, vLLM replica). They
  import verl's GPU stack, so import them only where verl[vllm] is installed.

See model_spec/SCALE.md.
"""
