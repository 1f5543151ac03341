"""User-facing errors.

`TandemError` is raised for every *expected* mistake (bad config value, missing file,
malformed input, mismatched vocabularies). Its message names the problem and the fix in
one line; the CLI prints it without a traceback and exits with status 2.
"""


class TandemError(Exception):
    """An expected, user-fixable error. The message says what is wrong and how to fix it."""


def run_reporting_errors(func, args) -> int:
    """Run a CLI's `func(args)`; an expected mistake becomes one `error: ...` line and exit 2."""
    import sys

    try:
        return int(func(args) or 0)
    except TandemError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
