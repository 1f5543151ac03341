"""Tandem RL with Hugging Face TRL's GRPOTrainer: the few lines a TRL user adds, as a runnable example.

    python scripts/hf_trl_tandem.py --out DIR [--max-steps 20]
    python scripts/hf_trl_tandem.py --model Qwen/Qwen3-0.6B --dataset data.jsonl --max-steps 100 --out DIR

By default it runs offline on CPU: the zoo's tiny Qwen3 model, SFT'd for `--base-steps`
steps on the one-operation synthetic task (`tandem_app.train.tiny_base`, reused from
DIR/base), trained on that task. Otherwise `--model` is any Hugging Face causal LM the
reference engine runs (Qwen3, Qwen2, Llama, Mistral) and `--dataset` a `datasets`
dataset (a hub name or a local .jsonl/.json/.parquet file) with a `prompt` column (text
or chat messages) and an `answer` column.

The tandem part is three lines (see `tandem_trainer`): build the rollout function, pass it
to `GRPOTrainer(rollout_func=...)`, and score with the project's grader. The junior is a
frozen copy of the senior before training (the paper's self-paired junior) unless
`--junior` names another model of the same vocabulary. Validation: the senior alone,
greedy, graded by the same grader (at the start, every `--val-every` steps, at the end).

Writes DIR/metrics.jsonl (one line per step under the shared metric names, as the embedded
trainer's: `step`, `reward`, `senior_token_fraction`, `loss`, `mean_handoffs`, ...; `val_acc`
on validation steps; `tandem.io.metric_log.read_metrics` reads it), DIR/summary.json (final reward,
validation accuracy, senior fraction, wall time), and with `--wandb` an offline wandb run
under DIR. The run holds DIR's lock (`tandem.io.run_lock`: a second process on DIR is
refused); numeric flags must be finite, and a step whose loss or gradient norm is not
finite stops the run with one line, saving no model (`hf_grpo.metrics_callback`; validation
is `hf_grpo.solo_validation`).
"""

from __future__ import annotations

import argparse
import math
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a file from a checkout
    sys.path.insert(0, str(REPO))

from tandem.io import run_lock  # noqa: E402
from tandem.process.config import TandemConfig  # noqa: E402
from tandem.errors import RunFailed, RunInterrupted, TandemError, run_reporting_errors  # noqa: E402
from tandem.io.jsonl import write_json  # noqa: E402
from tandem.io.legacy import SENIOR_FRACTION_FIELD  # noqa: E402 - summary.json's field, kept
from tandem.io.metric_log import (  # noqa: E402
    LOSS,
    MEAN_HANDOFFS,
    SENIOR_TOKEN_FRACTION,
    TRL_REWARD,
    TRL_STEP_TIME,
    VAL_ACCURACY,
    read_metrics,
)

METHODS = ("tandem", "grpo")
CONSOLE_KEYS = (TRL_REWARD, SENIOR_TOKEN_FRACTION, MEAN_HANDOFFS, LOSS, VAL_ACCURACY, TRL_STEP_TIME)


# --- the arguments ------------------------------------------------------------------------


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path, help="run directory (metrics.jsonl, summary.json)")
    p.add_argument("--model", help="HF causal LM (path or hub name); default: the zoo's tiny model, SFT'd")
    p.add_argument("--dataset", help="datasets name or .jsonl/.json/.parquet file with prompt and answer columns; "
                                     "default: the synthetic task")
    p.add_argument("--split", default="train", help="dataset split to train on (default: %(default)s)")
    p.add_argument("--val-split", help="dataset split for validation (default: the first --n-val rows of --split, "
                                       "held out of training)")
    p.add_argument("--junior", help="the frozen junior (default: a frozen copy of the senior before training)")
    p.add_argument("--method", default="tandem", choices=METHODS,
                   help="tandem: senior and junior co-write; grpo: the senior alone (default: %(default)s)")
    p.add_argument("--max-steps", type=int, default=20, help="optimizer steps (default: %(default)s)")
    p.add_argument("--prompts-per-step", type=int, default=8, help="prompts per step (default: %(default)s)")
    p.add_argument("--num-generations", type=int, default=4, help="responses per prompt (default: %(default)s)")
    p.add_argument("--max-new-tokens", type=int, default=64, help="max_completion_length (default: %(default)s)")
    p.add_argument("--temperature", type=float, default=1.0)
    p.add_argument("--lr", type=float, default=3e-5, help="learning rate (default: %(default)s)")
    p.add_argument("--loss-type", default="dapo", help="TRL loss_type; dapo and bnpo normalise by senior tokens "
                                                       "(model_spec/SPEC.md) (default: %(default)s)")
    p.add_argument("--prob-senior", type=float, default=TandemConfig.prob_senior,
                   help="P(senior) at each coin redraw (default: %(default)s)")
    p.add_argument("--selection-strategy", default=TandemConfig.selection_strategy, help="tandem selection strategy (default: %(default)s)")
    p.add_argument("--n-val", type=int, default=32, help="validation problems (default: %(default)s)")
    p.add_argument("--val-every", type=int, default=0, help="validate every N steps; 0 = start and end only")
    p.add_argument("--base-steps", type=int, default=150,
                   help="SFT steps of the default tiny base (0: the random zoo model, for smoke tests)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads; 0 = torch's default")
    p.add_argument("--wandb", action="store_true", help="log to wandb (offline unless --wandb-mode online)")
    p.add_argument("--wandb-project", default="tandem-rlvr")
    p.add_argument("--wandb-mode", default="offline")
    p.add_argument("--save-model", action="store_true", help="save the trained senior to DIR/model")
    return p.parse_args(argv)


