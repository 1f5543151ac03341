"""Tandem RL with Hugging Face TRL's GRPOTrainer: the few lines a TRL user adds, as a runnable example.

    python scripts/hf_trl_tandem.py --out DIR [KEY=VALUE ...]
    python scripts/hf_trl_tandem.py --model Qwen/Qwen3-0.6B --dataset data.jsonl --out DIR steps=100 device=cuda

The settings are `tandem-rlvr train`'s `TrainConfig`, parsed by the CLI's own functions
(`--config FILE`, then `KEY=VALUE`, then `--method`, `--model`, `--out`; every key: `tandem-rlvr
train --help`); what TRL reads of them and what it refuses in one line: `tandem_app.train.hf_trl_settings`.
The flags are what TrainConfig has no key for. The run (by default offline on CPU, the zoo's
tiny model SFT'd on the synthetic task; DIR/metrics.jsonl, DIR/summary.json): `tandem_app.train.hf_trl_run`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
if str(REPO) not in sys.path:  # run as a file from a checkout
    sys.path.insert(0, str(REPO))

from tandem.errors import run_reporting_errors  # noqa: E402
from tandem_app.commands.config_args import add_config_arguments, config_from_args, lazy_epilog  # noqa: E402
from tandem_app.commands.train import COMMAND as TRAIN  # noqa: E402 - `tandem-rlvr train`: its config and flags
from tandem_app.train.hf_trl_settings import READS, check_settings  # noqa: E402

# An earlier version's flags, now config keys: the error names the key.
FLAG_RENAMED = {"--max-steps": "steps", "--prompts-per-step": "prompts_per_step", "--num-generations": "group_size",
                "--max-new-tokens": "sampling.max_new_tokens", "--temperature": "sampling.temperature", "--lr": "lr",
                "--loss-type": "loss.loss_agg_mode", "--prob-senior": "tandem.prob_senior",
                "--selection-strategy": "tandem.selection_strategy", "--n-val": "n_val_problems",
                "--val-every": "val_every", "--seed": "seed", "--threads": "threads", "--wandb": "wandb",
                "--wandb-project": "wandb_project", "--wandb-mode": "wandb_mode", "--junior": "tandem.junior_model"}

FLAG_HELP = {  # where this script differs from `tandem-rlvr train`: no checkpoints, no --resume, a default model
    "model": "any HF causal LM (path or hub name), the senior's start and (for tandem) the junior; default: the zoo's "
             "tiny model, SFT'd (--base-steps)",
    "out": "run directory (metrics.jsonl, summary.json; the default model under OUT/base, reused)",
}


def _non_negative(text: str) -> int:
    if int(text) < 0:
        raise argparse.ArgumentTypeError(f"must be >= 0, got {text}")
    return int(text)


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
    from tandem_app.commands.cli import key_as_flag

    p, argv = build_parser(), sys.argv[1:] if argv is None else list(argv)
    args, extra = p.parse_known_args(argv)
    overrides = [w for w in extra if "=" in w and not w.startswith("-")]
    if overrides != extra:
        word = next(w for w in extra if w not in overrides)
        key = FLAG_RENAMED.get(word.partition("=")[0])
        hint = (f"{word.partition('=')[0]} is now the config key {key}: use {key}=VALUE" if key
                else key_as_flag(args, extra, argv))
        p.error(f"unrecognized arguments: {' '.join(extra)}" + (f"; {hint}" if hint else ""))
    args.overrides = [*args.overrides, *overrides]
    return args


def settings(args: argparse.Namespace):
    """The run's TrainConfig, built and validated once (the CLI's parsing), then checked against what TRL honours."""
    cfg = config_from_args(TRAIN.config_class(), args, TRAIN.config_flags)
    check_settings(cfg, args.dataset)
    return cfg


def run(args: argparse.Namespace) -> int:
    from tandem_app.train.hf_trl_run import run as run_trl  # torch and TRL load once the settings pass
    return run_trl(settings(args), args)


def main(argv=None) -> int:
    return run_reporting_errors(run, parse_args(argv))


if __name__ == "__main__":
    raise SystemExit(main())
