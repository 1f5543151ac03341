"""Controls that would fail each instrument (issue 63, item 1): the leak detector and the transfer cut.

Each instrument meets an early-answer control: a real worked solution of the demo's task
(`tandem_app.task`) with the gold stated in its first step, then more steps; the same solutions
whose gold shows naturally in an intermediate total; and real golds from ../shared/data written as a
writer writes them (gsm8k's `70000` as `70,000`). Beside each instrument runs the cheapest fake that
passes its existing validation (the cases of tests/test_eval_leak.py and tests/test_transfer_reward.py,
repeated here on both) without doing what it names:

- leak detector (`tandem_eval.core.leak.answer_visible`): `last_line_leak` reads only the last line of
  the senior's last turn before the junior's last turn; `digits_leak` matches the gold's digits as
  written, not its value;
- transfer cut (`tandem.rewards.transfer_cut.cut_point`): `last_number_cut` cuts only before the last
  number ahead of the final `\\boxed{`; `digits_cut` cuts before the gold's digits as written (the
  independent reader of tests/test_transfer_reward.py, so it passes that validation by construction).

The real instruments pass every control; each fake passes the validation and fails a control, so the
controls have teeth. A fraction gold stated early in another form the grader accepts (`14/3` for
`\\frac{14}{3}`) is seen by both instruments (`tandem.rewards.answer_text` reads a rational gold by value),
and by neither digits fake. The partner score's controls need the quick demo's base:
tests/test_partner_score_validity.py.
"""

from __future__ import annotations

import json
import re

import pytest

from tandem.rewards.answer_text import gold_key, numbers, shows_answer
from tandem.rewards.transfer_cut import cut_point
from tandem_app.task import DEMO_TASK, generate_problems
from tandem_eval.core import leak
from tandem_eval.core.handoff import turn_spans
from tandem_eval.core.leak import NOT_VISIBLE, UNDETERMINED, VISIBLE
from authored import JUNIOR, SENIOR, written

BOX = "\\boxed{"
FRACTIONS = (0.3, 0.5, 0.7, 0.9, 0.99)


def _decode(tok, ids) -> str:
    return tok.decode(list(ids), skip_special_tokens=True)


def _tokens_before(ids, chars: int, tok) -> int:
    """The longest token prefix whose text ends at or before character `chars`."""
    c = len(ids)
    while c > 0 and len(_decode(tok, ids[:c])) > chars:
        c -= 1
    return c


def _digits(key: str) -> re.Pattern:
    return re.compile(rf"(?<![\d.]){re.escape(key)}(?!\d)")


def first_shown(text: str, gold: str) -> int | None:
    """Where `gold` (an integer) first stands whole in `text`, as digits or with thousands commas (an independent
    reading, not the instruments')."""
    forms = {gold, f"{int(gold):,}"}
    hits = [m.start() for form in forms for m in _digits(form).finditer(text)]
    return min(hits) if hits else None


# The cheap fakes: each passes the instrument's validation cases, none does what the instrument names.
def _before_juniors_last_turn(ids, mask, tokenizer) -> list[str]:
    mask = [1] * len(ids) if mask is None else mask
    turns = [(mask[a], _decode(tokenizer, ids[a:b])) for a, b in turn_spans(list(mask))]
    junior = [i for i, (author, _) in enumerate(turns) if author == JUNIOR]
    return [text for author, text in (turns[: junior[-1]] if junior else turns) if author == SENIOR]


def last_line_leak(ids, mask, gold, tokenizer) -> str:
    """Reads only the last line of the senior's last turn before the junior's last turn."""
    key = gold_key(gold)
    if key is None:
        return UNDETERMINED
    senior = _before_juniors_last_turn(ids, mask, tokenizer)
    lines = [line for line in (senior[-1].splitlines() if senior else []) if line.strip()]
    return VISIBLE if lines and shows_answer(lines[-1], key) else NOT_VISIBLE


def digits_leak(ids, mask, gold, tokenizer) -> str:
    """Matches the gold's digits as written in the senior's text before the junior's last turn (not its value)."""
    key = gold_key(gold)
    if key is None:
        return UNDETERMINED
    senior = _before_juniors_last_turn(ids, mask, tokenizer)
    return VISIBLE if any(_digits(key).search(t) for t in senior) else NOT_VISIBLE


def last_number_cut(ids, gold, fraction, tokenizer) -> int | None:
    """Cuts only before the last number ahead of the final box (the last stated total)."""
    if gold_key(gold) is None:
        return None
    text = _decode(tokenizer, ids)
    at = text.rfind(BOX)
    stated = numbers(text[:at] if at >= 0 else text)
    before = stated[-1][0] if stated else (at + len(BOX) if at >= 0 else len(text))
    return min(int(fraction * len(ids)), _tokens_before(ids, before, tokenizer))