def check_args(a) -> None:
    """Every numeric flag finite, and in its range; one error line naming the flag."""
    for flag in ("lr", "temperature", "prob_senior"):
        if not math.isfinite(getattr(a, flag)):
            raise TandemError(f"--{flag.replace('_', '-')} must be a finite number, got {getattr(a, flag)}")
    if a.max_steps < 1 or a.prompts_per_step < 1 or a.num_generations < 2:
        raise TandemError("--max-steps and --prompts-per-step must be >= 1 and --num-generations >= 2")
    if not a.lr > 0 or a.temperature < 0 or a.max_new_tokens < 1 or a.n_val < 1:
        raise TandemError(f"--lr must be > 0 (got {a.lr}), --temperature >= 0 (got {a.temperature}), "
                          f"--max-new-tokens and --n-val >= 1 (got {a.max_new_tokens}, {a.n_val})")
    if min(a.val_every, a.base_steps, a.threads) < 0:
        raise TandemError("--val-every, --base-steps and --threads must be >= 0")


# --- model and data -----------------------------------------------------------------------


def default_model(out: Path, base_steps: int, seed: int, threads: int) -> Path:
    """The zoo's tiny model under OUT/base: SFT'd on the one-operation task, or random with 0 steps."""
    if base_steps <= 0:
        from tandem_app.zoo import build_tiny

        init = out / "base" / "random"
        return init if (init / "config.json").is_file() else build_tiny(init, seed=seed)
    from tandem_app.train.tiny_base import TinyBaseConfig, build_tiny_base

    return build_tiny_base(out / "base", TinyBaseConfig(seed=seed, steps=base_steps, threads=threads))


def synthetic_rows(split: str, n: int, seed: int) -> list[dict]:
    from tandem_app.task import generate_problems
    from tandem_app.train.tiny_base import SMOKE_TASK

    return [{"prompt": [{"role": "user", "content": p.prompt}], "answer": p.answer}
            for p in generate_problems(split, n, seed, SMOKE_TASK)]


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
    return [{"prompt": r["prompt"], "answer": str(r["answer"])} for r in ds]


def as_chat(rows: list[dict], tokenizer) -> list[dict]:
    """Text prompts become one user turn when the tokenizer has a chat template (as TRL renders conversations)."""
    if not getattr(tokenizer, "chat_template", None):
        return rows
    return [{**r, "prompt": [{"role": "user", "content": r["prompt"]}]} if isinstance(r["prompt"], str) else r
            for r in rows]


def task_rows(a) -> tuple[list[dict], list[dict]]:
    if a.dataset is None:
        return synthetic_rows("train", 4096, a.seed), synthetic_rows("validation", a.n_val, a.seed)
    train = load_rows(a.dataset, a.split)
    if a.val_split:
        return train, load_rows(a.dataset, a.val_split)[: a.n_val]
    if len(train) <= a.n_val:
        raise TandemError(f"dataset has {len(train)} rows, not more than --n-val {a.n_val}; "
                          "lower --n-val or pass --val-split")
    return train[a.n_val:], train[: a.n_val]


# --- the run ------------------------------------------------------------------------------


def run(a) -> int:
    check_args(a)
    with run_lock.hold(a.out):  # one writer per folder
        try:
            return train(a)
        except KeyboardInterrupt:
            raise RunInterrupted(f"kept {a.out / 'metrics.jsonl'} (the example saves no checkpoint); "
                                 "the same command starts over") from None


