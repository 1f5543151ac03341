"""Validity benchmark: does the partner score read the explanation it is given?

The partner score (`tandem.rewards.partner_score`) is meant to reward an explanation by how well the
scorer (the student) predicts the target after reading it. This script checks that on a
scorer and a data set, with the very function every trainer uses
(`tandem.rewards.partner_score.target_sequences`). Per problem it scores the target after these
explanations (`KINDS`):

- `own`: the row's own solution,
- `shuffled`: another row's solution (row i reads row i+1's, the last reads the first's:
  a fixed derangement),
- `empty`: no explanation,
- `sampled`: the scorer's own response to the question, sampled (fixed seed),
- `shuffled_gold_total`: the shuffled solution with only its last stated total changed to this
  row's gold (`with_last_total`: the last number before its last `\\boxed{`, and the box's content),
- `own_wrong_total`: the row's own solution with only its last stated total changed to a wrong
  number: the answer of the next row (in the derangement's order) whose answer differs, so the two
  controls swap the same two numbers between the same two solutions,
- `other_notation`: the row's own solution in another notation (the row's `other_notation` field;
  `--demo` writes it: the demo's solutions are verbose, the other notation the demonstrator's terse
  one, `tandem_app.task.demonstration`). Scored only where every row holds one.

The score of one explanation is the scorer's mean log-prob per target token (the partner
score's `logprob_mean` term), at `--temperature`. Three pairwise win rates (`pairwise`) decide what
the instrument reads:

- `own` over `shuffled`: a score that reads the explanation ranks `own` above;
- `own_wrong_total` over `shuffled_gold_total`: a score that reads the reasoning ranks
  `own_wrong_total` above; a score that copies the last stated number ranks `shuffled_gold_total`
  above (`reads_last_number`: true where `own_wrong_total` wins on fewer than half of the problems,
  false on more, null on exactly half);
- `own` over `other_notation` (verbose over terse on the demo's rows): two correct notations of one
  solution; a score that reads the content and not the notation ties them (near 0.5).

    python scripts/partner_score_validity.py --scorer DIR --data FILE.jsonl \\
        --target solution|answer --out FILE.json [--n N]
    python scripts/partner_score_validity.py --demo DEMO_OUT --target answer --out FILE.json

Data rows: {"question", "answer", "solution"[, "other_notation"]} (the solution is needed only for
`--target solution`, and as the `own`/`shuffled` explanations: a row without one is refused).
`--demo DEMO_OUT` (a finished `tandem-rlvr demo --out DEMO_OUT`) scores with its base
(DEMO_OUT/sft/model, unless `--scorer`) on its own test problems (task and seed from
DEMO_OUT/demo_config.json; `--n` defaults to the demo's eval count), each with both notations.
Writes JSON with `mean_score` per kind, `own_minus_shuffled_mean`, `own_beats_shuffled_fraction`,
`pairwise`, `reads_last_number`, `n`, the per-problem scores, and `provenance` (the commit, whether
the tree is dirty, the machine). Bad input is one line, exit 2.
`scripts/bench_partner_score.py` is the cost benchmark; this one measures validity.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import sys
from pathlib import Path

KINDS = ("own", "shuffled", "empty", "sampled", "shuffled_gold_total", "own_wrong_total", "other_notation")
OPTIONAL_KINDS = ("other_notation",)  # scored only where every row holds the field of that name
# (name, a, b, what a win of `a` says): the pairwise win rates that decide what the instrument reads
PAIRS = (
    ("own_vs_shuffled", "own", "shuffled", "the score reads the explanation"),
    ("own_wrong_total_vs_shuffled_gold_total", "own_wrong_total", "shuffled_gold_total",
     "the score reads the reasoning, not only the last stated number"),
    ("own_vs_other_notation", "own", "other_notation", "the score prefers the row's own notation"),
)
BATCH = 16  # rows per forward pass: bounds memory on a CPU
ROOT = Path(__file__).resolve().parents[1]
BOX = "\\boxed{"
_DIGITS = re.compile(r"\d+(?:\.\d+)?")


class BadInput(Exception):
    """Input the benchmark cannot use: one line, exit 2."""


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scorer", type=Path, default=None,
                   help="the scoring model (an HF model directory with its tokenizer); default with --demo: "
                        "DEMO_OUT/sft/model")
    src = p.add_mutually_exclusive_group(required=True)
    src.add_argument("--data", type=Path, help="JSONL rows with question, answer, solution[, other_notation]")
    src.add_argument("--demo", type=Path, help="a finished demo's --out: its test problems, both notations")
    p.add_argument("--target", required=True, choices=("solution", "answer"), help="what the scorer is scored on")
    p.add_argument("--out", required=True, type=Path, help="JSON output path")
    p.add_argument("--n", type=int, default=None,
                   help="score the first N rows (default: all, or the demo's eval count; at least 2)")
    p.add_argument("--temperature", type=float, default=1.0, help="log-prob and sampling temperature (default 1.0)")
    p.add_argument("--max-new-tokens", type=int, default=128, help="budget of the sampled response (default 128)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sampled responses (default 0)")
    args = p.parse_args(argv)
    if args.scorer is None and args.demo is None:
        p.error("--scorer is required with --data")
    return args


def read_rows(path: Path, n: int | None, target: str) -> list[dict]:
    """The first `n` rows; BadInput for a missing file, a row without question/answer, or without a solution."""
    if not path.is_file():
        raise BadInput(f"--data {path}: no such file")
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise BadInput(f"--data {path}:{lineno}: not a JSON object ({e.msg})") from None
            if not isinstance(rows[-1], dict):
                raise BadInput(f"--data {path}:{lineno}: not a JSON object")
    return check_rows(rows, n, target, f"--data {path}")


def check_rows(rows: list[dict], n: int | None, target: str, where: str) -> list[dict]:
    """The first `n` of `rows`, checked (BadInput naming `where`)."""
    if n is not None and n < 2:
        raise BadInput(f"--n {n}: score at least 2 rows (the shuffled explanation is another row's)")
    if n is not None and n > len(rows):
        raise BadInput(f"--n {n}: {where} holds {len(rows)} rows; ask for at most that many (or leave --n out)")
    rows = rows[:n] if n is not None else rows
    if len(rows) < 2:
        raise BadInput(f"{where}: needs at least 2 rows (the shuffled explanation is another row's), got {len(rows)}")
    for i, row in enumerate(rows):
        for field in ("question", "answer"):
            if row.get(field) in (None, ""):
                raise BadInput(f"{where}: row {i} has no {field!r}")
        if not row.get("solution"):  # the own and shuffled explanations are solutions, whatever the target
            raise BadInput(f"{where}: row {i} has no 'solution' column (--target {target} scores each row's "
                           "own solution against another's); use data with worked solutions")
    shuffled = derangement(len(rows))
    for i, row in enumerate(rows):  # own against shuffled means nothing where the two are one text
        if row["solution"] == rows[shuffled[i]]["solution"]:
            raise BadInput(f"{where}: rows {i} and {shuffled[i]} hold the same solution, so row {i}'s own and "
                           "shuffled explanations are one text; give distinct problems")
    for i, row in enumerate(rows):  # the number-swap controls change the last number before the answer
        if not _DIGITS.search(str(row["solution"]).split(BOX)[0]):
            raise BadInput(f"{where}: row {i}'s solution states no number before its answer, so its last total "
                           "cannot be swapped (shuffled_gold_total, own_wrong_total)")
    if len({str(row["answer"]) for row in rows}) < 2:
        raise BadInput(f"{where}: every row has the answer {rows[0]['answer']!r}, so no row has a wrong total to "
                       "swap in (own_wrong_total); give problems with different answers")
    holding = [i for i, row in enumerate(rows) if row.get("other_notation")]
    if holding and len(holding) < len(rows):
        missing = next(i for i, row in enumerate(rows) if not row.get("other_notation"))
        raise BadInput(f"{where}: row {missing} has no 'other_notation' but row {holding[0]} has one; give it to "
                       "every row or to none")
    return rows


def demo_rows(demo: Path, n: int | None, target: str) -> list[dict]:
    """The test problems of the demo at `demo` (task and seed from its demo_config.json), each with its solution in
    the demo's verbose notation (`Problem.solution`) and, as `other_notation`, the demonstrator's terse one."""
    import random

    from tandem_app.experiments.demo_folder import DEMO_RECORD
    from tandem_app.task import Demonstrations, TaskConfig, demonstration, generate_problems

    record = demo / DEMO_RECORD
    if not record.is_file():
        raise BadInput(f"--demo {demo}: no {DEMO_RECORD}; give the --out of a finished tandem-rlvr demo")
    cfg = json.loads(record.read_text(encoding="utf-8"))
    task = TaskConfig(**{**cfg["task"], "operations": tuple(cfg["task"]["operations"])})
    count = cfg["eval"]["n_problems"] if n is None else n
    if count < 2:
        raise BadInput(f"--n {count}: score at least 2 rows (the shuffled explanation is another row's)")
    terse = Demonstrations(terse_prob=1.0, terse_keep_prob=1.0)  # never leaves the terse notation, never slips
    rows = []
    for p in generate_problems("test", count, cfg["seed"], task):
        rows.append({"id": p.id, "question": p.prompt, "answer": p.answer, "solution": p.solution,
                     "other_notation": demonstration(p, terse, random.Random(p.id))})
    return check_rows(rows, None, target, f"--demo {demo}")


def demo_identity(demo: Path | None) -> dict | None:
    """Which demo's base and problems were scored: its quick flag, seed and task (from its demo_config.json)."""
    if demo is None:
        return None
    from tandem_app.experiments.demo_folder import DEMO_RECORD

    cfg = json.loads((demo / DEMO_RECORD).read_text(encoding="utf-8"))
    return {"quick": cfg.get("quick"), "seed": cfg.get("seed"), "task": cfg.get("task")}


