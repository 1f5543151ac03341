"""User-facing errors.

`TandemError` is raised for every *expected* mistake (bad config value, missing file,
malformed input, mismatched vocabularies). Its message names the problem and the fix in
one line; the CLI prints it without a traceback and exits with status 2. `RunFailed`
(a run stopped by what happened, not by its input) exits with 1.
"""


class TandemError(Exception):
    """An expected, user-fixable error. The message says what is wrong and how to fix it."""

    exit_code = 2  # the CLI's status: bad input


class RunFailed(TandemError):
    """A run stopped by what happened, not by its input (a non-finite loss, a full disk): one line, exit 1."""

    exit_code = 1


class RunInterrupted(KeyboardInterrupt):
    """Ctrl-C during a run; the message says what the run kept (and, from a command, how to continue)."""


def run_reporting_errors(func, args) -> int:
    """Run a CLI's `func(args)`; an expected mistake becomes one `error: ...` line and exit 2 (1 for `RunFailed`)."""
    import sys

    try:
        return int(func(args) or 0)
    except TandemError as e:
        print(f"error: {e}", file=sys.stderr)
        return e.exit_code
    except KeyboardInterrupt as e:  # a run's own says what it kept and how to continue
        print(f"interrupted: {e}" if str(e) else "interrupted", file=sys.stderr)
        return 130
