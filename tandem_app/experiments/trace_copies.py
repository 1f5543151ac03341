"""How much of an RLT writer's explanation is the solution it was shown: shares over a distillation's traces.

A writer who sees the solution (`tandem.rewards.solution_prompt`) can explain it or copy it. Two
readings of each trace, from the text alone:

- `carries_numbers`: every number the solution states appears in the explanation at least as
  often (a copy with its item and name words changed still carries them; an explanation that
  states only the answer, or another problem's steps, does not);
- `exact`: the explanation is the solution's text, up to the whitespace around it.

A trace's solution is the one in its writer prompt (between RLT's solution tags), its
explanation the text between the think tags of RLT's student form (`student_completion`). A
trace without either is refused: these readings mean nothing for another teacher's traces.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

from tandem.errors import TandemError
from tandem.rewards.solution_prompt import SOLUTION_TAGS, THOUGHT_TAGS

NUMBER = re.compile(r"\d+(?:\.\d+)?")  # the task's numbers: whole, or with a decimal part


def between(text: str, tags: tuple[str, str]) -> str | None:
    """The text between the first opening tag and the next closing tag, stripped; None where either is missing."""
    start = text.find(tags[0])
    end = text.find(tags[1], start + len(tags[0])) if start >= 0 else -1
    return text[start + len(tags[0]):end].strip() if end >= 0 else None


def carries_numbers(explanation: str, solution: str) -> bool:
    """Whether the explanation states every number of the solution, each at least as often as the solution does."""
    need = Counter(NUMBER.findall(solution))
    return not need - Counter(NUMBER.findall(explanation))


def is_exact_copy(explanation: str, solution: str) -> bool:
    """Whether the explanation is the solution's text (the whitespace around each aside)."""
    return explanation.strip() == solution.strip()


def trace_parts(trace: dict, where: str) -> tuple[str, str]:
    """(explanation, solution) of one distillation trace; one error naming `where` when it is not RLT's form."""
    solution = between(trace.get("prompt", ""), SOLUTION_TAGS)
    explanation = between(trace.get("response", ""), THOUGHT_TAGS)
    if solution is None or explanation is None:
        raise TandemError(f"{where}: not a trace of a writer who saw the solution (no solution tags in its prompt or "
                          f"no think tags in its response); these shares are read only for RLT's teachers")
    return explanation, solution


def copy_shares(traces: Path) -> dict:
    """{n, carries_numbers, exact}: the shares of the traces in `traces` (JSONL) under each reading."""
    rows = [json.loads(line) for line in traces.read_text(encoding="utf-8").splitlines() if line.strip()]
    if not rows:
        raise TandemError(f"{traces}: no traces; run the distillation's trace step first")
    parts = [trace_parts(r, f"{traces}:{i + 1}") for i, r in enumerate(rows)]
    return {"n": len(parts), "carries_numbers": sum(carries_numbers(e, s) for e, s in parts) / len(parts),
            "exact": sum(is_exact_copy(e, s) for e, s in parts) / len(parts)}
