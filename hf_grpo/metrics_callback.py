"""TRL's step logs as metrics rows under the shared names, and a stop at a non-finite step.

TRL logs the tandem statistics under `tandem.io.metric_log.TANDEM_PREFIX`
(`"tandem/senior_token_fraction"`, ...) beside its own metrics. `MetricsCallback` hands
each logged training step to a metrics logger (`log(step, metrics)`, e.g.
`tandem_app.train.metrics.MetricsLogger`) under the names the embedded trainer's
`metrics.jsonl` uses, the prefix dropped (`shared_names`), so one reader
(`tandem.io.metric_log.read_metrics`) serves both. It validates on the steps asked for, and a
step whose loss or gradient norm is not finite stops training, saying which step and what
in `non_finite`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping

from transformers import TrainerCallback

from tandem.io.metric_log import GRAD_NORM, LOSS, SENIOR_TOKEN_FRACTION, TANDEM_PREFIX, TRL_REWARD, VAL_ACCURACY


def shared_names(logs: Mapping) -> dict:
    """The numeric entries of a TRL log under the shared metric names (the `tandem/` prefix dropped)."""
    return {k.removeprefix(TANDEM_PREFIX): v for k, v in logs.items() if isinstance(v, (int, float))}


class MetricsCallback(TrainerCallback):
    """One metrics row per logged training step (set `logging_steps=1` for one per step); see the module docstring.

    rollout: the trainer's `TandemRolloutFunc`, whose `last_stats` fills a row TRL logged
    without the senior token fraction; validate: returns the validation accuracy, logged as
    `val_acc` every `val_every` steps (0: never) and at `max_steps`.
    """

    def __init__(self, logger, rollout, validate: Callable[[], float], val_every: int = 0, max_steps: int = 0):
        self.logger, self.rollout, self.validate = logger, rollout, validate
        self.val_every, self.max_steps = val_every, max_steps
        self.non_finite: str | None = None  # "step N: loss nan", once a step was not finite

    def on_log(self, args, state, control, logs=None, **kwargs):
        if not logs or TRL_REWARD not in logs:  # the end-of-training summary line
            return
        row = shared_names(logs)
        row.setdefault(SENIOR_TOKEN_FRACTION, self.rollout.last_stats.senior_token_fraction)
        step = state.global_step
        bad = {k: row[k] for k in (LOSS, GRAD_NORM) if k in row and not math.isfinite(row[k])}
        if bad:
            self.non_finite = f"step {step}: " + ", ".join(f"{k} {v}" for k, v in bad.items())
            control.should_training_stop = True
        if (self.val_every and step % self.val_every == 0) or step == self.max_steps:
            row[VAL_ACCURACY] = self.validate()
        self.logger.log(step, row)
