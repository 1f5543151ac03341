"""vLLM's builders (`vllm_source.engine.VLLMEngine`, a GPU or vLLM's CPU build): the 'vllm' entry.

`build` makes one engine over model paths: the tandem engine when given a junior, else the
senior's own engine (solo only). `build_role` makes a run's role with the defaults vLLM's
backend sets for a run's engines (`vllm_source.run_defaults`: each engine's memory share, eager
on CPU): 'team' is the tandem engine, 'senior' and 'junior' solo engines with prefix caching
(the two-engine handoff re-sends each turn's growing history).
"""

from __future__ import annotations

from dataclasses import replace

def build(senior, junior=None, tandem=None, *, dtype: str = "float32", **vllm_kwargs):
    """A `VLLMEngine` over the paths; `dtype` and `vllm_kwargs` go to `vllm.LLM`; the junior is `junior`."""
    from tandem.process.config import TandemConfig
    from vllm_source.engine import VLLMEngine

    cfg = None if junior is None else replace(tandem or TandemConfig(), junior_model=str(junior))
    return VLLMEngine(str(senior), cfg, dtype=dtype, **vllm_kwargs)


def build_role(roles, role: str):
    """The engine of `role` for `roles` (a `RoleBackends`: not annotated, as it imports the registry that
    imports this module); the run holds one engine (solo, or the team) or two (senior and junior)."""
    from vllm_source.run_defaults import run_engine_kwargs
    from vllm_source.runtime import require_vllm

    require_vllm(device=True)  # one clear line before any engine starts
    s = roles.settings
    engines = 1 if s.junior is None or role == "team" else 2
    kwargs = dict(dtype=s.dtype, seed=s.seed, **run_engine_kwargs(engines, s.gpu_memory_utilization))
    if s.max_model_len is not None:
        kwargs["max_model_len"] = s.max_model_len
    if role == "team":
        return roles.entry.build(s.senior, s.junior, s.tandem, **kwargs)
    path = s.senior if role == "senior" else s.junior
    return roles.entry.build(path, enable_prefix_caching=True, **kwargs)
