"""The copy readings of an RLT writer's traces, validated on both error sides over the demo's real test problems."""

import json
import re

import pytest

from tandem.errors import TandemError
from tandem.rewards.solution_prompt import student_completion, writer_turn_start
from tandem_app.experiments.trace_copies import carries_numbers, copy_shares, is_exact_copy, trace_parts
from tandem_app.task import DEMO_TASK, generate_problems

PROBLEMS = generate_problems("test", 200, seed=0, cfg=DEMO_TASK)


def _reworded(p):
    """The problem's own solution with its name and item words changed: a copy that is not the exact text."""
    other_name, other_item = ("Leo" if p.name != "Leo" else "Max"), ("pens" if p.item != "pens" else "cards")
    return p.solution.replace(p.name, other_name).replace(p.item, other_item)


def _shares(readings):
    return sum(readings) / len(readings)


def test_the_own_solution_is_carried_and_exact_on_every_problem():
    assert _shares([carries_numbers(p.solution, p.solution) for p in PROBLEMS]) == 1.0
    assert _shares([is_exact_copy(f"\n {p.solution}\n", p.solution) for p in PROBLEMS]) == 1.0


def test_a_reworded_copy_carries_the_numbers_but_is_not_the_exact_text():
    assert _shares([carries_numbers(_reworded(p), p.solution) for p in PROBLEMS]) == 1.0
    assert _shares([is_exact_copy(_reworded(p), p.solution) for p in PROBLEMS]) == 0.0


def test_extra_numbers_in_the_explanation_do_not_stop_a_carry():
    assert all(carries_numbers(f"{p.solution}\n\nCheck: 2 + 2 = 4.", p.solution) for p in PROBLEMS)


def test_the_shortcut_that_reads_only_the_answer_is_refused():
    # the cheapest reading that passes the own-solution cases: "the box holds the gold"
    answer_only = [f"The answer is \\boxed{{{p.answer}}}." for p in PROBLEMS]
    assert all(f"\\boxed{{{p.answer}}}" in a for p, a in zip(PROBLEMS, answer_only))  # the shortcut accepts all
    assert _shares([carries_numbers(a, p.solution) for p, a in zip(PROBLEMS, answer_only)]) == 0.0


def test_a_dropped_step_or_one_changed_number_is_refused_on_every_problem():
    dropped = ["\n\n".join(p.solution.split("\n\n")[:1] + p.solution.split("\n\n")[2:]) for p in PROBLEMS]
    assert _shares([carries_numbers(d, p.solution) for p, d in zip(PROBLEMS, dropped)]) == 0.0
    changed = [re.sub(r"\d+", lambda m: str(int(m.group()) + 100), p.solution, count=1) for p in PROBLEMS]
    assert _shares([carries_numbers(c, p.solution) for p, c in zip(PROBLEMS, changed)]) == 0.0


def test_another_problems_solution_is_refused_on_every_problem():
    others = PROBLEMS[1:] + PROBLEMS[:1]  # a fixed derangement
    assert _shares([carries_numbers(o.solution, p.solution) for p, o in zip(PROBLEMS, others)]) == 0.0
    assert _shares([is_exact_copy(o.solution, p.solution) for p, o in zip(PROBLEMS, others)]) == 0.0


def _trace(explanation, solution):
    return {"prompt": "<|im_start|>assistant\n" + writer_turn_start(solution), "response": student_completion(explanation, solution)}


def test_the_shares_over_a_file_of_traces(tmp_path):
    rows = [_trace(p.solution, p.solution) for p in PROBLEMS[:2]] + [_trace(_reworded(PROBLEMS[2]), PROBLEMS[2].solution),
                                                                     _trace("No idea.", PROBLEMS[3].solution)]
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    assert copy_shares(path) == {"n": 4, "carries_numbers": 0.75, "exact": 0.5}
    assert trace_parts(rows[2], "here") == (_reworded(PROBLEMS[2]).strip(), PROBLEMS[2].solution.strip())


@pytest.mark.parametrize("trace", [{"prompt": "no tags", "response": student_completion("e", "s")},
                                   {"prompt": writer_turn_start("s"), "response": "a plain solution, no think tags"}])
def test_a_trace_not_in_rlts_form_is_refused_naming_its_line(tmp_path, trace):
    path = tmp_path / "traces.jsonl"
    path.write_text(json.dumps(_trace("e", "s")) + "\n" + json.dumps(trace) + "\n")
    with pytest.raises(TandemError, match=r"traces.jsonl:2: not a trace of a writer who saw the solution"):
        copy_shares(path)


def test_an_empty_file_is_refused(tmp_path):
    (tmp_path / "traces.jsonl").write_text("\n")
    with pytest.raises(TandemError, match="no traces"):
        copy_shares(tmp_path / "traces.jsonl")
