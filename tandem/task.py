"""A synthetic, verifiable math task for the embedded path, generated in code.

Each problem is a short word problem: a starting quantity changed by a chain of
operations (add, subtract, multiply). Its worked solution is written as short reasoning
steps separated by blank lines (`\\n\\n`, the handoff eval's step boundary) and ends in
`\\boxed{answer}`, so the same grader serves training and evaluation.

Splits are disjoint by construction: a problem belongs to the split its text hashes to.
Difficulty knobs: number of operations and operand sizes.
"""

from __future__ import annotations

import hashlib
import random
from dataclasses import asdict, dataclass

from tandem.errors import TandemError

SPLITS = {"train": (0, 90), "validation": (90, 95), "test": (95, 100)}
NAMES = ["Mia", "Leo", "Ava", "Sam", "Noah", "Zoe", "Eli", "Ivy", "Max", "Ruby", "Owen", "Lily"]
PRONOUN = {"Mia": "She", "Ava": "She", "Zoe": "She", "Ivy": "She", "Ruby": "She", "Lily": "She"}
ITEMS = ["apples", "coins", "stamps", "marbles", "books", "shells", "cards", "pens"]


@dataclass(frozen=True)
class TaskConfig:
    """Difficulty knobs of the synthetic task."""

    min_steps: int = 2
    max_steps: int = 4
    max_start: int = 60  # starting quantity in [2, max_start]
    max_operand: int = 40  # add/subtract operands in [1, max_operand]
    max_factor: int = 4  # multiply factors in [2, max_factor]

    def __post_init__(self):
        if not 1 <= self.min_steps <= self.max_steps:
            raise TandemError("task needs 1 <= min_steps <= max_steps")
        if self.max_start < 2 or self.max_operand < 1 or self.max_factor < 2:
            raise TandemError("task needs max_start >= 2, max_operand >= 1, max_factor >= 2")


@dataclass(frozen=True)
class Problem:
    id: str
    prompt: str
    answer: str
    solution: str
    split: str

    def to_dict(self) -> dict:
        return asdict(self)


def _step(rng: random.Random, cfg: TaskConfig, value: int, who: str, item: str):
    """One operation: (sentence in the problem, worked step, new value)."""
    op = rng.choice(["add", "sub", "mul"])
    if op == "mul" and value * cfg.max_factor > 999:
        op = "add"
    if op == "sub" and value < 2:
        op = "add"
    if op == "add":
        k = rng.randint(1, cfg.max_operand)
        verb = rng.choice(["gets", "finds", "buys"])
        return f"{who} {verb} {k} more {item}.", f"{who} {verb} {k} more: {value} + {k} = {value + k}.", value + k
    if op == "sub":
        k = rng.randint(1, min(cfg.max_operand, value - 1))
        verb = rng.choice(["gives away", "loses", "sells"])
        return f"{who} {verb} {k} {item}.", f"{who} {verb} {k}: {value} - {k} = {value - k}.", value - k
    k = rng.randint(2, cfg.max_factor)
    return (
        f"Then the number of {item} is multiplied by {k}.",
        f"The {item} are multiplied by {k}: {value} * {k} = {value * k}.",
        value * k,
    )


def make_problem(rng: random.Random, cfg: TaskConfig) -> tuple[str, str, str]:
    """(problem text, worked solution, answer) drawn from `rng`."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    who = PRONOUN.get(name, "He")
    value = rng.randint(2, cfg.max_start)
    sentences, steps = [f"{name} has {value} {item}."], [f"{name} starts with {value} {item}."]
    for _ in range(rng.randint(cfg.min_steps, cfg.max_steps)):
        sentence, step, value = _step(rng, cfg, value, who, item)
        sentences.append(sentence)
        steps.append(step)
    sentences.append(f"How many {item} does {name} have now?")
    steps.append(f"The answer is \\boxed{{{value}}}.")
    return " ".join(sentences), "\n\n".join(steps), str(value)


def split_of(text: str) -> str:
    bucket = int.from_bytes(hashlib.sha256(text.encode()).digest()[:4], "little") % 100
    return next(name for name, (lo, hi) in SPLITS.items() if lo <= bucket < hi)


def generate_problems(split: str, n: int, seed: int = 0, cfg: TaskConfig | None = None) -> list[Problem]:
    """`n` distinct problems of `split`, deterministic in (split, n, seed, cfg)."""
    if split not in SPLITS:
        raise TandemError(f"unknown split {split!r}; choose one of {', '.join(SPLITS)}")
    cfg = cfg or TaskConfig()
    rng = random.Random(f"tandem-task/{seed}/{split}")
    seen, out = set(), []
    for _ in range(200 * n + 1000):
        if len(out) == n:
            break
        prompt, solution, answer = make_problem(rng, cfg)
        if prompt in seen or split_of(prompt) != split:
            continue
        seen.add(prompt)
        out.append(Problem(f"{split}-{seed}-{len(out)}", prompt, answer, solution, split))
    if len(out) < n:
        raise TandemError(f"could only generate {len(out)} distinct {split} problems; raise the difficulty knobs")
    return out


def boxed_answer(text: str) -> str | None:
    """The content of the last `\\boxed{...}` (no nesting in this task), else None."""
    start = text.rfind("\\boxed{")
    if start < 0:
        return None
    end = text.find("}", start)
    return text[start + 7 : end].strip() if end > 0 else None
