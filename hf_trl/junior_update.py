"""A junior that follows the senior inside TRL's `GRPOTrainer`: `tandem.junior_update` as a callback.

With `tandem.junior_update` `sync:K` or `ema:BETA`, the tandem rollout registers this
`TrainerCallback` on the trainer: after each optimizer step it applies the rule to the
junior (TRL's `global_step` counts optimizer steps, as the rule does), and it saves the
junior's weights in each of TRL's checkpoint directories, so a resumed run continues with
the junior it had.
"""

from __future__ import annotations

import os

import torch

from tandem.errors import TandemError
from tandem.junior_update import after_optimizer_step

JUNIOR_FILE = "tandem_junior.pt"  # the following junior's weights, in each of TRL's checkpoint directories


def JuniorFollowsSenior(rule, junior, senior):
    """A `TrainerCallback` applying `tandem.junior_update` after each optimizer step and checkpointing the junior.

    TRL's `global_step` counts optimizer steps, as the rule does. A run resumed at step N > 0
    reads the junior back from `OUTPUT_DIR/checkpoint-N/tandem_junior.pt` before its first
    step (or when the callback is registered, if that is later).
    """
    from transformers import TrainerCallback

    class _Callback(TrainerCallback):
        def __init__(self):
            self.rule, self.junior, self.senior, self.restored = rule, junior, senior, False

        def restore(self, args, state) -> None:
            if self.restored:
                return
            self.restored = True
            if state.global_step == 0:
                return
            path = os.path.join(args.output_dir, f"checkpoint-{state.global_step}", JUNIOR_FILE)
            if not os.path.isfile(path):
                raise TandemError(f"resuming at step {state.global_step} with tandem.junior_update={self.rule.text}: "
                                  f"the junior's weights are not at {path}; resume from a checkpoint of this run")
            self.junior.load_state_dict(torch.load(path, map_location="cpu", weights_only=True))

        def on_step_begin(self, args, state, control, **kwargs):
            self.restore(args, state)

        def on_step_end(self, args, state, control, **kwargs):
            after_optimizer_step(self.rule, self.junior, self.senior, state.global_step)

        def on_save(self, args, state, control, **kwargs):
            folder = os.path.join(args.output_dir, f"checkpoint-{state.global_step}")
            if state.is_world_process_zero and os.path.isdir(folder):
                tmp = os.path.join(folder, JUNIOR_FILE + ".tmp")
                torch.save(self.junior.state_dict(), tmp)
                os.replace(tmp, os.path.join(folder, JUNIOR_FILE))

    return _Callback()
