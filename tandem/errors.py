"""User-facing errors.

`TandemError` is raised for every *expected* mistake (bad config value, missing file,
malformed input, mismatched vocabularies). Its message names the problem and the fix in
one line; the CLI prints it without a traceback and exits with status 2.
"""


class TandemError(Exception):
    """An expected, user-fixable error. The message says what is wrong and how to fix it."""
