"""One way in for every eval tool: a module with `DESCRIPTION`, `run(args)` and its flags.

A tool declares its flags with `add_arguments(parser)` (which the `tandem-rlvr eval-*`
subcommands reuse) or, when it needs a parser of its own (subcommands, a `prog`), with
`build_parser()`. `parser(tool)` builds the parser either way; `main(tool, argv)` parses,
runs, and turns an expected mistake into one `error: ...` line and exit status 2. Each
tool's own `main` is `tool.entry(__name__)`.
"""

from __future__ import annotations

import argparse
import functools
import sys
from collections.abc import Callable
from types import ModuleType

from tandem.errors import run_reporting_errors


def _module(tool: str | ModuleType) -> ModuleType:
    return sys.modules[tool] if isinstance(tool, str) else tool


def parser(tool: str | ModuleType) -> argparse.ArgumentParser:
    """The tool's argument parser."""
    module = _module(tool)
    if hasattr(module, "build_parser"):
        return module.build_parser()
    p = argparse.ArgumentParser(description=module.DESCRIPTION)
    module.add_arguments(p)
    return p


def main(tool: str | ModuleType, argv: list[str] | None = None) -> int:
    """Parse `argv`, run the tool, and report an expected mistake in one line (exit status 2)."""
    module = _module(tool)
    return run_reporting_errors(module.run, parser(module).parse_args(argv))


def entry(tool: str) -> Callable[..., int]:
    """The tool's `main(argv=None)`: `main(tool, argv)` for the module named `tool`."""
    return functools.partial(main, tool)