def derangement(n: int) -> list[int]:
    """Row i reads row (i + 1) mod n's solution: no row reads its own."""
    return [(i + 1) % n for i in range(n)]


def with_last_total(solution: str, value: str) -> str:
    """`solution` with only its last stated total changed to `value`: the last number before its last `\\boxed{`
    (a `-` directly before it read as its sign where `tandem.rewards.answer_text.is_sign` says so) and the box's
    content; a solution without a box has its last number changed."""
    from tandem.rewards.answer_text import is_sign

    at = solution.rfind(BOX)
    head, tail = (solution[:at], solution[at:]) if at >= 0 else (solution, "")
    last = None
    for last in _DIGITS.finditer(head):
        pass
    if last is None:
        raise BadInput(f"a solution states no number before its answer: {solution[:60]!r}")
    begin = last.start() - 1 if last.start() > 0 and head[last.start() - 1] == "-" and is_sign(head, last.start() - 1) \
        else last.start()
    head = head[:begin] + value + head[last.end():]
    if tail:
        depth, end = 0, len(BOX)
        while end < len(tail) and (tail[end] != "}" or depth):
            depth += {"{": 1, "}": -1}.get(tail[end], 0)
            end += 1
        tail = BOX + value + tail[end:]
    return head + tail


def wrong_totals(rows: list[dict]) -> list[str]:
    """Per row, a wrong total: the answer of the next row after it (in the derangement's order) whose answer differs."""
    n = len(rows)
    out = []
    for i, row in enumerate(rows):
        j = next((i + d) % n for d in range(1, n) if str(rows[(i + d) % n]["answer"]) != str(row["answer"]))
        out.append(str(rows[j]["answer"]))
    return out


