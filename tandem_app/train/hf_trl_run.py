"""A tandem (or GRPO) run with Hugging Face TRL's GRPOTrainer, from a checked TrainConfig.

`run(cfg, flags)` is `scripts/hf_trl_tandem.py` after parsing: `cfg` has passed
`hf_trl_settings.check_settings`, `flags` holds what TrainConfig has no key for (`dataset`,
`split`, `val_split`, `base_steps`, `save_model`).

The model: `model=`, or the zoo's tiny Qwen3 SFT'd for `base_steps` steps on the
one-operation task (`tiny_base`, reused from OUT/base; 0 steps: the random zoo model). The
data: `dataset` (a `datasets` name or a .jsonl/.json/.parquet file with `prompt` and `answer`
columns, `solution` optional), else the synthetic task (`task.*`; with the default model and
task, the tiny base's own task). The tandem part is `tandem_trainer`: the rollout function
passed to `GRPOTrainer(rollout_func=...)` and the project's grader (plus the partner reward)
as reward. Validation: the senior alone, greedy (`hf_grpo.solo_validation`), at the start,
every `val_every` steps and at the end.

Writes OUT/metrics.jsonl (one row per step, under the embedded trainer's metric names;
TRL's optimizer steps are counted back into steps), OUT/summary.json and the logging keys'
sinks, holding OUT's lock; a step whose loss or gradient norm is not finite stops the run
with one line, saving no model.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from types import SimpleNamespace

from hf_grpo.metrics_callback import MetricsCallback
from tandem.errors import RunFailed, RunInterrupted, TandemError
from tandem.io import run_lock
from tandem.io.jsonl import write_json
from tandem.io.legacy import SENIOR_FRACTION_FIELD  # summary.json's field, kept
from tandem.io.metric_log import (LOSS, MEAN_HANDOFFS, SENIOR_TOKEN_FRACTION, TRL_REWARD, TRL_STEP_TIME, VAL_ACCURACY,
                                  read_metrics)
from tandem_app.train.hf_trl_settings import grpo_config, tandem_rollout, updates_per_step

CONSOLE_KEYS = (TRL_REWARD, SENIOR_TOKEN_FRACTION, MEAN_HANDOFFS, LOSS, VAL_ACCURACY, TRL_STEP_TIME)

# --- model and data -----------------------------------------------------------------------


def default_model(out: Path, base_steps: int | None, seed: int, threads: int) -> Path:
    """The zoo's tiny model under OUT/base: SFT'd on the one-operation task, or random with 0 steps."""
    if base_steps == 0:
        from tandem_app.zoo import build_tiny

        init = out / "base" / "random"
        return init if (init / "config.json").is_file() else build_tiny(init, seed=seed)
    from tandem_app.train.tiny_base import TinyBaseConfig, build_tiny_base

    steps = {} if base_steps is None else {"steps": base_steps}
    return build_tiny_base(out / "base", TinyBaseConfig(seed=seed, threads=threads, **steps))


def synthetic_rows(cfg, split: str, n: int) -> list[dict]:
    """`n` problems of the synthetic task: `task.*`, or with the default model and task the tiny base's own task."""
    from tandem_app.task import TaskConfig, generate_problems
    from tandem_app.train.tiny_base import SMOKE_TASK

    task = SMOKE_TASK if not cfg.model and cfg.task == TaskConfig() else cfg.task
    return [{"prompt": [{"role": "user", "content": p.prompt}], "answer": p.answer, "solution": p.solution}
            for p in generate_problems(split, n, cfg.seed, task)]


