"""The distillation's pieces without a model: trace filters and budget, the teacher's prompt, data files, the gain."""

from __future__ import annotations

import json

import pytest

from tandem.errors import TandemError
from tandem.rollout.contract import Rollout
from tandem_app.distill.config import DistillConfig
from tandem_app.distill.preflight import Inputs, check_solutions
from tandem_app.distill.problems import file_problems, load_split, question_prompt_ids
from tandem_app.distill.summary import paired_gain
from tandem_app.distill.traces import collect, nothing_left


class FakeTeacher:
    """Answers problem i with `texts(i)`, ten tokens long; records the prompts it was given."""

    def __init__(self, tok, right):
        self.tok, self.right, self.prompts = tok, right, []

    def solo(self, prompts, keys):
        self.prompts += prompts
        out = []
        for p in prompts:
            n = len(self.prompts) - len(prompts) + len(out)
            text = "The answer is \\boxed{%s}." % (self.right[n] if n < len(self.right) else "-1")
            ids = self.tok(text, add_special_tokens=False)["input_ids"][:9] + [self.tok.eos_token_id]
            out.append(Rollout(list(p), ids, [1] * len(ids), text, "stop"))
        return out


def _inputs(tok, cfg, context=1024):
    train = load_split(cfg, "train", cfg.n_train_problems)
    return Inputs(tok, tok, True, context, train, [])


def test_only_correct_keeps_the_traces_the_grader_scores_right(tok):
    cfg = DistillConfig(n_train_problems=6, only_correct=True, generation_batch_size=4)
    inputs = _inputs(tok, cfg)
    right = [p.answer if i % 2 == 0 else "-1" for i, p in enumerate(inputs.train)]
    rows, counts = collect(cfg, inputs, FakeTeacher(tok, right))
    assert [r["id"] for r in rows] == [p.id for p in inputs.train[::2]]
    assert all(r["correct"] for r in rows)
    assert (counts.n_correct, counts.dropped_incorrect, counts.n_traces) == (3, 3, 3)
    raw, raw_counts = collect(DistillConfig(n_train_problems=6), inputs, FakeTeacher(tok, right))
    assert len(raw) == 6 and raw_counts.kept_correct(raw) == 0.5


def test_the_token_budget_stops_before_the_trace_that_would_pass_it(tok):
    cfg = DistillConfig(n_train_problems=8, token_budget=35, generation_batch_size=3)
    teacher = FakeTeacher(tok, [])
    rows, counts = collect(cfg, _inputs(tok, cfg), teacher)
    assert (counts.n_traces, counts.trace_tokens, counts.budget_reached) == (3, 30, True)
    assert len(teacher.prompts) == 6  # two chunks of three: generation stopped with the budget
    assert sum(len(r["student_response_ids"]) for r in rows) == 30


def test_the_writer_who_sees_the_solution_writes_from_rlts_prompt_and_the_student_learns_the_plain_one(tok):
    from tandem.rewards.solution_prompt import writer_prompt_ids

    cfg = DistillConfig(n_train_problems=3, writer_sees_solution=True)
    inputs = _inputs(tok, cfg)
    teacher = FakeTeacher(tok, [])
    rows, _ = collect(cfg, inputs, teacher)
    assert teacher.prompts == [writer_prompt_ids(tok, p.question, p.solution) for p in inputs.train]
    plain = question_prompt_ids(tok, inputs.train, task_data=True)
    assert [r["student_prompt_ids"] for r in rows] == plain
    assert all(p.solution in r["prompt"] for p, r in zip(inputs.train, rows))


def test_a_problem_without_a_solution_is_refused_naming_it(tmp_path):
    data = tmp_path / "train.jsonl"
    data.write_text('{"id": "p1", "problem": "1+1?", "answer": "2", "solution": "1+1=2"}\n'
                    '{"id": "p2", "problem": "2+2?", "answer": "4"}\n')
    problems = file_problems(str(data), 10)
    assert [p.solution for p in problems] == ["1+1=2", None]
    with pytest.raises(TandemError, match=r"train.jsonl: problem p2: no reference solution, but writer_sees_solution=true"):
        check_solutions(problems, str(data))