def digits_cut(ids, gold, fraction, tokenizer) -> int | None:
    """Cuts before the gold's digits as written (the first whole match), not before its value."""
    key = gold_key(gold)
    if key is None:
        return None
    m = _digits(key).search(_decode(tokenizer, ids))
    floor = int(fraction * len(ids))
    return floor if m is None else min(floor, _tokens_before(ids, m.start(), tokenizer))


LEAK_DETECTORS = {"real": leak.answer_visible, "last_line": last_line_leak, "digits": digits_leak}
CUTS = {"real": cut_point, "last_number": last_number_cut, "digits": digits_cut}


# The instruments' validation, as tests/test_eval_leak.py and tests/test_transfer_reward.py state it.
LEAK_VALIDATION = [  # (turns, gold, expected)
    ([(SENIOR, "Start 8.\n\n"), (JUNIOR, "8 + 1 = 9.\n\n"), (SENIOR, "9 + 3 = 12.\n\n"),
      (JUNIOR, "The answer is \\boxed{12}.")], "12", VISIBLE),
    ([(SENIOR, "Start 8.\n\n"), (JUNIOR, "8 + 4 = 12.\n\n"), (SENIOR, "So:\n\n"), (JUNIOR, "\\boxed{12}")], "12",
     NOT_VISIBLE),
    ([(SENIOR, "Start 8.\n\n"), (JUNIOR, "Add 4.\n\n"), (SENIOR, "8 + 4 = 12, \\boxed{12}")], "12", NOT_VISIBLE),
    ([(SENIOR, "He gets 5 more: 0 + 5 = 5.\n\n"), (JUNIOR, "The answer is 5.")], "5", UNDETERMINED),
]
SOLO_VALIDATION = [("8 + 4 = 12. \\boxed{12}", "12", VISIBLE), ("8 + 4 = 12. \\boxed{12}", "13", NOT_VISIBLE)]


@pytest.mark.parametrize("name", list(LEAK_DETECTORS))
def test_the_real_leak_detector_and_each_fake_pass_its_validation(tok, name):
    detect = LEAK_DETECTORS[name]
    for turns, gold, expected in LEAK_VALIDATION:
        assert detect(*written(tok, *turns), gold, tok) == expected, (name, turns)
    for text, gold, expected in SOLO_VALIDATION:
        assert detect(tok(text, add_special_tokens=False)["input_ids"], None, gold, tok) == expected, (name, text)


@pytest.mark.parametrize("name", list(CUTS))
def test_the_real_cut_and_each_fake_pass_its_validation(tok, name):
    cut = CUTS[name]
    ids = tok("Start 8.\n\n8 + 4 = 12.\n\n12 - 2 = 10.\n\nThe answer is \\boxed{10}.", add_special_tokens=False)[
        "input_ids"]
    first = next(c for c in range(len(ids) + 1) if shows_answer(_decode(tok, ids[:c]), "10"))
    at = cut(ids, "10", 0.95, tok)
    assert at < int(0.95 * len(ids)) and at < first and not shows_answer(_decode(tok, ids[:at]), "10"), name
    assert cut(ids, "10", 0.2, tok) == int(0.2 * len(ids)) and cut(ids, "5", 0.5, tok) is None, name
    opens = tok("42 apples in all. The answer is \\boxed{42}.", add_special_tokens=False)["input_ids"]
    assert cut(opens, "42", 0.5, tok) == 0, name  # no room


def test_digits_cut_passes_the_worked_solution_validation_and_last_number_cut_already_fails_it(tok):
    """tests/test_transfer_reward.py's validation on the toy task's worked solutions: `digits_cut` is its own
    reader, so it passes; `last_number_cut` leaks where a gold shows before its last statement (a start or an
    intermediate total equal to it): the validation already has teeth there, the controls below on every problem."""
    leaks = {name: 0 for name in ("real", "digits", "last_number")}
    for p in generate_problems("train", 150, seed=0):
        if gold_key(p.answer) is None:
            continue
        ids = tok(p.solution, add_special_tokens=False)["input_ids"]
        at = first_shown(_decode(tok, ids), p.answer)
        for f in (0.5, 0.9, 0.99):
            for name in leaks:
                leaks[name] += len(_decode(tok, ids[: CUTS[name](ids, p.answer, f, tok)])) > at
    assert leaks["real"] == 0 and leaks["digits"] == 0, leaks
    assert leaks["last_number"] > 0, leaks  # measured 14 of the 402 (problem, fraction) pairs


