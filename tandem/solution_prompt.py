"""The writer who sees the solution: RLT's teacher input (`partner_reward.writer_sees_solution`).

In RLT (arXiv 2506.08388; SakanaAI/RLT) a teacher is shown a question *and* its reference
solution and asked to write the explanation that connects them; a student then scores it by
the log-probability of that solution after reading the question and the explanation
(`tandem.partner_score`, target `solution`). Here the writer (the senior, or the tandem
team) gets the question as its user turn, and its own turn starts already holding the
solution between RLT's solution tags and an opened explanation tag, so everything it writes
is the explanation. The student never sees that prompt: it reads the plain question prompt,
the explanation, then, in the same turn, the solution it is scored on.

A row without a reference solution cannot be written this way; `require_solution` refuses
it in one line, naming the row and the fix.
"""

from __future__ import annotations

from tandem.errors import TandemError

SOLUTION_TAGS = ("<|begin_of_solution|>", "<|end_of_solution|>")  # RLT's tag names (a format fact)
EXPLANATION_TAGS = ("<|begin_of_explanation|>", "<|end_of_explanation|>")
SYSTEM = ("You are a teacher. You are given a question and its correct solution. Write the explanation a "
          "student needs to reach that solution on their own: the reasoning that connects the question to it, "
          "step by step.")


def require_solution(solution, where: str, setting: str = "partner_reward.writer_sees_solution") -> str:
    """`solution` as text; a missing or blank one is one error naming `where` (a row or a file:line) and `setting`."""
    if not isinstance(solution, str) or not solution.strip():
        raise TandemError(f"{where}: no reference solution, but {setting}=true shows the writer one; give every "
                          f"row a 'solution' (scripts/prepare_deepscaler.py keeps it) or set {setting}=false")
    return solution


def writer_messages(question: str) -> list[dict]:
    """The chat the writer reads before its own turn: RLT's teacher instruction and the question."""
    return [{"role": "system", "content": SYSTEM}, {"role": "user", "content": question}]


def writer_turn_start(solution: str) -> str:
    """The start of the writer's own turn: the solution in its tags, then the opened explanation."""
    return f"{SOLUTION_TAGS[0]}\n{solution}\n{SOLUTION_TAGS[1]}\n\n{EXPLANATION_TAGS[0]}\n"


def writer_prompt_text(tokenizer, question: str, solution: str) -> str:
    """The writer's whole prompt as text: the chat template with a generation prompt, then `writer_turn_start`."""
    head = tokenizer.apply_chat_template(writer_messages(question), tokenize=False, add_generation_prompt=True)
    return head + writer_turn_start(solution)


def writer_prompt_ids(tokenizer, question: str, solution: str) -> list[int]:
    """`writer_prompt_text` as token ids (no special tokens added beyond the template's)."""
    return list(tokenizer(writer_prompt_text(tokenizer, question, solution), add_special_tokens=False)["input_ids"])