def load_rows(name: str, split: str) -> list[dict]:
    """A `datasets` split as rows; refuses one without prompt and answer columns."""
    from datasets import disable_progress_bars, load_dataset

    disable_progress_bars()  # one line per problem, not a bar per split
    suffix = Path(name).suffix
    try:
        if suffix in (".jsonl", ".json", ".parquet"):
            ds = load_dataset("parquet" if suffix == ".parquet" else "json", data_files=name, split="train")
        else:
            ds = load_dataset(name, split=split)
    except Exception as e:  # datasets raises many types for a missing or unreadable dataset
        raise TandemError(f"cannot load dataset {name!r} (split {split!r}): {str(e).splitlines()[0]}") from None
    missing = {"prompt", "answer"} - set(ds.column_names)
    if missing:
        raise TandemError(f"dataset {name!r} lacks column(s) {', '.join(sorted(missing))}; it needs prompt and answer "
                          f"(has {', '.join(ds.column_names)})")
    extra = ["solution"] if "solution" in ds.column_names else []
    return [{"prompt": r["prompt"], "answer": str(r["answer"]), **{k: r[k] for k in extra}} for r in ds]


def as_chat(rows: list[dict], tokenizer) -> list[dict]:
    """Text prompts become one user turn when the tokenizer has a chat template (as TRL renders conversations)."""
    if not getattr(tokenizer, "chat_template", None):
        return rows
    return [{**r, "prompt": [{"role": "user", "content": r["prompt"]}]} if isinstance(r["prompt"], str) else r
            for r in rows]


def task_rows(cfg, flags) -> tuple[list[dict], list[dict]]:
    """The training and validation rows: the dataset's (validation held out of --split unless --val-split)."""
    n_val = cfg.n_val_problems
    if flags.dataset is None:
        return synthetic_rows(cfg, "train", cfg.n_train_problems), synthetic_rows(cfg, "validation", n_val)
    train = load_rows(flags.dataset, flags.split)
    if flags.val_split:
        return train, load_rows(flags.dataset, flags.val_split)[:n_val]
    if len(train) <= n_val:
        raise TandemError(f"dataset has {len(train)} rows, not more than n_val_problems={n_val}; "
                          "lower n_val_problems or pass --val-split")
    return train[n_val:], train[:n_val]


# --- the run ------------------------------------------------------------------------------


def run(cfg, flags) -> int:
    """The run under OUT's lock; see the module docstring."""
    from tandem_app.train.log_sinks import check_sinks

    check_sinks(cfg)  # a sink's missing package: one line before the folder exists
    out = Path(cfg.out)
    with run_lock.hold(out):  # one writer per folder
        try:
            return train(cfg, flags, out)
        except KeyboardInterrupt:
            raise RunInterrupted(f"kept {out / 'metrics.jsonl'} (the example saves no checkpoint); "
                                 "the same command starts over") from None


def tandem_trainer(cfg, train_rows: list[dict], tokenizer, senior):
    """The GRPOTrainer with the tandem lines: a rollout function and the grader (and partner reward) as reward."""
    from datasets import Dataset
    from trl import GRPOTrainer

    from hf_grpo import grader_reward

    rollout = tandem_rollout(cfg)
    rewards = [grader_reward, rollout.partner_reward_func()] if cfg.partner_reward.enabled else grader_reward
    trainer = GRPOTrainer(model=senior, reward_funcs=rewards, args=grpo_config(cfg),
                          train_dataset=Dataset.from_list(train_rows), processing_class=tokenizer,
                          rollout_func=rollout)
    rollout.check(trainer)  # every tandem check now, before the first step
    return trainer, rollout


