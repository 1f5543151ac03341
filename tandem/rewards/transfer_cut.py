"""The leak-free cut: how much of a response a partner is shown before it continues alone.

One rule, used by the eval's prefix transfer (`tandem_eval.analysis.prefix_transfer`) and the transfer
reward (`tandem.rewards.transfer_reward`): a response of n tokens cut at fraction f keeps its first
floor(f * n) tokens, or fewer where that prefix reaches into the number holding the gold
answer's first appearance; then the cut goes back to the start of that number (its sign
included), so the partner sees neither the answer nor its leading digits. Where the answer
cannot be located as written (a notational variant), the cut goes back to the start of the
step holding it (after the last `\\n\\n`).

`cut_point` gives the position (None for a gold that cannot be located reliably,
`tandem.rewards.answer_text.gold_key`); `transfer_cut` says, in addition, why there is no cut to
continue from: `UNDETERMINED` (that gold) or `NO_ROOM` (the cut went back to 0 tokens: the
response shows the answer at once, or is too short for the fraction).

`rule_cut` makes the same cut under the transfer reward's named rules
(`tandem.rewards.transfer_config.TransferConfig`): RLTR's plain floor(f * n) (`before_answer=False`),
and each skip on or off; with every rule on it is `transfer_cut`.

Pure: only the tokenizer's `decode` is used; no torch.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.rewards.answer_text import first_appearance, gold_key, shows_answer

UNDETERMINED = "undetermined"  # the gold's key is too short or unreadable: where it shows cannot be told
NO_ROOM = "no_room"  # the leak-free cut keeps no token


def cut_point(ids: list[int], gold, fraction: float, tokenizer) -> int | None:
    """Tokens of `ids` the partner is shown: floor(fraction * len), or fewer where that prefix reaches into
    the number holding the answer's first appearance (then the cut before that number, `answer_cut`);
    None for an undetermined gold."""
    key = gold_key(gold)
    if key is None:
        return None

    def shows(c: int) -> bool:
        return c > 0 and shows_answer(tokenizer.decode(ids[:c], skip_special_tokens=True), key)

    cut = int(fraction * len(ids))
    if not shows(len(ids)):
        return cut
    # checked on the whole response: a cut that does not show the answer may still end inside its number
    lo, hi = 0, len(ids)  # shows(lo) is False (nothing shown), shows(hi) is True: halve until they meet
    while hi - lo > 1:
        mid = (lo + hi) // 2
        lo, hi = (lo, mid) if shows(mid) else (mid, hi)
    return min(cut, answer_cut(ids, hi, key, tokenizer))


def answer_cut(ids: list[int], hi: int, key: str, tokenizer) -> int:
    """The longest cut that ends before the number (sign included) holding the answer's first appearance,
    where `ids[:hi]` is the shortest prefix that shows it.

    A prefix that does not yet show the answer can still end inside it: digits are often one
    token each, so for gold 18 the prefix "13 + 5 = 1" shows only "1" (issue 44). Where the
    text cannot be located as written (a notational variant), the cut goes back to the start
    of the step holding it (after the last `\\n\\n`).
    """
    def text(c: int) -> str:
        return tokenizer.decode(ids[:c], skip_special_tokens=True)

    shown, before = text(hi), text(hi - 1)
    start = first_appearance(shown, key)
    if start is None:
        start = before.rfind("\n\n") + 2 if "\n\n" in before else 0
    cut = hi - 1
    while cut > 0 and len(text(cut)) > start:
        cut -= 1
    return cut


@dataclass(frozen=True)
class Cut:
    """Where one response is cut for a partner."""

    tokens: int  # tokens shown; 0 where there is no cut
    fraction: float  # the fraction asked for
    floor: int  # floor(fraction * len): the cut before the leak rule
    why_none: str = ""  # UNDETERMINED, NO_ROOM, or "" for a cut to continue from

    @property
    def usable(self) -> bool:
        return not self.why_none

    @property
    def moved_back(self) -> bool:
        """The leak rule shortened the cut (it would have shown the answer or its leading digits)."""
        return self.why_none != UNDETERMINED and self.tokens < self.floor


def transfer_cut(ids: list[int], gold, fraction: float, tokenizer) -> Cut:
    """`cut_point` with the reason where there is none (see the module docstring)."""
    floor = int(fraction * len(ids))
    at = cut_point(ids, gold, fraction, tokenizer)
    if at is None:
        return Cut(0, fraction, floor, UNDETERMINED)
    return Cut(at, fraction, floor, "" if at > 0 else NO_ROOM)


def rule_cut(ids: list[int], gold, fraction: float, tokenizer, *, before_answer: bool, skip_undetermined: bool,
             skip_no_room: bool) -> Cut:
    """One response's cut under the named rules: floor(fraction * len), moved back before the answer
    (`cut_point`) where `before_answer`; an undetermined gold is skipped where `skip_undetermined`, else
    cut at the floor (where the answer shows cannot be told); a cut of 0 tokens is skipped
    (`NO_ROOM`) where `skip_no_room`, else continued from the question alone."""
    floor = int(fraction * len(ids))
    undetermined = (before_answer or skip_undetermined) and gold_key(gold) is None
    if undetermined and skip_undetermined:
        return Cut(0, fraction, floor, UNDETERMINED)
    at = cut_point(ids, gold, fraction, tokenizer) if before_answer and not undetermined else floor
    if at == 0 and skip_no_room:
        return Cut(0, fraction, floor, NO_ROOM)
    return Cut(at, fraction, floor)