def tandem_trainer(a, train_rows: list[dict], tokenizer, senior):
    """The GRPOTrainer with the tandem lines: a rollout function and the grader as reward."""
    import torch
    from datasets import Dataset
    from trl import GRPOConfig, GRPOTrainer

    from hf_grpo import grader_reward, tandem_rollout_func

    tandem = TandemConfig(selection_strategy=a.selection_strategy, prob_senior=a.prob_senior, seed=a.seed)
    rollout = tandem_rollout_func(junior=a.junior, tandem_config=tandem, solo=a.method == "grpo")
    args = GRPOConfig(
        output_dir=str(a.out / "trl"), per_device_train_batch_size=a.prompts_per_step * a.num_generations,
        num_generations=a.num_generations, max_completion_length=a.max_new_tokens, temperature=a.temperature,
        learning_rate=a.lr, loss_type=a.loss_type, max_steps=a.max_steps, logging_steps=1, save_strategy="no",
        report_to=[], seed=a.seed, use_cpu=not torch.cuda.is_available(), bf16=torch.cuda.is_available(),
        disable_tqdm=True,
    )
    trainer = GRPOTrainer(model=senior, reward_funcs=grader_reward, args=args,
                          train_dataset=Dataset.from_list(train_rows), processing_class=tokenizer,
                          rollout_func=rollout)
    rollout.check(trainer)  # every tandem check now, before the first step
    return trainer, rollout


def metrics_logger(a):
    from tandem_app.train.metrics import MetricsLogger

    wandb = None
    if a.wandb:
        wandb = dict(project=a.wandb_project, run_dir=str(a.out), config=vars(a) | {"out": str(a.out)},
                     mode=a.wandb_mode, name=f"hf-trl-{a.method}-{a.out.name}")
    return MetricsLogger(a.out / "metrics.jsonl", console=True, console_keys=CONSOLE_KEYS, wandb=wandb)


def train(a) -> int:
    import torch

    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is TRL-experimental; said in the README
    if a.threads:
        torch.set_num_threads(a.threads)
    from hf_grpo import check_trl

    check_trl()
    from transformers.trainer_callback import PrinterCallback

    from hf_grpo.metrics_callback import MetricsCallback
    from hf_grpo.solo_validation import solo_accuracy
    from tandem.models.loading import load_model, load_tokenizer

    t0 = time.time()
    train_rows, val_rows = task_rows(a)
    model_path = a.model or str(default_model(a.out, a.base_steps, a.seed, a.threads))
    tokenizer = load_tokenizer(model_path)
    senior = load_model(model_path)
    senior.requires_grad_(True)
    train_rows, val_rows = as_chat(train_rows, tokenizer), as_chat(val_rows, tokenizer)
    trainer, rollout = tandem_trainer(a, train_rows, tokenizer, senior)

    def validate() -> float:
        return solo_accuracy(trainer, val_rows, a.max_new_tokens)

    logger = metrics_logger(a)
    val_start = validate()
    print(f"step     0 | val_acc {val_start:.4g} (senior alone, greedy)", flush=True)
    trainer.remove_callback(PrinterCallback)  # TRL's raw log dicts; the logger prints one line per step
    callback = MetricsCallback(logger, rollout, validate, a.val_every, a.max_steps)
    trainer.add_callback(callback)
    t_train = time.time()
    try:
        trainer.train()
    finally:
        logger.close()
    if callback.non_finite:
        raise RunFailed(f"{callback.non_finite} is not finite; training stopped there, no model saved; "
                        "lower --lr and start a new --out")
    if a.save_model:
        trainer.save_model(str(a.out / "model"))
    write_summary(a, model_path, val_start, train_seconds=time.time() - t_train, wall_seconds=time.time() - t0)
    return 0


# --- the summary --------------------------------------------------------------------------


def write_summary(a, model_path: str, val_start: float, train_seconds: float, wall_seconds: float) -> None:
    """DIR/summary.json from the last metrics row, and its one console line."""
    out = a.out
    rows = read_metrics(out / "metrics.jsonl")
    final = rows[-1][1] if rows else {}
    summary = {
        "phase": "hf-trl", "method": a.method, "model": model_path, "steps": a.max_steps,
        "val_acc_start": val_start, "grader": "tandem.grading.reward",
        "final_reward": final.get(TRL_REWARD), VAL_ACCURACY: final.get(VAL_ACCURACY),
        SENIOR_FRACTION_FIELD: final.get(SENIOR_TOKEN_FRACTION),
        "saved_model": str(out / "model") if a.save_model else None,
        "train_seconds": train_seconds, "wall_seconds": wall_seconds,
    }
    write_json(out / "summary.json", summary)
    print(f"{a.method}: {a.max_steps} steps in {wall_seconds:.1f} s ({train_seconds:.1f} s "
          f"training); final reward {_num(summary['final_reward'])}, validation accuracy {_num(summary[VAL_ACCURACY])}, "
          f"senior fraction {_num(summary[SENIOR_FRACTION_FIELD])}; wrote {out / 'metrics.jsonl'}"
          + (f", the senior in {out / 'model'}" if a.save_model else ""), flush=True)


def _num(value) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "n/a"


def main(argv=None) -> int:
    return run_reporting_errors(run, parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
