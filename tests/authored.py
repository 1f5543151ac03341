"""A response written by turns: its token ids and authorship mask, for tests of what the team's text shows.

Shared by `tests/test_eval_leak.py` and `tests/test_instrument_controls.py`.
"""

from __future__ import annotations

SENIOR, JUNIOR = 1, 0  # the authorship mask's values


def written(tok, *turns: tuple[int, str]) -> tuple[list[int], list[int]]:
    """Token ids and authorship mask (1 = senior) of a response written as (author, text) turns."""
    ids, mask = [], []
    for author, text in turns:
        t = tok(text, add_special_tokens=False)["input_ids"]
        ids += t
        mask += [author] * len(t)
    return ids, mask
