"""A GRPO/TRL run in its folder: start or resume, step, validate, log, checkpoint, save, summarise.

The trainer (`grpo_trainer.GRPOTrainer`) knows one step; this file knows the run around it.
It holds OUT's lock throughout; a resume restores the senior, the optimizer and a junior that
follows the senior from the last checkpoint, and the metrics log continues after its step.
Validation is the senior solo (greedy) on held-out problems, at step 0, every `val_every`
steps and at the last. Each save also leaves the senior loadable as `OUT/checkpoint-N/model`
(`hf_checkpoints`), so a run can be evaluated while it runs and after Ctrl-C.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path

from tqdm.auto import tqdm

from tandem.io import run_lock
from tandem.io.config_files import config_to_dict
from tandem.errors import RunFailed, RunInterrupted
from tandem.io.jsonl import write_json
from tandem.io.legacy import SENIOR_FRACTION_FIELD
from tandem.io.metric_log import (
    CLIPFRAC,
    GRAD_NORM,
    LOSS,
    MEAN_HANDOFFS,
    RESPONSE_LENGTH,
    REWARD_MEAN,
    SENIOR_TOKEN_FRACTION,
    TERSE_FRACTION,
    TIME_STEP,
    VAL_ACCURACY,
    read_metrics,
)
from tandem_app.train.checkpoint import (
    kept_words,
    restore_checkpoint,
    save_checkpoint,
    save_pretrained_atomic,
    stopped_words,
)
from tandem_app.train.finite import NonFiniteStep
from tandem_app.train.hf_checkpoints import save_hf_checkpoint
from tandem_app.train.log_sinks import logger_settings
from tandem_app.train.metrics import METRICS_NAME, MetricsLogger
from tandem_app.train.resume import SUMMARY_NAME, start_run

log = logging.getLogger(__name__)

CONSOLE_KEYS = (
    REWARD_MEAN,
    VAL_ACCURACY,
    TERSE_FRACTION,
    SENIOR_TOKEN_FRACTION,
    MEAN_HANDOFFS,
    RESPONSE_LENGTH,
    LOSS,
    CLIPFRAC,
    GRAD_NORM,
    TIME_STEP,
)


def run_grpo(trainer, resume: bool = False, trust_unverified: bool = False) -> dict:
    """Run (or continue) `trainer` (a `GRPOTrainer`) to `cfg.steps` holding OUT's lock; return the summary."""
    with run_lock.hold(trainer.cfg.out):
        return _run(trainer, Path(trainer.cfg.out), resume, trust_unverified)


def _run(trainer, out: Path, resume: bool, trust_unverified: bool) -> dict:
    cfg, config = trainer.cfg, config_to_dict(trainer.cfg)
    start = start_run(out, config, resume, trust_unverified)
    if start.finished is not None:
        return start.finished
    log.info("%s loss settings: %s", cfg.method, cfg.loss.tandem_settings())
    if trainer.progress:
        print(f"{cfg.method}: " + ", ".join(f"loss.{k}={v}" for k, v in cfg.loss.tandem_settings().items()))
    earlier = 0.0  # wall time of the launches before this one, up to their last checkpoint
    if start.state is not None:
        restore_checkpoint(start.state, trainer.senior, trainer.opt, junior=trainer.updating_junior)
        earlier = start.state.get("extra", {}).get("elapsed_s", 0.0)
    logger = MetricsLogger(out / METRICS_NAME, resume_step=start.step if start.state else None,
                           console=trainer.progress, console_keys=CONSOLE_KEYS,
                           **logger_settings(cfg, out, f"{cfg.method}-{out.name}"))
    t0 = time.time()
    try:
        if start.step == 0:
            logger.log(0, {VAL_ACCURACY: trainer.validate()})
        _loop(trainer, out, start.step, logger, lambda: {"config": config, "elapsed_s": earlier + time.time() - t0})
    except KeyboardInterrupt:
        raise RunInterrupted(kept_words(out, logger.last_step, cfg.steps)) from None
    finally:
        logger.close()
    save_pretrained_atomic(trainer.senior, trainer.tokenizer, out / "model")
    summary = _summary(cfg, out, wall=earlier + time.time() - t0, this_launch=time.time() - t0)
    write_json(out / SUMMARY_NAME, summary)
    return summary


def _loop(trainer, out: Path, start: int, logger: MetricsLogger, extra: Callable[[], dict]) -> None:
    cfg = trainer.cfg
    bar = tqdm(range(start, cfg.steps), initial=start, total=cfg.steps, desc=cfg.method, disable=not trainer.progress)
    for step in bar:
        try:
            m = trainer.step(step)
        except NonFiniteStep as e:
            raise RunFailed(f"step {step + 1}: {e.what} is not finite; stopped before the update "
                            f"({stopped_words(out)}); lower lr and start a new --out") from None
        done = step + 1
        if (cfg.val_every and done % cfg.val_every == 0) or done == cfg.steps:
            m[VAL_ACCURACY] = trainer.validate()
        logger.log(done, m)
        bar.set_postfix(reward=f"{m[REWARD_MEAN]:.3f}")
        if done % cfg.save_every == 0 or done == cfg.steps:
            save_checkpoint(out, trainer.senior, trainer.opt, done, extra=extra(), junior=trainer.updating_junior)
            save_hf_checkpoint(trainer.senior, trainer.tokenizer, out, done, cfg.keep_checkpoints)
    bar.close()


def _summary(cfg, out: Path, wall: float, this_launch: float) -> dict:
    """The run's `summary.json`: its last step's numbers, read back from the metrics log (either row form)."""
    final = next(m for step, m in reversed(read_metrics(out / METRICS_NAME)) if step == cfg.steps)
    return {
        "phase": "train",
        "method": cfg.method,
        "steps": cfg.steps,
        "model": str(out / "model"),
        "grader": "tandem.grading.grade",
        "final_reward": final[REWARD_MEAN],  # the verifier's mean reward at the last step
        VAL_ACCURACY: final[VAL_ACCURACY],  # the senior alone, greedy, after the last step
        SENIOR_FRACTION_FIELD: final[SENIOR_TOKEN_FRACTION],  # of the last step's response tokens
        "wall_seconds": wall,  # every launch, each up to its last checkpoint
        "train_seconds": this_launch,  # this launch
    }