# The early-answer control on the demo task's real problems and solutions.
def _demo_problems(n: int = 200):
    """The demo task's test problems whose gold can be located (two digits or more)."""
    return [p for p in generate_problems("test", n, 0, DEMO_TASK) if gold_key(p.answer) is not None]


def early_solution(p) -> str:
    """`p.solution` with the gold stated in its first step ("Mia starts with 7 apples and ends with 12."), then the
    same steps."""
    steps = p.solution.split("\n\n")
    steps[0] = f"{steps[0][:-1]} and ends with {p.answer}."
    return "\n\n".join(steps)


def co_written(tok, solution: str, senior_steps: int = 2):
    """The senior writes the first `senior_steps` steps, the junior the rest (its last turn holds the box)."""
    steps = solution.split("\n\n")
    return written(tok, (SENIOR, "\n\n".join(steps[:senior_steps]) + "\n\n"),
                    (JUNIOR, "\n\n".join(steps[senior_steps:])))


def natural_early(p) -> int | None:
    """The index of the step where the gold first shows, where that is before the last operation's step (an
    intermediate total equal to the answer, or a start or operand), else None."""
    steps = p.solution.split("\n\n")
    shown = next(i for i, s in enumerate(steps) if first_shown(s, p.answer) is not None)
    return shown if shown < len(steps) - 2 else None  # the last two steps are the last operation and the box


def test_the_leak_detector_sees_an_answer_stated_in_the_first_step_and_the_last_line_fake_does_not(tok):
    problems = _demo_problems()
    assert len(problems) > 100
    said = {name: [] for name in LEAK_DETECTORS}
    for p in problems:
        for name, detect in LEAK_DETECTORS.items():
            said[name].append(detect(*co_written(tok, early_solution(p)), p.answer, tok))
    assert said["real"] == [VISIBLE] * len(problems)
    assert said["digits"] == [VISIBLE] * len(problems)  # digits as written: the demo's golds are plain integers
    missed = said["last_line"].count(NOT_VISIBLE) / len(problems)
    assert missed > 0.75, missed  # measured 117 of 139 (0.84): it reads the senior's last line, not its first step


def test_the_leak_detector_raises_no_alarm_on_the_same_solutions_without_the_early_answer(tok):
    for p in _demo_problems():
        ids, mask = co_written(tok, p.solution)
        senior = "\n\n".join(p.solution.split("\n\n")[:2])
        expected = VISIBLE if first_shown(senior, p.answer) is not None else NOT_VISIBLE
        assert leak.answer_visible(ids, mask, p.answer, tok) == expected, p.solution


def test_the_leak_detector_sees_a_gold_that_shows_naturally_in_an_intermediate_total(tok):
    """Real solutions whose running total passes through the gold before the end: the senior writes two steps
    past it (the next step restates the total as its first operand), the junior the rest."""
    missed = total = 0
    for p in _demo_problems(400):
        k = natural_early(p)
        if k is None or k + 3 >= len(p.solution.split("\n\n")):
            continue
        ids, mask = co_written(tok, p.solution, senior_steps=k + 3)
        assert leak.answer_visible(ids, mask, p.answer, tok) == VISIBLE, p.solution
        missed += last_line_leak(ids, mask, p.answer, tok) == NOT_VISIBLE
        total += 1
    assert total >= 20 and missed > 0, (total, missed)  # measured: the fake misses 29 of 58


def test_the_leak_detector_reads_a_real_gold_by_value_and_the_digits_fake_does_not(tok, shared_data):
    """gsm8k's golds of four digits or more, stated early with thousands commas as a writer writes them."""
    golds = [r["answer"] for r in map(json.loads, (shared_data / "gsm8k_test.jsonl").read_text().splitlines())
             if re.fullmatch(r"\d{4,}", r["answer"])][:30]
    assert len(golds) == 30
    for gold in golds:
        ids, mask = written(tok, (SENIOR, f"First, the total comes to {int(gold):,}.\n\nNow check each part.\n\n"),
                             (JUNIOR, f"The parts add up.\n\nThe answer is \\boxed{{{gold}}}."))
        assert leak.answer_visible(ids, mask, gold, tok) == VISIBLE, gold
        assert digits_leak(ids, mask, gold, tok) == NOT_VISIBLE, gold
        assert last_line_leak(ids, mask, gold, tok) == NOT_VISIBLE, gold


