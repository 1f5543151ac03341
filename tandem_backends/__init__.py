"""The rollout backends' floor: one registry of engines, the settings a run builds them from, its backends by role.

- `tandem_backends.registry`: one entry per backend ('engine': the reference engine,
  `tandem.reference.engine.TandemEngine`; 'vllm': `vllm_source.engine.VLLMEngine`), each declaring its
  capabilities, so that callers ask the registry (`require`) instead of comparing names.
- `tandem_backends.settings`: `EngineSettings`, a run's models and the backend they run on, typed.
- `tandem_backends.roles`: `RoleBackends`, each role's backend (senior, junior, team) built on first use.

Every caller that builds an engine goes through this floor; the eval (`tandem_eval.core.backends`) adds
its solo and handoff generation on top. Importing it loads neither torch nor vLLM (`--help` stays fast).
"""
