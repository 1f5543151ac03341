"""Tandem RL with Hugging Face TRL's GRPOTrainer: the few lines a TRL user adds, as a runnable example.

    python scripts/hf_trl_tandem.py --out DIR [KEY=VALUE ...]
    python scripts/hf_trl_tandem.py --model Qwen/Qwen3-0.6B --dataset data.jsonl --out DIR steps=100 device=cuda

The settings are `tandem-rlvr train`'s, parsed by the CLI's own functions into its one typed
`TrainConfig` (`--config FILE`, then `KEY=VALUE` overrides, then `--method`, `--model`, `--out`;
every key and its default: `tandem-rlvr train --help`), and mapped onto TRL's `GRPOConfig` by
`grpo_config` (the keys it reads: `READS`). A key TRL cannot honour that the config changes
from its default is refused in one line (`check_settings`), never ignored: TRL takes one
optimizer step per generation batch (ppo_epochs, ppo_mini_batches), keeps no checkpoints
(save_every, keep_checkpoints), and its loss has no dual clip, entropy bonus or junior-token
weight. The flags are what TrainConfig has no key for (`--dataset`, `--split`, `--val-split`,
`--base-steps`, `--save-model`).

By default it runs offline on CPU: the zoo's tiny Qwen3 model, SFT'd for `--base-steps`
steps on the one-operation synthetic task (`tandem_app.train.tiny_base`, reused from
DIR/base), trained on that task (`task.*` chooses another). Otherwise `model=` is any
Hugging Face causal LM the reference engine runs (Qwen3, Qwen2, Llama, Mistral) and
`--dataset` a `datasets` dataset (a hub name or a local .jsonl/.json/.parquet file) with a
`prompt` column (text or chat messages) and an `answer` column (and `solution`, for
`partner_reward.writer_sees_solution`).

The tandem part is three lines (see `tandem_trainer`): build the rollout function, pass it
to `GRPOTrainer(rollout_func=...)`, and score with the project's grader (plus the partner
reward when `partner_reward.weight` > 0). The junior is a frozen copy of the senior before
training (the paper's self-paired junior) unless `tandem.junior_model` names another model
of the same vocabulary. Validation: the senior alone, greedy, graded by the same grader (at
the start, every `val_every` steps, at the end).

Writes DIR/metrics.jsonl (one line per step under the shared metric names, as the embedded
trainer's: `step`, `reward`, `senior_token_fraction`, `loss`, `mean_handoffs`, ...; `val_acc`
on validation steps; `tandem.io.metric_log.read_metrics` reads it), DIR/summary.json (final
reward, validation accuracy, senior fraction, wall time), and the logging keys' sinks (wandb,
tensorboard). The run holds DIR's lock (`tandem.io.run_lock`: a second process on DIR is
refused); a step whose loss or gradient norm is not finite stops the run with one line,
saving no model (`hf_grpo.metrics_callback`; validation is `hf_grpo.solo_validation`).
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a file from a checkout
    sys.path.insert(0, str(REPO))

from tandem.errors import RunFailed, RunInterrupted, TandemError, run_reporting_errors  # noqa: E402
from tandem.io import run_lock  # noqa: E402
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
from tandem_app.commands.config_args import add_config_arguments, config_from_args, lazy_epilog  # noqa: E402
from tandem_app.commands.train import COMMAND as TRAIN  # noqa: E402 - `tandem-rlvr train`: its config and flags

CONSOLE_KEYS = (TRL_REWARD, SENIOR_TOKEN_FRACTION, MEAN_HANDOFFS, LOSS, VAL_ACCURACY, TRL_STEP_TIME)

# --- the settings: TrainConfig -> GRPOConfig ----------------------------------------------

# The TrainConfig keys this script reads (a section: every key in it), each mapped in `grpo_config`,
# `tandem_rollout` or `train`. Any other key set to other than its default is refused (`NOT_READ`).
READS = ("method", "model", "out", "seed", "steps", "prompts_per_step", "group_size", "lr", "warmup_steps",
         "weight_decay", "grad_clip", "adv_estimator", "norm_adv_by_std", "n_train_problems", "n_val_problems",
         "val_every", "engine_mode", "device", "threads", "wandb", "wandb_project", "wandb_mode", "metrics_format",
         "tensorboard", "tensorboard_dir", "sampling", "tandem", "loss.loss_agg_mode", "loss.loss_denominator",
         "loss.clip_ratio", "loss.clip_ratio_low", "loss.clip_ratio_high", "task", "partner_reward")
# loss.loss_agg_mode -> TRL's loss_type (with the authorship mask as TRL's tool_mask every mode counts senior tokens)
LOSS_TYPES = {"token-mean": "dapo", "seq-mean-token-mean": "grpo", "seq-mean-token-sum-norm": "dr_grpo"}
# A read key that TRL runs with some values only: the values, and why.
ONLY = {
    "adv_estimator": (("grpo",), "TRL's advantage is GRPO's group-normalised one"),
    "loss.loss_agg_mode": (tuple(LOSS_TYPES), "TRL's loss types"),
    "loss.loss_denominator": (("senior_tokens",), "TRL's tool_mask drops junior tokens from the denominator too"),
    "device": (("cpu", "cuda"), "accelerate places the model; pick the GPU with CUDA_VISIBLE_DEVICES"),
}
ONE_STEP = "TRL takes one optimizer step per generation batch here"
NOT_READ = {  # why each key TRL does not honour is refused when changed
    "ppo_epochs": ONE_STEP, "ppo_mini_batches": ONE_STEP,
    "adv_epsilon": "TRL's advantage divides by std + 1e-4",
    "save_every": "this script keeps no checkpoints; --save-model saves the final senior",
    "keep_checkpoints": "this script keeps no checkpoints; --save-model saves the final senior",
    "loss.junior_token_loss_weight": "TRL's tool_mask gives junior tokens no gradient",
    "loss.policy_loss": "TRL's GRPO loss is the clipped (vanilla) one",
    "loss.clip_ratio_c": "TRL's loss has no dual clip",
    "loss.entropy_coeff": "TRL's GRPO loss has no entropy bonus",
    "loss.use_kl_loss": "TRL's beta is not wired here", "loss.kl_loss_coef": "TRL's beta is not wired here",
    "loss.kl_loss_type": "TRL's beta is not wired here",
    "tandem.senior_architecture": "a vLLM key; the reference engine reads the model's own config",
}
FLAG_RENAMED = {"--max-steps": "steps", "--prompts-per-step": "prompts_per_step", "--num-generations": "group_size",
                "--max-new-tokens": "sampling.max_new_tokens", "--temperature": "sampling.temperature", "--lr": "lr",
                "--loss-type": "loss.loss_agg_mode", "--prob-senior": "tandem.prob_senior",
                "--selection-strategy": "tandem.selection_strategy", "--n-val": "n_val_problems",
                "--val-every": "val_every", "--seed": "seed", "--threads": "threads", "--wandb": "wandb",
                "--wandb-project": "wandb_project", "--wandb-mode": "wandb_mode", "--junior": "tandem.junior_model"}


def _reads(key: str) -> bool:
    return key not in NOT_READ and any(key == r or key.startswith(r + ".") for r in READS)


def check_settings(cfg, dataset: str | None = None) -> None:
    """Everything TRL cannot honour of `cfg` (a built, valid TrainConfig), in one line, before any model loads."""
    from tandem.io.config_files import config_diff, config_to_dict
    from tandem.trainers import require, require_partner_reward

    changed = config_diff(config_to_dict(cfg), config_to_dict(type(cfg)()))
    unread = [k for k in changed if not _reads(k)]
    if unread:
        raise TandemError("HF TRL cannot honour " + "; ".join(
            f"{k}={_value(cfg, k)} ({NOT_READ.get(k, 'not read by scripts/hf_trl_tandem.py')})" for k in unread)
            + "; leave " + ("it" if len(unread) == 1 else "them") + " at the default")
    for key, (values, why) in ONLY.items():
        if _value(cfg, key) not in values:
            raise TandemError(f"HF TRL cannot honour {key}={_value(cfg, key)} ({why}); use {' or '.join(values)}")
    if dataset and (synthetic := [k for k in changed if k == "n_train_problems" or k.startswith("task.")]):
        raise TandemError(f"{', '.join(synthetic)} set the synthetic task, but --dataset {dataset} is the task; "
                          "drop one")
    require_partner_reward("hf_trl", cfg.partner_reward)
    require("hf_trl", "junior_update_kinds", cfg.tandem.junior_update_rule.kind)
    require("hf_trl", "placements", cfg.tandem.placement)
    if not cfg.out:
        raise TandemError("no run directory: pass --out DIR")


def _value(cfg, key: str):
    for part in key.split("."):
        cfg = getattr(cfg, part)
    return cfg


def grpo_config(cfg):
    """TRL's GRPOConfig from a TrainConfig: every GRPOConfig field the run sets, from the keys in READS."""
    from trl import GRPOConfig

    s, loss = cfg.sampling, cfg.loss
    low = loss.clip_ratio if loss.clip_ratio_low is None else loss.clip_ratio_low
    high = loss.clip_ratio if loss.clip_ratio_high is None else loss.clip_ratio_high
    return GRPOConfig(
        output_dir=str(Path(cfg.out) / "trl"), max_steps=cfg.steps, seed=cfg.seed,
        per_device_train_batch_size=cfg.prompts_per_step * cfg.group_size, num_generations=cfg.group_size,
        learning_rate=cfg.lr, lr_scheduler_type="constant_with_warmup", warmup_steps=cfg.warmup_steps,
        weight_decay=cfg.weight_decay, max_grad_norm=cfg.grad_clip,
        scale_rewards="group" if cfg.norm_adv_by_std else "none", loss_type=LOSS_TYPES[loss.loss_agg_mode],
        epsilon=low, epsilon_high=high,
        temperature=s.temperature, top_p=s.top_p, top_k=s.top_k, max_completion_length=s.max_new_tokens,
        use_cpu=cfg.device == "cpu", bf16=cfg.device != "cpu",
        logging_steps=1, save_strategy="no", report_to=[], disable_tqdm=True,
    )


