"""`tandem-rlvr train --method tandem|grpo`: GRPO of a senior with tandem or solo rollouts (`trl` = tandem)."""

from __future__ import annotations

from tandem_app.commands.config_args import LOGGING_HELP
from tandem_app.commands.config_command import ConfigCommand, Flag, add_config_command

HELP = "GRPO training of a senior: tandem rollouts with the frozen base as junior (tandem) or solo (grpo)"


def _config_class():
    from tandem_app.train.train_config import TrainConfig

    return TrainConfig


def _epilog() -> str:
    from tandem.io.config_files import describe_config

    return describe_config(_config_class()) + "\n\n" + LOGGING_HELP


def _execute(cfg, args) -> str:
    from tandem.io.legacy import SENIOR_FRACTION_FIELD
    from tandem.io.metric_log import VAL_ACCURACY
    from tandem_app.train.grpo_trainer import GRPOTrainer

    trainer = GRPOTrainer(cfg, progress=not args.no_progress)
    summary = trainer.train(resume=args.resume, trust_unverified=args.trust_unverified)
    return (f"{cfg.method}: {summary['steps']} steps in {summary['wall_seconds']:.0f} s; final reward "
            f"{summary['final_reward']:.3f}, validation accuracy {summary[VAL_ACCURACY]:.3f}, senior fraction "
            f"{summary[SENIOR_FRACTION_FIELD]:.3f}; senior in {summary['model']}")


COMMAND = ConfigCommand(
    "train", HELP, "Every TrainConfig field can be set in --config or as key=value (e.g. steps=80 "
    "loss.junior_token_loss_weight=0.1 loss.clip_ratio_high=0.28).",
    "TrainConfig", _config_class,
    (Flag("method", "tandem: senior + frozen junior co-write (trl is an alias: the paper's Tandem RL); grpo: senior solo",
          choices=("tandem", "trl", "grpo")),
     Flag("model", "the pre-RL base (senior initialisation and, for tandem, the junior)"),
     Flag("out", "run directory (checkpoint.pt, metrics.jsonl, the senior in OUT/model); "
          "`--out DIR --resume` alone continues DIR with the config it saved")),
    _epilog, _execute)


def register(subparsers) -> None:
    add_config_command(subparsers, COMMAND)
