"""`tandem-rlvr sft`: supervised fine-tuning on the task's worked solutions -> the pre-RL base."""

from __future__ import annotations

import argparse

from tandem.train.config import load_config

HELP = "supervised fine-tuning on worked solutions: writes the pre-RL base to OUT/model"


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "sft",
        help=HELP,
        formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=_epilog(),
        description=HELP + ". Every SFTConfig field can be set in "
        "--config or as key=value (e.g. steps=600 task.max_steps=3).",
    )
    p.add_argument("overrides", nargs="*", metavar="KEY=VALUE", help="config overrides, applied after --config")
    p.add_argument("--config", help="YAML or JSON file with SFTConfig fields")
    p.add_argument("--model", help="initial HF model directory (e.g. from `tandem-rlvr build-tiny`)")
    p.add_argument("--out", help="run directory (checkpoints, metrics.jsonl, the base in OUT/model)")
    p.add_argument("--resume", action="store_true", help="continue the run in --out from its last checkpoint")
    p.add_argument("--no-progress", action="store_true", help="no progress bar or per-step console lines")
    p.set_defaults(func=run)


def flag_overrides(args: argparse.Namespace, names: tuple[str, ...]) -> list[str]:
    """Explicit flags win over the config file and key=value overrides."""
    return [f"{n}={getattr(args, n)}" for n in names if getattr(args, n, None) is not None]


def run(args: argparse.Namespace) -> int:
    from tandem.train.sft import SFTConfig, run_sft

    cfg = load_config(SFTConfig, args.config, list(args.overrides) + flag_overrides(args, ("model", "out")))
    summary = run_sft(cfg, resume=args.resume, progress=not args.no_progress)
    print(f"base written to {summary['model']} (validation greedy accuracy {summary['val_greedy_acc']:.3f})")
    return 0


def _epilog() -> str:
    from tandem.train.config import describe_config
    from tandem.train.sft import SFTConfig

    return describe_config(SFTConfig)
