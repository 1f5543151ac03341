"""`EngineSettings`: which models a run generates with and how they run, typed and checked once.

Every rollout backend of a run (`tandem_backends.roles.RoleBackends` builds them, one per role)
is made from these fields and nothing else: the eval tools take them from their flags
(the `engine` of `tandem_eval.core.run_config.EvalRun`), `tandem-rlvr rollout` from its own, the embedded
trainer's evaluation, distillation and the benchmarks from their configs.

`backend` names a registry entry (`tandem_backends.registry`); a setting that needs a capability
the backend lacks is refused here, in one line. `tandem` is the team's process, the tandem
config of the role that holds both models. The evaluation's handoff is `handoff_config()`: the
author changes after every step token, the senior first; `tandem-rlvr rollout` gives the one
its flags and `tandem.*=` overrides set.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tandem.process.config import ENGINE_MODES, TandemConfig
from tandem.models.devices import check_device
from tandem.errors import TandemError
from tandem.models.threads import check_threads
from tandem_backends.registry import backend, require

HANDOFF_ROUTES = ("two-engine", "tandem")


def handoff_config() -> TandemConfig:
    """The handoff, exactly: the author changes after every step token, the senior first."""
    return TandemConfig(selection_strategy="step", first_author="senior")


@dataclass(frozen=True)
class EngineSettings:
    """The models of a run and the backend they run on; see the module docstring."""

    senior: str
    junior: str | None = None
    backend: str = "engine"  # a registry entry: engine (the reference engine, CPU or one GPU) or vllm
    tandem: TandemConfig = field(default_factory=handoff_config)
    seed: int = 0  # the vLLM engines' own seed (each request is seeded by the sampling and its key)
    device: str = "cpu"  # engine: where the models are loaded
    dtype: str = "auto"  # engine: float32 on CPU, bfloat16 on GPU; vllm: the checkpoint's
    mode: str = "auto"  # engine: the decoding mode (`tandem.process.config.ENGINE_MODES`)
    batch_size: int = 64  # engine: rows per generate call (vLLM schedules a whole call itself)
    threads: int = 0  # engine: torch CPU threads; 0 = auto, 1 for small models (tandem/models/threads.py)
    gpu_memory_utilization: float | None = None  # vllm: None = 0.85 for one engine, 0.42 each for two
    vllm_handoff: str = "two-engine"  # vllm: how the handoff runs (`HANDOFF_ROUTES`)
    max_model_len: int | None = None  # vllm: the engines' context (None = the model's own)
    allow_vocab_mismatch: bool = False  # the handoff re-tokenises the history text for each model

    def __post_init__(self) -> None:
        entry = backend(self.backend)  # an unknown name: one line naming the valid ones
        if self.vllm_handoff not in HANDOFF_ROUTES:
            raise TandemError(f"unknown handoff route {self.vllm_handoff!r}; choose one of {', '.join(HANDOFF_ROUTES)}")
        if self.mode not in ENGINE_MODES:
            raise TandemError(f"unknown engine mode {self.mode!r}; choose one of {', '.join(ENGINE_MODES)}")
        check_threads(self.threads)
        if self.batch_size < 1:
            raise TandemError(f"--batch-size must be >= 1, got {self.batch_size}")
        if entry.capabilities.takes_device:  # else the backend places its engines itself
            check_device(self.device, "--device")
        if self.tandem.placement == "split":  # the reference engine would silently run both models in place
            require(self.backend, "split_placement", "tandem.placement=split")
        object.__setattr__(self, "senior", str(self.senior))
        object.__setattr__(self, "junior", None if self.junior is None else str(self.junior))

    def engine_dtype(self) -> str:
        """The reference engine's dtype: `dtype`, or for 'auto' float32 on CPU and bfloat16 on GPU."""
        if self.dtype != "auto":
            return self.dtype
        return "float32" if str(self.device) == "cpu" else "bfloat16"