class StepMetrics(MetricsCallback):
    """`hf_grpo`'s MetricsCallback counting steps, not TRL's optimizer steps (`updates_per_step` of them a step)."""

    def __init__(self, logger, rollout, validate, cfg):
        super().__init__(logger, rollout, validate, cfg.val_every, cfg.steps)
        self.per_step = updates_per_step(cfg)

    def on_log(self, args, state, control, logs=None, **kwargs):
        # exact: TRL logs every `per_step` optimizer steps (grpo_config's logging_steps), at a step's end
        steps = SimpleNamespace(global_step=state.global_step // self.per_step)
        return super().on_log(args, steps, control, logs=logs, **kwargs)


def train(cfg, flags, out: Path) -> int:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is TRL-experimental; said in the README
    from hf_grpo import check_trl

    check_trl()
    from transformers.trainer_callback import PrinterCallback

    from hf_grpo.solo_validation import solo_accuracy
    from tandem.models.loading import load_model, load_tokenizer
    from tandem.models.threads import apply_threads
    from tandem_app.train.log_sinks import logger_settings
    from tandem_app.train.metrics import METRICS_NAME, MetricsLogger

    t0 = time.time()
    train_rows, val_rows = task_rows(cfg, flags)
    model_path = cfg.model or str(default_model(out, flags.base_steps, cfg.seed, cfg.threads))
    apply_threads(cfg.threads, [model_path])
    tokenizer = load_tokenizer(model_path)
    senior = load_model(model_path)
    senior.requires_grad_(True)
    train_rows, val_rows = as_chat(train_rows, tokenizer), as_chat(val_rows, tokenizer)
    trainer, rollout = tandem_trainer(cfg, train_rows, tokenizer, senior)

    def validate() -> float:
        return solo_accuracy(trainer, val_rows, cfg.sampling.max_new_tokens)

    logger = MetricsLogger(out / METRICS_NAME, console=True, console_keys=CONSOLE_KEYS,
                           **logger_settings(cfg, out, f"hf-trl-{cfg.method}-{out.name}"))
    val_start = validate()
    print(f"step     0 | val_acc {val_start:.4g} (senior alone, greedy)", flush=True)
    trainer.remove_callback(PrinterCallback)  # TRL's raw log dicts; the logger prints one line per step
    callback = StepMetrics(logger, rollout, validate, cfg)
    trainer.add_callback(callback)
    t_train = time.time()
    try:
        trainer.train()
    finally:
        logger.close()
    if callback.non_finite:
        raise RunFailed(f"{callback.non_finite} is not finite; training stopped there, no model saved; "
                        "lower lr and start a new --out")
    if flags.save_model:
        trainer.save_model(str(out / "model"))
    write_summary(cfg, out, model_path, flags.save_model, val_start, trainer.state.global_step,
                  train_seconds=time.time() - t_train, wall_seconds=time.time() - t0)
    return 0


# --- the summary --------------------------------------------------------------------------


def write_summary(cfg, out: Path, model_path: str, saved: bool, val_start: float, optimizer_steps: int,
                  train_seconds: float, wall_seconds: float) -> None:
    """OUT/summary.json from the last metrics row (the fields `tandem-rlvr train` writes, and TRL's), and its line."""
    rows = read_metrics(out / "metrics.jsonl")
    final = rows[-1][1] if rows else {}
    summary = {
        "phase": "hf-trl", "method": cfg.method, "model": model_path, "steps": cfg.steps,
        "optimizer_steps": optimizer_steps, "val_acc_start": val_start, "grader": "tandem.grading.reward",
        "final_reward": final.get(TRL_REWARD), VAL_ACCURACY: final.get(VAL_ACCURACY),
        SENIOR_FRACTION_FIELD: final.get(SENIOR_TOKEN_FRACTION),
        "saved_model": str(out / "model") if saved else None,
        "train_seconds": train_seconds, "wall_seconds": wall_seconds,
    }
    write_json(out / "summary.json", summary)
    print(f"{cfg.method}: {cfg.steps} steps in {wall_seconds:.1f} s ({train_seconds:.1f} s training); final reward "
          f"{_num(summary['final_reward'])}, validation accuracy {_num(summary[VAL_ACCURACY])}, senior fraction "
          f"{_num(summary[SENIOR_FRACTION_FIELD])}; wrote {out / 'metrics.jsonl'}"
          + (f", the senior in {out / 'model'}" if saved else ""), flush=True)


def _num(value) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "n/a"
