"""The one template of the commands that run a typed config (`sft`, `train`, `distill`).

Such a command is a `ConfigCommand`: its name and help, the config class (imported only when
asked, so a mistyped flag answers without torch), the flags that set the config's fields, the
epilog that lists its keys, and `execute(cfg, args)`, which runs it and returns the final line.
The template adds the arguments every such command shares (`config_args`), continues
`--out DIR --resume` with the config the run saved, and turns an interruption into one line
saying how to continue.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial

from tandem_app.commands.config_args import (
    CHECKPOINTS,
    SAVED_CONFIG,
    add_config_arguments,
    add_run_arguments,
    config_from_args,
    lazy_epilog,
    use_saved_config,
)


@dataclass(frozen=True)
class Flag:
    """One flag that sets the config field of the same name (`--model` sets `model`)."""

    name: str
    help: str
    choices: tuple[str, ...] | None = None


@dataclass(frozen=True)
class ConfigCommand:
    name: str  # the subcommand
    help: str  # its line in `tandem-rlvr --help`, and the start of its own description
    description: str  # what follows the help line in `tandem-rlvr NAME --help`
    config_name: str  # the config class's name, for --config's help
    config_class: Callable[[], type]  # the class itself, imported when called
    flags: tuple[Flag, ...]
    epilog: Callable[[], str]  # the keys' help, built only when --help prints it
    execute: Callable[[object, argparse.Namespace], str]  # runs the config; returns the final line
    run_files: tuple[str, ...] = (SAVED_CONFIG, *CHECKPOINTS)  # one of them in --out makes it a run to --resume

    @property
    def config_flags(self) -> tuple[str, ...]:
        return tuple(f.name for f in self.flags)


def add_config_command(subparsers, command: ConfigCommand) -> None:
    """`command`'s parser: its flags between the shared config arguments and the shared run arguments."""
    p = subparsers.add_parser(command.name, help=command.help, formatter_class=argparse.RawDescriptionHelpFormatter,
                              description=f"{command.help}. {command.description}")
    lazy_epilog(p, command.epilog)
    add_config_arguments(p, command.config_name, command.config_class)
    for flag in command.flags:
        p.add_argument(f"--{flag.name}", help=flag.help, **({"choices": flag.choices} if flag.choices else {}))
    add_run_arguments(p)
    p.set_defaults(func=partial(run_command, command))


def run_command(command: ConfigCommand, args: argparse.Namespace) -> int:
    """The config from --config, key=value and the flags; run it; print its final line."""
    from tandem.errors import RunInterrupted
    from tandem.io.run_lock import check_new_run_folder

    use_saved_config(args, command.run_files)
    if args.out and not args.resume:  # a taken --out is refused now, before the config's imports (torch)
        check_new_run_folder(args.out)
    cfg = config_from_args(command.config_class(), args, command.config_flags)
    try:
        line = command.execute(cfg, args)
    except (RunInterrupted, KeyboardInterrupt) as e:
        raise RunInterrupted(f"{e or 'interrupted'}; continue with: tandem-rlvr {command.name} --out "
                             f"{shlex.quote(cfg.out)} --resume") from None
    print(line)
    return 0
