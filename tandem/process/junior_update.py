"""How the junior changes during training: `frozen` (the paper), `sync:K` or `ema:BETA`.

The setting is `tandem.junior_update` (`TandemConfig.junior_update`, the same key on every
trainer). Steps are the senior's optimizer steps, counted from 1 over the whole run:

- `frozen`: the junior never changes (the paper: the senior's pre-RL base);
- `sync:K`: after optimizer step s with s % K == 0, junior <- senior (a copy);
- `ema:BETA`: after every optimizer step, junior <- BETA * junior + (1 - BETA) * senior,
  parameter by parameter, in the junior's dtype (BETA in [0, 1); `ema:0` is `sync:1`), which
  must be float32 or wider: in bfloat16 the blend is refused (`ema_precision_error`).

Only a self-paired junior (the senior's own base, same architecture and shapes) can follow
the senior; `check_self_paired` refuses any other pairing in one line. A trainer calls
`after_optimizer_step(update, junior, senior, step)` right after each `optimizer.step()` and
keeps the junior's state in its checkpoints (model_spec/SPEC.md §12) under one name,
`CHECKPOINT_NAME`: the key `junior` of the embedded trainer's `checkpoint.pt`, the file
`junior.pt` in an HF TRL checkpoint, the folder `junior/` in a verl step folder (one file per
tensor-parallel rank); older names are read through `tandem.io.legacy.junior_checkpoint`.
Each backend's driver of the rule implements one Protocol, `JuniorUpdater` (`update(step)`,
`state()`, `restore(state)`): `vllm_source.engine_junior` (one engine worker),
`tandem_verl.junior_driver` (verl's trainer over its rollout workers), `hf_grpo.junior_callback`
(TRL's callback). Each takes the rule parsed once (`TandemConfig.junior_update_rule`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from tandem.errors import TandemError

CHECKPOINT_NAME = "junior"  # the junior update's state in every trainer's checkpoint
FORMS = "frozen, sync:K (an integer K >= 1) or ema:BETA (a number in [0, 1))"


@dataclass(frozen=True)
class JuniorUpdate:
    """A parsed `junior_update` rule; `text` is the setting as written in configs."""

    kind: str = "frozen"
    every: int = 0  # sync: K optimizer steps between copies
    beta: float = 0.0  # ema: the junior's own share after each step

    @property
    def frozen(self) -> bool:
        return self.kind == "frozen"

    @property
    def text(self) -> str:
        short = f"{self.beta:g}"  # as people write it, unless that rounds BETA (then every digit)
        beta = short if float(short) == self.beta else repr(self.beta)
        return {"frozen": "frozen", "sync": f"sync:{self.every}", "ema": f"ema:{beta}"}[self.kind]

    def due(self, step: int) -> bool:
        """Does the junior change after optimizer step `step` (counted from 1)?"""
        if self.kind == "sync":
            return step % self.every == 0
        return self.kind == "ema"


@runtime_checkable
class JuniorUpdater(Protocol):
    """What every backend's driver of a `JuniorUpdate` offers its trainer.

    `update(step)` applies the rule after the trainer's step `step` (from 1, each step once, in
    order): an optimizer step, or on verl a trainer step (its last optimizer step). `state()` is
    what a checkpoint keeps of the junior and `restore(state)` puts it back: the tensors where
    one process holds the junior (engine worker, TRL), or on verl, whose trainer holds no
    weights, where its workers wrote theirs and the step they hold.
    """

    rule: JuniorUpdate

    def update(self, step: int) -> object: ...

    def state(self) -> dict: ...

    def restore(self, state: dict) -> object: ...


def parse_junior_update(text) -> JuniorUpdate:
    """`frozen`, `sync:K` or `ema:BETA` as a `JuniorUpdate`; anything else is one line naming the forms."""
    if not isinstance(text, str):
        raise TandemError(f"junior_update must be {FORMS}, got {text!r}")
    kind, sep, arg = text.strip().partition(":")
    if kind == "frozen" and not sep:
        return JuniorUpdate()
    try:
        if kind == "sync" and sep:
            every = int(arg)
            if every >= 1:
                return JuniorUpdate("sync", every=every)
        if kind == "ema" and sep:
            beta = float(arg)
            if 0.0 <= beta < 1.0:
                return JuniorUpdate("ema", beta=beta)
    except ValueError:
        pass
    raise TandemError(f"junior_update must be {FORMS}, got {text!r}")


def check_self_paired(update: JuniorUpdate, senior_model: str, junior_model: str | None) -> None:
    """Refuse a junior that cannot follow the senior: one named by another model than the senior's base."""
    if update.frozen or not junior_model or junior_model == senior_model:
        return
    raise TandemError(
        f"tandem.junior_update={update.text} makes the junior follow the senior, which needs the senior's own base "
        f"as the junior, but tandem.junior_model={junior_model!r} names another model; drop junior_model or set "
        "junior_update=frozen"
    )


