"""A junior that follows the senior inside a running engine: `junior_update` on vLLM's parameters.

On verl the trainer's weight sync carries the senior only. After the sync of trainer step
s the trainer asks every rollout worker to apply `tandem.junior_update` for that step's last
optimizer step (`tandem_verl.junior_driver`); each worker applies `tandem.process.junior_update.after_optimizer_step`
to its own shard of the junior and of the senior. A self-paired junior is built from the
senior's own config, so both hold the same parameter names and shapes on every
tensor-parallel rank (fused and sharded the same way): the copy or blend in vLLM's layout
is the one in the HF layout. `JuniorUpdater` also keeps the schedule (each step once, in
order; `through` is the last step applied), hands the junior's state to checkpoints and
restores it at resume, and tells the `JuniorGuard` to re-take its fingerprint after each
scheduled change, so a sync still may not touch the junior.
"""

from __future__ import annotations

import os
from pathlib import Path

import torch

from tandem.errors import TandemError
from tandem.process.junior_update import JuniorUpdate, after_optimizer_step, same_parameters
from vllm_source.junior_guard import JuniorGuard
from vllm_source.weights import FINGERPRINT_CHUNK


def _chunks(t: torch.Tensor):
    flat = t.detach().reshape(-1)
    for start in range(0, flat.numel(), FINGERPRINT_CHUNK):
        yield flat[start : start + FINGERPRINT_CHUNK]


def max_abs_diff(junior: torch.nn.Module, senior: torch.nn.Module) -> float:
    """max |junior - senior| over every parameter (self-paired: the same names and shapes).

    In chunks, as `tensor_sums`: never a float32 copy of a whole tensor on the device.
    """
    seniors = dict(senior.named_parameters())
    worst = None
    for name, j in junior.named_parameters():
        for jc, sc in zip(_chunks(j), _chunks(seniors[name])):
            d = (jc.float() - sc.float()).abs().max()
            worst = d if worst is None else torch.maximum(worst, d)
    return 0.0 if worst is None else float(worst)


def checksum(junior: torch.nn.Module) -> float:
    """The float64 sum of every junior element (the resume check), summed in chunks."""
    total = None
    for p in junior.parameters():
        for chunk in _chunks(p):
            s = chunk.sum(dtype=torch.float64)
            total = s if total is None else total + s
    return 0.0 if total is None else float(total)


class JuniorUpdater:
    """The junior's schedule in one engine worker: a `tandem.process.junior_update.JuniorUpdater` (module docstring)."""

    def __init__(self, rule: JuniorUpdate, junior: torch.nn.Module, senior: torch.nn.Module | None,
                 guard: JuniorGuard, self_paired: bool) -> None:
        self.rule = rule  # parsed once, by the engine's TandemConfig
        self.junior, self.senior, self.guard, self.self_paired = junior, senior, guard, self_paired
        self.through = 0  # the last optimizer step whose update the junior holds (0: none yet)

    def update(self, step: int) -> dict[str, float]:
        """Apply the rule after optimizer step `step` (from 1, the last of a sync); the junior's distance to the
        senior before and after."""
        self._check_can_update()
        if step <= self.through:
            raise TandemError(f"junior_update={self.rule.text}: step {step}'s update asked after step {self.through}'s; "
                              "each step's update is applied once, in order")
        before = max_abs_diff(self.junior, self.senior)
        changed = after_optimizer_step(self.rule, self.junior, self.senior, step)
        self.through = step
        if changed:
            self.guard.rebase()
        return {"step": step, "changed": float(changed), "max_abs_diff_before": before,
                "max_abs_diff_after": max_abs_diff(self.junior, self.senior), "checksum": checksum(self.junior)}

    def state(self) -> dict:
        """What a checkpoint keeps: the rule, the last step applied, the junior's tensors by name (on the host)."""
        self._check_can_update()
        names = [n for n, _ in self.junior.named_parameters()]
        return {"rule": self.rule.text, "through": self.through, "tensors": dict(zip(names, self.guard.current()))}

    def restore(self, state: dict) -> dict[str, float]:
        """Load a checkpoint's junior into the (awake) engine; the guard re-takes its fingerprint."""
        self._check_can_update()
        if state["rule"] != self.rule.text:
            raise TandemError(f"the checkpoint's junior followed junior_update={state['rule']}, this run sets "
                              f"{self.rule.text}; resume with the run's own setting")
        params = dict(self.junior.named_parameters())
        tensors = state["tensors"]
        if tensors.keys() != params.keys() or any(tensors[k].shape != params[k].shape for k in params):
            raise TandemError("the checkpoint's junior does not match this engine's junior in names or shapes "
                              "(another model or another rollout tensor-parallel size?)")
        with torch.no_grad():
            for name, p in params.items():
                p.copy_(tensors[name])
        self.through = int(state["through"])
        self.guard.rebase()
        return {"through": float(self.through), "checksum": checksum(self.junior)}

    def _check_can_update(self) -> None:
        if any(p.numel() == 0 for p in self.junior.parameters()):
            raise TandemError("the junior's linear weights were packed away by vLLM's CPU build; set "
                              "TANDEM_VLLM_CPU_LIVE_WEIGHTS=1 (verl's CPU platform does) so they can be updated")
        if self.rule.frozen:
            raise TandemError("this engine's junior is frozen (tandem.junior_update=frozen): nothing to follow, save "
                              "or restore; set tandem.junior_update to sync:K or ema:BETA")
        if not self.self_paired or self.senior is None:
            raise TandemError(f"junior_update={self.rule.text} needs the senior and its own base as the junior in one "
                              "worker (placement=shared, no other junior_model)")


def state_file(directory: str | os.PathLike, tp_rank: int) -> Path:
    return Path(directory) / f"rank_{tp_rank}.pt"


def save_state(directory: str | os.PathLike, tp_rank: int, tp_size: int, state: dict) -> str:
    """Write one worker's junior state atomically (a temporary file renamed into place)."""
    path = state_file(directory, tp_rank)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp")
    torch.save({**state, "tp_size": tp_size}, tmp)
    os.replace(tmp, path)
    return str(path)


def load_state(directory: str | os.PathLike, tp_rank: int, tp_size: int) -> dict:
    """One worker's junior state from a checkpoint; a missing file or another TP size is one line."""
    path = state_file(directory, tp_rank)
    if not path.is_file():
        raise TandemError(f"{path} is missing: the checkpoint holds no junior for rollout rank {tp_rank} (saved by a "
                          "run with junior_update=frozen?); resume with that run's settings")
    state = torch.load(path, map_location="cpu", weights_only=True)
    if state["tp_size"] != tp_size:
        raise TandemError(f"{path} was saved at rollout tensor-parallel size {state['tp_size']}, this run has "
                          f"{tp_size}; resume with actor_rollout_ref.rollout.tensor_model_parallel_size="
                          f"{state['tp_size']}")
    return state
