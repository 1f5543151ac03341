"""A junior that follows the senior inside TRL's `GRPOTrainer`: `tandem.junior_update` as a callback.

With `tandem.junior_update` `sync:K` or `ema:BETA`, the tandem rollout registers a
`JuniorUpdater` on the trainer. After each optimizer step it applies the rule to the junior
(TRL's `global_step` counts optimizer steps, as the rule does); at each of TRL's saves it
writes the junior's weights to `checkpoint-N/junior.pt` (`tandem.process.junior_update.CHECKPOINT_NAME`),
so a run resumed at step N > 0 reads its junior back before its first step (or when the
callback is registered, if that is later). A checkpoint of an earlier version holds the
junior under its old file name, read through `tandem.io.legacy.junior_checkpoint`.
"""

from __future__ import annotations

import os

import torch
from transformers import TrainerCallback

from tandem.io import legacy
from tandem.errors import TandemError
from tandem.process.junior_update import CHECKPOINT_NAME, JuniorUpdate, after_optimizer_step

CHECKPOINT_FILE = CHECKPOINT_NAME + ".pt"  # the junior's weights in each of TRL's checkpoint directories


def checkpoint_folder(args, state) -> str:
    """TRL's checkpoint directory of the trainer's current step."""
    return os.path.join(args.output_dir, f"checkpoint-{state.global_step}")


class JuniorUpdater(TrainerCallback):
    """Drives the junior update of one trainer; see the module docstring.

    `update(step)`, `state()` and `restore(state)` are `tandem.process.junior_update.JuniorUpdater`'s;
    `resume(args, trainer_state)` is TRL's side: it finds the checkpoint of a resumed run and
    hands its tensors to `restore`.
    """

    def __init__(self, rule: JuniorUpdate, junior: torch.nn.Module, senior: torch.nn.Module) -> None:
        self.rule, self.junior, self.senior = rule, junior, senior
        self.restored = False  # a resumed run reads its junior once, before its first step

    def update(self, step: int) -> bool:
        """Apply the rule after optimizer step `step` (from 1); True if the junior changed."""
        return after_optimizer_step(self.rule, self.junior, self.senior, step)

    def state(self) -> dict:
        """What a checkpoint keeps: the junior's tensors by name (its live state_dict, as `junior.pt` holds them)."""
        return self.junior.state_dict()

    def save(self, folder: str) -> None:
        """Write the junior to `folder/junior.pt`, whole or not at all."""
        tmp = os.path.join(folder, CHECKPOINT_FILE + ".tmp")
        torch.save(self.state(), tmp)
        os.replace(tmp, os.path.join(folder, CHECKPOINT_FILE))

    def restore(self, state: dict) -> None:
        """Load a junior's tensors by name (what `state()` gave); refuse another model's in one line."""
        mine = self.junior.state_dict()
        if state.keys() != mine.keys() or any(state[k].shape != mine[k].shape for k in mine):
            raise TandemError(f"tandem.junior_update={self.rule.text}: the checkpoint's junior differs from this run's "
                              "junior in tensor names or shapes; resume from a checkpoint of this run")
        self.junior.load_state_dict(state)

    def resume(self, args, trainer_state) -> None:
        """At a resumed run's first step, restore the junior its checkpoint holds; refuse a checkpoint without one."""
        if self.restored:  # once per run: later steps' juniors are this run's own
            return
        self.restored = True
        if trainer_state.global_step == 0:
            return
        path = legacy.junior_checkpoint(checkpoint_folder(args, trainer_state), CHECKPOINT_FILE)
        if not path.is_file():
            step = trainer_state.global_step
            raise TandemError(f"resuming at step {step} with tandem.junior_update={self.rule.text}: "
                              f"the junior's weights are not at {path}; resume from a checkpoint of this run")
        self.restore(torch.load(path, map_location="cpu", weights_only=True))

    def on_step_begin(self, args, state, control, **kwargs):
        self.resume(args, state)

    def on_step_end(self, args, state, control, **kwargs):
        self.update(state.global_step)

    def on_save(self, args, state, control, **kwargs):
        folder = checkpoint_folder(args, state)
        if state.is_world_process_zero and os.path.isdir(folder):
            self.save(folder)
