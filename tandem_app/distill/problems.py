"""The problems a distillation reads: the toy task's splits or JSONL files, and the prompt each is asked with.

A `DistillProblem` holds the question as the student's user message, the gold answer and,
where the data has one, the reference solution (`writer_sees_solution` shows it to the
teacher). The toy task's user message is its problem text, rendered as the demo's
trainer renders it (`tandem_app.train.data`); a JSONL file's is the eval's user message
(`tandem_eval.core.prompts`: the problem and the instruction), rendered as the eval renders it.
The student's SFT prompt, its eval prompt and (unless the teacher sees the solution) the
teacher's prompt are all that one plain question prompt.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from tandem.errors import TandemError


@dataclass(frozen=True)
class DistillProblem:
    id: str
    question: str  # the user message the student reads
    answer: str
    solution: str | None = None


def task_problems(split: str, n: int, seed: int, task) -> list[DistillProblem]:
    from tandem_app.task import generate_problems

    return [DistillProblem(p.id, p.prompt, p.answer, p.solution) for p in generate_problems(split, n, seed, task)]


def file_problems(path: str, n: int) -> list[DistillProblem]:
    """The first `n` rows of a JSONL file (problem, answer, optional solution and id), checked by the eval's loader."""
    from tandem.io.jsonl import read_jsonl
    from tandem_eval.core.datasets import FieldMap, load_file
    from tandem_eval.core.prompts import user_message

    if Path(path).suffix != ".jsonl":
        raise TandemError(f"{path}: distill reads JSONL files (rows with problem, answer, optional solution, id)")
    rows = read_jsonl(path)
    fields = FieldMap() if rows and all("id" in r for r in rows) else FieldMap(id=None)
    loaded = load_file(path, fields)[:n]
    return [DistillProblem(p.id, user_message(p.problem), p.answer, rows[i].get("solution"))
            for i, p in enumerate(loaded)]


def load_split(cfg, split: str, n: int) -> list[DistillProblem]:
    """`split` ('train' or 'test') of the run's data, at most `n` problems, in a fixed order."""
    if cfg.task_data:
        return task_problems(split, n, cfg.seed, cfg.task)
    return file_problems(cfg.data if split == "train" else cfg.test_data, n)


def question_prompt_ids(tokenizer, problems: list[DistillProblem], task_data: bool) -> list[list[int]]:
    """The plain question prompt of each problem, as the student is trained and evaluated on it."""
    if task_data:
        from tandem_app.train.data import prompt_ids_batch

        return prompt_ids_batch(tokenizer, problems_as_task(problems))
    from tandem_eval.core.prompts import chat_prompt_ids

    return [chat_prompt_ids(tokenizer, p.question, instruction="") for p in problems]


def problems_as_task(problems: list[DistillProblem]) -> list:
    """What `tandem_app.train.data` renders: an object with the problem text as `prompt`."""
    from types import SimpleNamespace

    return [SimpleNamespace(prompt=p.question) for p in problems]