def explanation_texts(rows: list[dict]) -> dict[str, list[str]]:
    """The text explanations per kind (all but `empty` and `sampled`, which are not texts of the data)."""
    solutions = [str(r["solution"]) for r in rows]
    shuffled = [solutions[j] for j in derangement(len(rows))]
    out = {"own": solutions, "shuffled": shuffled,
           "shuffled_gold_total": [with_last_total(s, str(r["answer"])) for s, r in zip(shuffled, rows)],
           "own_wrong_total": [with_last_total(s, w) for s, w in zip(solutions, wrong_totals(rows))]}
    if all(r.get("other_notation") for r in rows):
        out["other_notation"] = [str(r["other_notation"]) for r in rows]
    return out


def prompt_ids(tokenizer, question: str) -> list[int]:
    """The plain chat prompt: the question as the user turn, ending in the assistant header."""
    text = tokenizer.apply_chat_template([{"role": "user", "content": question}], tokenize=False,
                                         add_generation_prompt=True)
    return tokenizer(text, add_special_tokens=False)["input_ids"]


def as_response(tokenizer, text: str) -> list[int]:
    """`text` as a finished response: its tokens and the end-of-turn token, as a rollout ends."""
    from tandem.rewards.partner_score import end_of_turn_ids

    return tokenizer(text, add_special_tokens=False)["input_ids"] + [end_of_turn_ids(tokenizer)[0]]