def same_parameters(junior, senior) -> bool:
    """The same parameter names and shapes: a junior that can follow this senior tensor by tensor."""
    juniors, seniors = dict(junior.named_parameters()), dict(senior.named_parameters())
    return juniors.keys() == seniors.keys() and all(juniors[k].shape == seniors[k].shape for k in juniors)


def ema_precision_error(update: JuniorUpdate, dtype: str) -> str:
    """Why `ema` is refused on a junior narrower than float32 (one line)."""
    return (f"junior_update={update.text} on a junior in {dtype.removeprefix('torch.')}: each blend rounds to that "
            "dtype, whose resolution swallows most of (1 - BETA) * (senior - junior) (off by a third to a half of the "
            "junior's distance to the senior after 100 steps, in bfloat16); keep the junior in float32, or use sync:K")


def steps_per_sync_error(update: JuniorUpdate, optimizer_steps: int) -> str | None:
    """Why the rule cannot be honoured where the rollout engine sees the senior once every
    `optimizer_steps` optimizer steps (at each weight sync), or None if it can be, exactly.

    A copy due after optimizer step s takes the senior of step s, so every due step must fall
    on a sync (K a multiple of the steps per sync); a blend takes every step's senior, which
    only one optimizer step per sync delivers.
    """
    if update.kind == "sync" and update.every % optimizer_steps:
        return (f"junior_update={update.text} copies after every {update.every} optimizer steps, but the rollout "
                f"engine sees the senior only every {optimizer_steps}; use sync:K with K a multiple of {optimizer_steps}")
    if update.kind == "ema" and optimizer_steps > 1:
        return (f"junior_update={update.text} blends after every optimizer step, but the rollout engine sees the "
                f"senior only every {optimizer_steps}; make one optimizer step per sync, or use sync:K with K a "
                f"multiple of {optimizer_steps}")
    return None


def after_optimizer_step(update: JuniorUpdate, junior, senior, step: int) -> bool:
    """Apply the rule after optimizer step `step` (from 1) to the junior's parameters in place; True if it changed."""
    if not update.due(step):
        return False
    import torch

    # named_parameters lists a tied tensor (embeddings = output layer) once, so it is blended once
    juniors, seniors = dict(junior.named_parameters()), dict(senior.named_parameters())
    if not same_parameters(junior, senior):
        raise TandemError(f"junior_update={update.text}: the junior's parameters differ from the senior's in name or "
                          "shape; only the senior's own base (self-paired) can follow it")
    narrow = sorted({str(j.dtype) for j in juniors.values() if j.dtype not in (torch.float32, torch.float64)})
    if update.kind == "ema" and narrow:
        raise TandemError(ema_precision_error(update, narrow[0]))
    with torch.no_grad():
        for name, j in juniors.items():
            s = seniors[name].to(j.dtype)
            if update.kind == "sync":
                j.copy_(s)
            else:
                j.mul_(update.beta).add_(s, alpha=1.0 - update.beta)
    return True