def tandem_rollout(cfg):
    """The rollout function: the tandem section, the sampling section (stop strings and ids too), the partner reward."""
    from hf_grpo import tandem_rollout_func

    return tandem_rollout_func(tandem_config=cfg.tandem, sampling=cfg.sampling, engine_mode=cfg.engine_mode,
                               solo=not cfg.is_tandem, partner_reward=cfg.partner_reward)


# --- the arguments ------------------------------------------------------------------------


FLAG_HELP = {  # where this script differs from `tandem-rlvr train`: no checkpoints, no --resume, a default model
    "model": "any HF causal LM (path or hub name), the senior's start and (for tandem) the junior; default: the zoo's "
             "tiny model, SFT'd (--base-steps)",
    "out": "run directory (metrics.jsonl, summary.json; the default model under OUT/base, reused)",
}


def _non_negative(text: str) -> int:
    n = int(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {n}")
    return n


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    lazy_epilog(p, lambda: __doc__ + "\n" + TRAIN.epilog() + "\n\nread by HF TRL: " + ", ".join(READS))
    add_config_arguments(p, TRAIN.config_name, TRAIN.config_class)
    for flag in TRAIN.flags:  # --method, --model, --out: the CLI's flags, each setting its key when given
        p.add_argument(f"--{flag.name}", help=FLAG_HELP.get(flag.name, flag.help),
                       **({"choices": flag.choices} if flag.choices else {}))
    p.add_argument("--dataset", help="datasets name or .jsonl/.json/.parquet file with prompt and answer columns; "
                                     "default: the synthetic task (task.*)")
    p.add_argument("--split", default="train", help="dataset split to train on (default: %(default)s)")
    p.add_argument("--val-split", help="dataset split for validation (default: the first n_val_problems rows of "
                                       "--split, held out of training)")
    p.add_argument("--base-steps", type=_non_negative,
                   help="SFT steps of the default tiny base (default: tandem_app.train.tiny_base.TinyBaseConfig's; "
                        "0: the random zoo model, for smoke tests)")
    p.add_argument("--save-model", action="store_true", help="save the trained senior to OUT/model")
    return p


def parse_args(argv=None) -> argparse.Namespace:
    """The flags; `KEY=VALUE` words anywhere join the overrides; a retired flag names its key."""
    from tandem_app.commands.cli import _key_as_flag

    p = build_parser()
    argv = sys.argv[1:] if argv is None else list(argv)
    args, extra = p.parse_known_args(argv)
    overrides = [w for w in extra if "=" in w and not w.startswith("-")]
    if overrides != extra:
        word = next(w for w in extra if w not in overrides)
        key = FLAG_RENAMED.get(word.partition("=")[0])
        hint = (f"{word.partition('=')[0]} is now the config key {key}: use {key}=VALUE" if key
                else _key_as_flag(args, extra, argv))
        p.error(f"unrecognized arguments: {' '.join(extra)}" + (f"; {hint}" if hint else ""))
    args.overrides = [*args.overrides, *overrides]
    return args


def settings(args: argparse.Namespace):
    """The run's TrainConfig, built and validated once (the CLI's parsing), then checked against what TRL honours."""
    cfg = config_from_args(TRAIN.config_class(), args, TRAIN.config_flags)
    check_settings(cfg, args.dataset)
    return cfg


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


def task_rows(cfg, a) -> tuple[list[dict], list[dict]]:
    n_val = cfg.n_val_problems
    if a.dataset is None:
        return synthetic_rows(cfg, "train", cfg.n_train_problems), synthetic_rows(cfg, "validation", n_val)
    train = load_rows(a.dataset, a.split)
    if a.val_split:
        return train, load_rows(a.dataset, a.val_split)[:n_val]
    if len(train) <= n_val:
        raise TandemError(f"dataset has {len(train)} rows, not more than n_val_problems={n_val}; "
                          "lower n_val_problems or pass --val-split")
    return train[n_val:], train[:n_val]


# --- the run ------------------------------------------------------------------------------


def run(a) -> int:
    cfg = settings(a)
    from tandem_app.train.log_sinks import check_sinks

    check_sinks(cfg)  # a sink's missing package: one line before the folder exists
    out = Path(cfg.out)
    with run_lock.hold(out):  # one writer per folder
        try:
            return train(cfg, a, out)
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


def train(cfg, a, out: Path) -> int:
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is TRL-experimental; said in the README
    from hf_grpo import check_trl

    check_trl()
    from transformers.trainer_callback import PrinterCallback

    from hf_grpo.metrics_callback import MetricsCallback
    from hf_grpo.solo_validation import solo_accuracy
    from tandem.models.loading import load_model, load_tokenizer
    from tandem.models.threads import apply_threads
    from tandem_app.train.log_sinks import logger_settings
    from tandem_app.train.metrics import METRICS_NAME, MetricsLogger

    t0 = time.time()
    train_rows, val_rows = task_rows(cfg, a)
    model_path = cfg.model or str(default_model(out, a.base_steps, cfg.seed, cfg.threads))
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
    callback = MetricsCallback(logger, rollout, validate, cfg.val_every, cfg.steps)
    trainer.add_callback(callback)
    t_train = time.time()
    try:
        trainer.train()
    finally:
        logger.close()
    if callback.non_finite:
        raise RunFailed(f"{callback.non_finite} is not finite; training stopped there, no model saved; "
                        "lower lr and start a new --out")
    if a.save_model:
        trainer.save_model(str(out / "model"))
    write_summary(cfg, out, model_path, a.save_model, val_start, train_seconds=time.time() - t_train,
                  wall_seconds=time.time() - t0)
    return 0


# --- the summary --------------------------------------------------------------------------


def write_summary(cfg, out: Path, model_path: str, saved: bool, val_start: float, train_seconds: float,
                  wall_seconds: float) -> None:
    """DIR/summary.json from the last metrics row (the fields `tandem-rlvr train` writes, and TRL's), and its line."""
    rows = read_metrics(out / "metrics.jsonl")
    final = rows[-1][1] if rows else {}
    summary = {
        "phase": "hf-trl", "method": cfg.method, "model": model_path, "steps": cfg.steps,
        "val_acc_start": val_start, "grader": "tandem.grading.reward",
        "final_reward": final.get(TRL_REWARD), VAL_ACCURACY: final.get(VAL_ACCURACY),
        SENIOR_FRACTION_FIELD: final.get(SENIOR_TOKEN_FRACTION),
        "saved_model": str(out / "model") if saved else None,
        "train_seconds": train_seconds, "wall_seconds": wall_seconds,
    }
    write_json(out / "summary.json", summary)
    print(f"{cfg.method}: {cfg.steps} steps in {wall_seconds:.1f} s ({train_seconds:.1f} s "
          f"training); final reward {_num(summary['final_reward'])}, validation accuracy {_num(summary[VAL_ACCURACY])}, "
          f"senior fraction {_num(summary[SENIOR_FRACTION_FIELD])}; wrote {out / 'metrics.jsonl'}"
          + (f", the senior in {out / 'model'}" if saved else ""), flush=True)


def _num(value) -> str:
    return f"{value:.3f}" if isinstance(value, (int, float)) else "n/a"


def main(argv=None) -> int:
    return run_reporting_errors(run, parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
