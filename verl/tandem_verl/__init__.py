"""The verl backend: tandem training on verl 0.9.1, its classes and its config wiring.

- `wiring` (`apply_tandem`): the Hydra config checked and pointed at the tandem classes, from
  `tandem_block` (the `tandem:` block), `refusals`, `partner_score_wiring` and `names` (the
  names verl finds our classes by); `gate`: the senior gate on verl's loss masks. No GPU, no
  Ray: CPU-tested.
- `reward`: verl's `compute_score`, bridged to `tandem.grading.grade`.
- `agent_loop`, `workers`, `trainer`, `replica`, `vllm_worker`: the verl classes the wiring
  selects (agent loop, actor worker, trainer and task runner, vLLM replica, vLLM worker
  extension), with the trainer's `checkpoint_tracker` (crash-safe checkpoints),
  `junior_update` (a junior that follows the senior), `partner_score` and `padding_rows`.
  They import verl's rollout stack, so import them where verl is installed.
- `cpu_platform`: verl's `cpu` platform, loaded only where `verl/cpu_overrides.sh` names it.

Installed as the package `tandem_verl` (mapped from this folder by pyproject.toml) so the
launchers' folder `verl/` never shadows verl itself. See model_spec/SCALE.md.
"""
