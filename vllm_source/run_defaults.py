"""The engine settings a run's vLLM engines get unless it sets them: each engine's memory share, eager on CPU.

A run holds one engine (a solo run, or the tandem engine holding both models) or two side by
side (the handoff's two engines taking turns, the senior's and the junior's); on a GPU each
takes its share of the memory, or the fraction the run asks for. On vLLM's CPU build the
engines run eager: torch.compile costs more start-up than it saves on the short runs made
there (the tests, the demo's tiny models), and the memory fraction does not apply.
"""

from __future__ import annotations

ONE_ENGINE_MEMORY = 0.85  # a run's one engine
TWO_ENGINE_MEMORY = 0.42  # each of two engines side by side


def run_engine_kwargs(engines: int, gpu_memory_utilization: float | None = None, platform: str | None = None) -> dict:
    """`vllm.LLM` keywords for one of a run's `engines` engines (1 or 2) on `platform` (None: this vLLM's)."""
    if platform is None:
        from vllm_source.runtime import vllm_platform

        platform = vllm_platform()
    if platform == "cpu":
        return {"enforce_eager": True}
    share = ONE_ENGINE_MEMORY if engines == 1 else TWO_ENGINE_MEMORY
    return {"gpu_memory_utilization": gpu_memory_utilization or share}