def _cut_leaks(tok, texts_and_golds) -> dict[str, dict[str, int]]:
    """Per cut: over (text, gold, fraction), how often the plain floor(f * n) prefix would show the gold (`exposed`)
    and how often the cut's prefix does (`leaks`)."""
    out = {name: {"exposed": 0, "leaks": 0} for name in CUTS}
    for text, gold in texts_and_golds:
        ids = tok(text, add_special_tokens=False)["input_ids"]
        at = first_shown(_decode(tok, ids), gold)
        for f in FRACTIONS:
            exposed = len(_decode(tok, ids[: int(f * len(ids))])) > at
            for name, cut in CUTS.items():
                out[name]["exposed"] += exposed
                out[name]["leaks"] += len(_decode(tok, ids[: cut(ids, gold, f, tok)])) > at
    return out


def test_the_cut_goes_back_before_an_answer_stated_in_the_first_step_and_the_last_number_fake_does_not(tok):
    problems = _demo_problems()
    got = _cut_leaks(tok, [(early_solution(p), p.answer) for p in problems])
    assert got["real"]["leaks"] == 0 and got["digits"]["leaks"] == 0, got
    exposed = got["last_number"]["exposed"]
    assert exposed > 3 * len(problems), got  # most fractions reach past the first step (measured: all 695)
    assert got["last_number"]["leaks"] == exposed, got  # every prefix that reaches the first step leaks


def test_the_cut_goes_back_before_a_gold_that_shows_naturally_before_its_last_statement(tok):
    texts = [(p.solution, p.answer) for p in _demo_problems(400) if natural_early(p) is not None]
    got = _cut_leaks(tok, texts)
    assert len(texts) >= 20 and got["real"]["leaks"] == 0 and got["digits"]["leaks"] == 0, got
    assert got["last_number"]["leaks"] > 0, got  # measured: 270 of 270 exposed prefixes of 58 solutions leak


def test_the_cut_reads_a_real_gold_by_value_and_the_digits_fake_does_not(tok, shared_data):
    golds = [r["answer"] for r in map(json.loads, (shared_data / "gsm8k_test.jsonl").read_text().splitlines())
             if re.fullmatch(r"\d{4,}", r["answer"])][:30]
    texts = [(f"First, the total comes to {int(g):,}.\n\nNow check each part.\n\nThe parts add up.\n\n"
              f"The answer is \\boxed{{{g}}}.", g) for g in golds]
    got = _cut_leaks(tok, texts)
    assert got["real"]["leaks"] == 0, got
    assert got["digits"]["leaks"] == got["digits"]["exposed"] > 0, got  # it waits for the box's digits


def _fraction_golds(shared_data, n: int = 8) -> list[tuple[str, str]]:
    """MATH-500 golds \\frac{a}{b} and the form a/b, which the grader accepts for them."""
    rows = map(json.loads, (shared_data / "math500.jsonl").read_text().splitlines())
    golds = [(r["answer"], m) for r in rows if (m := re.fullmatch(r"\\frac\{(\d+)\}\{(\d+)\}", r["answer"]))]
    return [(g, f"{m.group(1)}/{m.group(2)}") for g, m in golds[:n]]


def test_the_leak_detector_sees_a_fraction_gold_stated_early_in_another_accepted_form_and_the_digits_fake_does_not(
        tok, shared_data):
    from tandem.grading.grader import is_equivalent

    for gold, other_form in _fraction_golds(shared_data):
        assert is_equivalent(other_form, gold), (other_form, gold)  # the grader counts it as the answer
        ids, mask = written(tok, (SENIOR, f"The result will be {other_form}.\n\nNow the steps.\n\n"),
                             (JUNIOR, f"So it is \\boxed{{{gold}}}."))
        assert leak.answer_visible(ids, mask, gold, tok) == VISIBLE, (gold, other_form)
        assert digits_leak(ids, mask, gold, tok) == NOT_VISIBLE, (gold, other_form)  # it reads the gold as written


def test_the_cut_goes_back_before_a_fraction_gold_stated_early_in_another_accepted_form_and_the_digits_fake_does_not(
        tok, shared_data):
    for gold, other_form in _fraction_golds(shared_data):
        ids = tok(f"The result will be {other_form}.\n\nNow the steps.\n\nSo it is \\boxed{{{gold}}}.",
                  add_special_tokens=False)["input_ids"]
        assert other_form not in _decode(tok, ids[:cut_point(ids, gold, 0.9, tok)]), (gold, other_form)
        assert other_form in _decode(tok, ids[:digits_cut(ids, gold, 0.9, tok)]), (gold, other_form)  # it waits for the box