def test_a_jsonl_split_is_asked_as_the_eval_asks_it(tmp_path, tok):
    from tandem_eval.core.prompts import chat_prompt_ids

    data = tmp_path / "train.jsonl"
    data.write_text('{"problem": "What is 1+1?", "answer": "2"}\n{"problem": "What is 2+3?", "answer": "5"}\n')
    cfg = DistillConfig(data=str(data), test_data=str(data), n_train_problems=1)
    problems = load_split(cfg, "train", cfg.n_train_problems)
    assert len(problems) == 1 and problems[0].answer == "2"
    assert question_prompt_ids(tok, problems, task_data=False) == [chat_prompt_ids(tok, "What is 1+1?")]
    empty = tmp_path / "empty.jsonl"
    empty.write_text("")
    with pytest.raises(TandemError, match="no rows"):
        file_problems(str(empty), 5)
    with pytest.raises(TandemError, match="test_data=FILE.jsonl"):
        DistillConfig(data=str(data))


def test_a_retokenised_trace_is_the_text_in_the_students_tokens(tok):
    from tandem_app.distill.traces import student_response
    from tandem_app.train.data import response_ids

    r = Rollout([1], [5, 6], [1, 1], "The answer is 4.", "stop")
    other = Inputs(tok, tok, False, 1024, [], [])
    assert student_response(other, r) == response_ids(tok, "The answer is 4.")
    assert student_response(Inputs(tok, tok, True, 1024, [], []), r) == [5, 6]


def test_nothing_left_names_the_counts():
    from tandem_app.distill.traces import TraceCounts

    line = nothing_left(DistillConfig(token_budget=5), TraceCounts(n_problems_read=4, budget_reached=True))
    assert "after filtering 4 problems" in line and "token_budget=5 is below the first trace's length" in line
    assert nothing_left(DistillConfig(), TraceCounts(n_traces=1)) is None


def test_the_gain_is_paired_over_problems():
    gain, se = paired_gain(before=[0, 1, 2, 2], after=[2, 1, 2, 0], n_samples=2)
    diffs = [1.0, 0.0, 0.0, -1.0]
    assert gain == pytest.approx(sum(diffs) / 4)
    assert se == pytest.approx((sum((d - gain) ** 2 for d in diffs) / 3 / 4) ** 0.5)
    assert paired_gain([1], [2], 2) == (0.5, None)


def test_verl_sft_runs_the_distill_script_on_prompt_and_response_rows(tok, tmp_path, monkeypatch):
    from tandem_app.distill import student_sft

    model = tmp_path / "verl-model"
    model.mkdir()
    (model / "config.json").write_text("{}")
    script = tmp_path / "fake.sh"
    script.write_text(f'echo "$@" > {tmp_path}/args\necho training\necho {model}\n')
    monkeypatch.setattr(student_sft, "VERL_SCRIPT", script)
    cfg = DistillConfig(student="S", sft_backend="verl", steps=3, lr=0.01, batch_size=2)
    rows = [{"question": "Q?", "response": "A.", "cut": False, "student_response_ids": []}]
    out = tmp_path / "run"
    out.mkdir()
    assert student_sft.train(cfg, out, rows, Inputs(tok, tok, True, 99, [], []), progress=False) == str(model)
    assert (tmp_path / "args").read_text().split() == [
        "--traces", str(out / "sft_traces.jsonl"), "--student", "S", "--out", str(out / "student-verl"),
        "--steps", "3", "--max-length", "99", "--lr", "0.01", "--batch-size", "2", "--nproc", "1"]
    assert json.loads((out / "sft_traces.jsonl").read_text()) == {"prompt": "Q?", "response": "A."}
    assert student_sft.done(out) == str(model)


def test_the_count_line_accounts_for_every_trace_read():
    from tandem_app.distill.traces import TraceCounts

    counts = TraceCounts(n_problems_read=29, n_correct=20, n_traces=25, trace_tokens=900, dropped_incorrect=2,
                         dropped_too_long=1, cut_too_long=3, budget_reached=True, student_context=256)
    line = counts.count_line()
    assert line == ("traces: 29 written by the teacher (20 correct): 25 kept (900 tokens), 2 graded wrong, dropped, "
                    "1 too long, dropped, 1 past the token budget, not kept: collection stopped there; "
                    "3 of the kept cut to fit")
