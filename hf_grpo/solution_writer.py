"""The writer who sees the solution in TRL (`partner_reward.writer_sees_solution`): each row's writer prompt.

With the setting on, a training batch is written from RLT's teacher prompt,
`tandem.rewards.solution_prompt.writer_prompt_ids(tokenizer, question, solution)`, and those ids are
what the rollout returns to TRL as `prompt_ids`, so TRL's policy loss is conditioned on what
the writer read. The question is the prompt's last user turn (a text prompt is the question
itself); the scorer, as RLT's student, keeps reading the plain prompt.

TRL hands `rollout_func` only the batch's prompts, not their rows, so `SolutionBook` reads the
training dataset's `solution` column once, when the rollout binds to the trainer, and finds
each prompt's solution by the prompt itself. What it refuses there, in one line each: a dataset
without a `solution` column, a row whose solution is missing or blank, two rows with one prompt
and different solutions (the rollout could not tell which one to show), and a tokenizer without
a chat template (the writer's prompt is a chat).
"""

from __future__ import annotations

import json

from tandem.errors import TandemError
from tandem.rewards.solution_prompt import require_solution, writer_prompt_ids

COLUMN = "solution"


def prompt_key(prompt) -> str:
    """A TRL prompt (text or chat messages) as a lookup key."""
    return json.dumps(prompt, sort_keys=True, ensure_ascii=False)


def question_of(prompt) -> str:
    """The question a prompt asks: its last text user turn, or the text prompt itself."""
    if isinstance(prompt, str):
        return prompt
    users = [m.get("content") for m in prompt if m.get("role") == "user" and isinstance(m.get("content"), str)]
    if not users:
        raise TandemError("partner_reward.writer_sees_solution=true: a prompt has no text user turn to show the "
                          "writer; give each row a text prompt or a chat with a user turn")
    return users[-1]


class SolutionBook:
    """Each training prompt's reference solution, read from `dataset` (see the module docstring)."""

    def __init__(self, dataset, tokenizer):
        columns = getattr(dataset, "column_names", None)
        if not columns or COLUMN not in columns:
            raise TandemError(f"partner_reward.writer_sees_solution=true shows the writer each row's solution, but "
                              f"the training dataset has no '{COLUMN}' column (columns: {', '.join(columns or [])}); "
                              "add it or set writer_sees_solution=false")
        if not getattr(tokenizer, "chat_template", None):
            raise TandemError("partner_reward.writer_sees_solution=true writes the writer's prompt as a chat, but the "
                              "tokenizer has no chat template; use a chat model's tokenizer")
        self.tokenizer, self.solutions = tokenizer, {}
        first: dict[str, int] = {}
        for row, (prompt, solution) in enumerate(zip(dataset["prompt"], dataset[COLUMN])):
            solution = require_solution(solution, f"training dataset row {row}")
            key = prompt_key(prompt)
            if key in self.solutions and self.solutions[key] != solution:
                raise TandemError(f"training dataset rows {first[key]} and {row} share a prompt but not a solution; "
                                  "the rollout sees only the prompt, so keep one solution per prompt")
            self.solutions.setdefault(key, solution)
            first.setdefault(key, row)

    def writer_prompt_ids(self, prompts: list) -> list[list[int]]:
        """The writer's prompt ids, one per prompt of a training batch."""
        out = []
        for prompt in prompts:
            solution = self.solutions.get(prompt_key(prompt))
            if solution is None:
                raise TandemError("partner_reward.writer_sees_solution=true: a training prompt is not in the "
                                  "trainer's train_dataset, so its solution is unknown; train on that dataset")
            out.append(writer_prompt_ids(self.tokenizer, question_of(prompt), solution))
        return out