def sample_responses(model, tokenizer, prompts: list[list[int]], max_new: int, temperature: float,
                     seed: int) -> list[list[int]]:
    """The scorer's own sampled response to each prompt, ending at its first end-of-turn token."""
    import torch

    from tandem.rewards.partner_score import end_of_turn_ids

    ends = end_of_turn_ids(tokenizer)
    torch.manual_seed(seed)
    out = []
    for start in range(0, len(prompts), BATCH):
        chunk = prompts[start : start + BATCH]
        width = max(len(p) for p in chunk)
        ids = torch.tensor([[tokenizer.pad_token_id] * (width - len(p)) + p for p in chunk])  # left-padded
        mask = torch.tensor([[0] * (width - len(p)) + [1] * len(p) for p in chunk])
        got = model.generate(input_ids=ids, attention_mask=mask, do_sample=True, temperature=temperature, top_k=0,
                             top_p=1.0, max_new_tokens=max_new, eos_token_id=ends, pad_token_id=tokenizer.pad_token_id)
        for row in got[:, width:].tolist():
            cut = next((i + 1 for i, t in enumerate(row) if t in ends), len(row))
            out.append(row[:cut])
    return out


def mean_target_logprobs(model, tokenizer, prompts, explanations, golds, target: str, temperature: float) -> list[float]:
    """Per row: the scorer's mean log-prob per target token after the explanation, read as every trainer reads it."""
    from tandem.rewards import partner_score as ps
    from tandem.models.loading import context_length

    pairs = [ps.target_sequences(tokenizer, p, e, g, target) for p, e, g in zip(prompts, explanations, golds)]
    for row, (context, scored) in enumerate(pairs):
        ps.check_fits(row, context, scored, context_length(model), target)
    out = []
    for start in range(0, len(pairs), BATCH):
        chunk = pairs[start : start + BATCH]
        lp, mask = ps.scored_logprobs(model, [c for c, _ in chunk], [s for _, s in chunk], tokenizer.pad_token_id,
                                      temperature)
        out += ps.masked_reduce(lp, mask, "mean").tolist()
    return out


def win_rate(a: list[float], b: list[float]) -> dict:
    """How often `a` scores strictly above `b` problem by problem (a tie does not beat), ties, and the mean gap."""
    n = len(a)
    diffs = [x - y for x, y in zip(a, b)]
    return {"a_beats_b_fraction": sum(d > 0 for d in diffs) / n, "ties": sum(d == 0 for d in diffs),
            "mean_a_minus_b": sum(diffs) / n}


def summarize(scores: dict[str, list[float]]) -> dict:
    """The benchmark's fields from per-kind, per-problem scores (the pairs whose two kinds were both scored)."""
    n = len(scores["own"])
    own_shuffled = win_rate(scores["own"], scores["shuffled"])
    out = {"n": n, "mean_score": {k: sum(v) / n for k, v in scores.items()},
           "own_minus_shuffled_mean": own_shuffled["mean_a_minus_b"],
           "own_beats_shuffled_fraction": own_shuffled["a_beats_b_fraction"]}
    pairwise = {name: {"a": a, "b": b, "a_wins_means": means, **win_rate(scores[a], scores[b])}
                for name, a, b, means in PAIRS if a in scores and b in scores}
    if pairwise:
        out["pairwise"] = pairwise
    swap = pairwise.get("own_wrong_total_vs_shuffled_gold_total")
    if swap:  # the own reasoning with a wrong last number loses to another's reasoning ending in the gold
        won = swap["a_beats_b_fraction"]
        out["reads_last_number"] = None if won == 0.5 else won < 0.5
    return out


