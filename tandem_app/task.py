"""A synthetic, verifiable math task for the embedded path, generated in code.

Each problem is a short word problem: a starting quantity changed by a chain of
operations (add, subtract, multiply). Its worked solution is written as short reasoning
steps separated by blank lines (`\\n\\n`, the handoff eval's step boundary) and ends in
`\\boxed{answer}`, so the same grader serves training and evaluation.

Splits are disjoint by construction: a problem belongs to the split its text hashes to.
Difficulty knobs: number of operations, which operations, and operand sizes.

`demonstration` writes the SFT data of a base that reasons in two notations (see
`Demonstrations`): every step either keeps the **running total** in words (verbose,
`Problem.solution`'s notation) or keeps only the **net change** since the start in
symbols (terse). Switching notation needs arithmetic that is not written down, and
the demonstrator can slip there or anywhere else, so the base makes random, fixable
errors. `model_spec/DEMO_DESIGN.md` says why the demo uses it.
"""

from __future__ import annotations

import hashlib
import random
import re
from dataclasses import asdict, dataclass

from tandem.errors import TandemError

SPLITS = {"train": (0, 90), "validation": (90, 95), "test": (95, 100)}
NAMES = ["Mia", "Leo", "Ava", "Sam", "Noah", "Zoe", "Eli", "Ivy", "Max", "Ruby", "Owen", "Lily"]
PRONOUN = {"Mia": "She", "Ava": "She", "Zoe": "She", "Ivy": "She", "Ruby": "She", "Lily": "She"}
ITEMS = ["apples", "coins", "stamps", "marbles", "books", "shells", "cards", "pens"]
OPERATIONS = ("add", "sub", "mul")
VERBOSE, TERSE = "verbose", "terse"


@dataclass(frozen=True)
class TaskConfig:
    """Difficulty knobs of the synthetic task."""

    min_steps: int = 2
    max_steps: int = 4
    max_start: int = 60  # starting quantity in [2, max_start]
    max_operand: int = 40  # add/subtract operands in [1, max_operand]
    max_factor: int = 4  # multiply factors in [2, max_factor]
    operations: tuple[str, ...] = OPERATIONS  # drawn uniformly at each step
    stay_above_start: bool = False  # subtractions never take the quantity below where it started

    def __post_init__(self):
        if not 1 <= self.min_steps <= self.max_steps:
            raise TandemError("task needs 1 <= min_steps <= max_steps")
        if self.max_start < 2 or self.max_operand < 1 or self.max_factor < 2:
            raise TandemError("task needs max_start >= 2, max_operand >= 1, max_factor >= 2")
        if not self.operations or set(self.operations) - set(OPERATIONS):
            raise TandemError(f"task operations must be a non-empty subset of {', '.join(OPERATIONS)}")


@dataclass(frozen=True)
class Operation:
    """One change to the quantity: `kind` add|sub|mul by `k`; `verb` is the problem's wording."""

    kind: str
    k: int
    verb: str = ""

    def apply(self, value: int) -> int:
        return {"add": value + self.k, "sub": value - self.k, "mul": value * self.k}[self.kind]


@dataclass(frozen=True)
class Problem:
    id: str
    prompt: str
    answer: str
    solution: str
    split: str
    start: int = 0
    ops: tuple[Operation, ...] = ()
    who: str = ""  # the pronoun the steps use
    name: str = ""
    item: str = ""

    def to_dict(self) -> dict:
        return asdict(self)


def _operation(rng: random.Random, cfg: TaskConfig, value: int, start: int) -> Operation:
    floor = start if cfg.stay_above_start else 1  # the least the quantity may drop to
    op = rng.choice(cfg.operations)
    if op == "mul" and value * cfg.max_factor > 999:
        op = "add"
    if op == "sub" and value - floor < 1:
        op = "add"
    if op == "add":
        return Operation("add", rng.randint(1, cfg.max_operand), rng.choice(["gets", "finds", "buys"]))
    if op == "sub":
        k = rng.randint(1, min(cfg.max_operand, value - floor))
        return Operation("sub", k, rng.choice(["gives away", "loses", "sells"]))
    return Operation("mul", rng.randint(2, cfg.max_factor))


def _sentence(op: Operation, who: str, item: str) -> str:
    if op.kind == "add":
        return f"{who} {op.verb} {op.k} more {item}."
    if op.kind == "sub":
        return f"{who} {op.verb} {op.k} {item}."
    return f"Then the number of {item} is multiplied by {op.k}."


def verbose_step(op: Operation, who: str, item: str, total: int, result: int | None = None) -> str:
    """`op` applied to the running total, in words; `result` overrides the true one (a slip)."""
    result = op.apply(total) if result is None else result
    if op.kind == "add":
        return f"{who} {op.verb} {op.k} more: {total} + {op.k} = {result}."
    if op.kind == "sub":
        return f"{who} {op.verb} {op.k}: {total} - {op.k} = {result}."
    return f"The {item} are multiplied by {op.k}: {total} * {op.k} = {result}."


def terse_step(op: Operation, net: int, result: int | None = None) -> str:
    """`op` applied to the net change since the start, arithmetic only (add/sub; `result` as in `verbose_step`)."""
    result = op.apply(net) if result is None else result
    return f"{net} {'+' if op.kind == 'add' else '-'} {op.k} = {result}."