def notation_shares(texts: dict[str, list[str]]) -> dict[str, float]:
    """Per text kind, the share of its steps in the demo's terse notation (`tandem_app.task.terse_share`; NaN where
    no step is in either demo notation): 0 = verbose, 1 = terse."""
    from tandem_app.task import terse_share

    return {k: terse_share(v) for k, v in texts.items()}


def provenance() -> dict:
    """What ran it: the commit, whether the tree differs from it (and where), and the machine."""
    import torch

    def git(*cmd: str) -> str | None:
        try:
            done = subprocess.run(["git", *cmd], cwd=ROOT, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            return None
        return done.stdout if done.returncode == 0 else None

    commit = git("rev-parse", "HEAD")
    status = git("status", "--porcelain", "--untracked-files=no")
    cpu = None
    try:
        cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                    if line.startswith("model name")), None)
    except OSError:
        pass
    return {"commit": commit.strip() if commit else None,
            "dirty": None if status is None else bool(status.strip()),
            "dirty_paths": None if status is None else [line[3:] for line in status.splitlines() if line.strip()],
            "machine": {"platform": platform.platform(), "cpu_model": cpu or platform.processor() or None,
                        "cpu_count": os.cpu_count(), "torch_threads": torch.get_num_threads()},
            "python": platform.python_version(), "torch": torch.__version__}


def run(args) -> dict:
    import torch

    with torch.no_grad():  # scoped: a caller in the same process (a test) keeps its grad mode
        return _run(args)


def _run(args) -> dict:
    from tandem.models.loading import load_model, load_tokenizer

    if args.demo is not None:
        rows = demo_rows(args.demo, args.n, args.target)
        scorer = args.scorer or args.demo / "sft" / "model"
    else:
        rows, scorer = read_rows(args.data, args.n, args.target), args.scorer
    if not scorer.is_dir():
        raise BadInput(f"scorer {scorer}: no such model directory")
    tokenizer, model = load_tokenizer(scorer), load_model(scorer)
    prompts = [prompt_ids(tokenizer, r["question"]) for r in rows]
    texts = explanation_texts(rows)
    explanations = {k: [as_response(tokenizer, t) for t in v] for k, v in texts.items()}
    explanations["empty"] = [[] for _ in rows]
    explanations["sampled"] = sample_responses(model, tokenizer, prompts, args.max_new_tokens, args.temperature,
                                               args.seed)
    golds = [str(r["solution"] if args.target == "solution" else r["answer"]) for r in rows]
    scores = {k: mean_target_logprobs(model, tokenizer, prompts, explanations[k], golds, args.target, args.temperature)
              for k in KINDS if k in explanations}
    return {"scorer": str(scorer), "data": str(args.data if args.demo is None else args.demo),
            "rows": "demo test problems" if args.demo is not None else "data", "demo": demo_identity(args.demo),
            "target": args.target,
            "temperature": args.temperature, "seed": args.seed,
            "score": "mean log-prob per target token after the explanation (tandem.rewards.partner_score.target_sequences)",
            "kinds_skipped": {k: "no row holds an 'other_notation' field" for k in OPTIONAL_KINDS if k not in scores},
            "terse_share": notation_shares(texts),
            **summarize(scores), "provenance": provenance(), "per_problem": scores,
            "examples": {k: v[0] for k, v in texts.items()}}


def main(argv=None) -> int:
    from tandem.errors import TandemError

    args = parse_args(argv)
    try:
        result = run(args)
    except (BadInput, TandemError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")
    keys = ("n", "mean_score", "own_minus_shuffled_mean", "own_beats_shuffled_fraction", "reads_last_number")
    summary = {k: result[k] for k in keys if k in result}
    summary["pairwise"] = {k: v["a_beats_b_fraction"] for k, v in result.get("pairwise", {}).items()}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