def make_problem(rng: random.Random, cfg: TaskConfig) -> dict:
    """The fields of a `Problem` (all but id and split) drawn from `rng`."""
    name, item = rng.choice(NAMES), rng.choice(ITEMS)
    who = PRONOUN.get(name, "He")
    start = value = rng.randint(2, cfg.max_start)
    sentences, steps, ops = [f"{name} has {value} {item}."], [f"{name} starts with {value} {item}."], []
    for _ in range(rng.randint(cfg.min_steps, cfg.max_steps)):
        op = _operation(rng, cfg, value, start)
        sentences.append(_sentence(op, who, item))
        steps.append(verbose_step(op, who, item, value))
        ops.append(op)
        value = op.apply(value)
    sentences.append(f"How many {item} does {name} have now?")
    steps.append(f"The answer is \\boxed{{{value}}}.")
    return dict(prompt=" ".join(sentences), answer=str(value), solution="\n\n".join(steps),
                start=start, ops=tuple(ops), who=who, name=name, item=item)


@dataclass(frozen=True)
class Demonstrations:
    """How the SFT demonstrator writes worked solutions; the defaults give `Problem.solution` exactly.

    A solution starts in the terse net-change notation with probability `terse_prob`,
    else in the verbose running-total notation. After each terse step the demonstrator
    keeps to the terse notation with probability `terse_keep_prob`; otherwise it drops
    back to the verbose notation for the rest of the solution, and then, with
    probability `misread_prob`, restates the net change as if it were the total (it
    forgets to add the start back). Verbose steps never switch notation. Every step's
    result is off by one with probability `slip_prob`. The demonstrator carries on
    from what it wrote, so a slip or a misread makes the final answer wrong.
    """

    terse_prob: float = 0.0
    terse_keep_prob: float = 1.0
    misread_prob: float = 0.0
    slip_prob: float = 0.0

    def __post_init__(self):
        for name in ("terse_prob", "terse_keep_prob", "misread_prob", "slip_prob"):
            if not 0.0 <= getattr(self, name) <= 1.0:
                raise TandemError(f"demonstrations: {name} must be in [0, 1], got {getattr(self, name)}")


# The demo's task and demonstrator (`tandem_app/experiments/demo.py`, `model_spec/DEMO_DESIGN.md`): four
# additions or subtractions of small numbers, a demonstrator who drops out of the terse notation
# and misreads. Here, not in the demo, because distillation's defaults use them too.
DEMO_TASK = TaskConfig(
    min_steps=4, max_steps=4, max_start=12, max_operand=5, operations=("add", "sub"), stay_above_start=True
)
DEMO_DEMONSTRATIONS = Demonstrations(terse_prob=0.6, terse_keep_prob=0.7, misread_prob=0.8)


def _slipped(rng: random.Random, value: int, prob: float) -> int:
    if prob == 0.0 or rng.random() >= prob:
        return value
    return value + 1 if value < 1 or rng.random() < 0.5 else value - 1


def demonstration(p: Problem, demos: Demonstrations, rng: random.Random) -> str:
    """A worked solution of `p` written by the demonstrator `demos` (random draws from `rng`)."""
    terse = bool(p.ops) and all(op.kind != "mul" for op in p.ops) and rng.random() < demos.terse_prob
    steps = [f"Start {p.start}." if terse else f"{p.name} starts with {p.start} {p.item}."]
    total = p.start
    for op in p.ops:
        if terse and rng.random() >= demos.terse_keep_prob:
            terse = False
            if rng.random() < demos.misread_prob:
                total = total - p.start  # the net change read as the total
        result = _slipped(rng, op.apply(total), demos.slip_prob)
        if terse:
            steps.append(terse_step(op, total - p.start, result - p.start))
        else:
            steps.append(verbose_step(op, p.who, p.item, total, result))
        total = result
    if terse:
        net = total - p.start
        steps.append(f"{p.start} {'+' if net >= 0 else '-'} {abs(net)} = {total}. \\boxed{{{total}}}")
    else:
        steps.append(f"The answer is \\boxed{{{total}}}.")
    return "\n\n".join(steps)


def notation_of(step: str) -> str | None:
    """`terse` or `verbose` for a start or operation step as `demonstration` writes it, else None."""
    step = step.strip()
    if re.fullmatch(r"Start -?\d+\.|-?\d+ [-+] \d+ = -?\d+\.", step):
        return TERSE
    if re.fullmatch(r"\w+ starts with -?\d+ \w+\.", step) or (
        re.search(r": -?\d+ [-+*] \d+ = -?\d+\.$", step) and not step.startswith("The answer")
    ):
        return VERBOSE
    return None


def terse_share(texts: list[str]) -> float:
    """The share of start and operation steps written in the terse notation, over all `texts`."""
    notes = [notation_of(step) for text in texts for step in text.split("\n\n")]
    terse, verbose = notes.count(TERSE), notes.count(VERBOSE)
    return terse / (terse + verbose) if terse + verbose else float("nan")


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
        fields = make_problem(rng, cfg)
        if fields["prompt"] in seen or split_of(fields["prompt"]) != split:
            continue
        seen.add(fields["prompt"])
        out.append(Problem(id=f"{split}-{seed}-{len(out)}", split=split, **fields))
    if len(out) < n:
        raise TandemError(f"could only generate {len(out)} distinct {split} problems; raise the difficulty knobs")
    return out
