"""Validity benchmark: does the partner score read the explanation it is given?

The partner score (`tandem.rewards.partner_score`) is meant to reward an explanation by how well the
scorer (the student) predicts the target after reading it. This script checks that on a
scorer and a data set, with the very function every trainer uses
(`tandem.rewards.partner_score.target_sequences`). Per problem it scores the target after four
explanations:

- `own`: the row's own solution,
- `shuffled`: another row's solution (row i reads row i+1's, the last reads the first's:
  a fixed derangement),
- `empty`: no explanation,
- `sampled`: the scorer's own response to the question, sampled (fixed seed).

The score of one explanation is the scorer's mean log-prob per target token (the partner
score's `logprob_mean` term), at `--temperature`. A score that reads the explanation gives
`own` well above `shuffled`:

    python scripts/partner_score_validity.py --scorer DIR --data FILE.jsonl \
        --target solution|answer --out FILE.json [--n N]

Data rows: {"question", "answer", "solution"} (the solution is needed only for
`--target solution`, and as the `own`/`shuffled` explanations: a row without one is refused).
Writes JSON with `mean_score` per kind, `own_minus_shuffled_mean`,
`own_beats_shuffled_fraction`, `n` and the per-problem scores. Bad input is one line, exit 2.
`scripts/bench_partner_score.py` is the cost benchmark; this one measures validity.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

KINDS = ("own", "shuffled", "empty", "sampled")
BATCH = 16  # rows per forward pass: bounds memory on a CPU


class BadInput(Exception):
    """Input the benchmark cannot use: one line, exit 2."""


def parse_args(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0], epilog=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--scorer", required=True, type=Path, help="the scoring model (an HF model directory with its tokenizer)")
    p.add_argument("--data", required=True, type=Path, help="JSONL rows with question, answer, solution")
    p.add_argument("--target", required=True, choices=("solution", "answer"), help="what the scorer is scored on")
    p.add_argument("--out", required=True, type=Path, help="JSON output path")
    p.add_argument("--n", type=int, default=None, help="score the first N rows (default: all; at least 2)")
    p.add_argument("--temperature", type=float, default=1.0, help="log-prob and sampling temperature (default 1.0)")
    p.add_argument("--max-new-tokens", type=int, default=128, help="budget of the sampled response (default 128)")
    p.add_argument("--seed", type=int, default=0, help="seed of the sampled responses (default 0)")
    return p.parse_args(argv)


def read_rows(path: Path, n: int | None, target: str) -> list[dict]:
    """The first `n` rows; BadInput for a missing file, a row without question/answer, or without a solution."""
    if not path.is_file():
        raise BadInput(f"--data {path}: no such file")
    if n is not None and n < 2:
        raise BadInput(f"--n {n}: score at least 2 rows (the shuffled explanation is another row's)")
    rows = []
    for lineno, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
        if line.strip():
            try:
                rows.append(json.loads(line))
            except json.JSONDecodeError as e:
                raise BadInput(f"--data {path}:{lineno}: not a JSON object ({e.msg})") from None
            if not isinstance(rows[-1], dict):
                raise BadInput(f"--data {path}:{lineno}: not a JSON object")
    if n is not None and n > len(rows):
        raise BadInput(f"--n {n}: --data {path} holds {len(rows)} rows; ask for at most that many (or leave --n out)")
    rows = rows[:n] if n is not None else rows
    if len(rows) < 2:
        raise BadInput(f"--data {path}: needs at least 2 rows (the shuffled explanation is another row's), got {len(rows)}")
    for i, row in enumerate(rows):
        for field in ("question", "answer"):
            if row.get(field) in (None, ""):
                raise BadInput(f"--data {path}: row {i} has no {field!r}")
        if not row.get("solution"):  # the own and shuffled explanations are solutions, whatever the target
            raise BadInput(f"--data {path}: row {i} has no 'solution' column (--target {target} scores each row's "
                           "own solution against another's); use data with worked solutions")
    shuffled = derangement(len(rows))
    for i, row in enumerate(rows):  # own against shuffled means nothing where the two are one text
        if row["solution"] == rows[shuffled[i]]["solution"]:
            raise BadInput(f"--data {path}: rows {i} and {shuffled[i]} hold the same solution, so row {i}'s own and "
                           "shuffled explanations are one text; give distinct problems")
    return rows


def derangement(n: int) -> list[int]:
    """Row i reads row (i + 1) mod n's solution: no row reads its own."""
    return [(i + 1) % n for i in range(n)]


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


def summarize(scores: dict[str, list[float]]) -> dict:
    """The benchmark's fields from per-kind, per-problem scores."""
    n = len(scores["own"])
    diffs = [o - s for o, s in zip(scores["own"], scores["shuffled"])]
    return {"n": n, "mean_score": {k: sum(v) / n for k, v in scores.items()},
            "own_minus_shuffled_mean": sum(diffs) / n,
            "own_beats_shuffled_fraction": sum(d > 0 for d in diffs) / n}


def run(args) -> dict:
    import torch

    with torch.no_grad():  # scoped: a caller in the same process (a test) keeps its grad mode
        return _run(args)


def _run(args) -> dict:
    from tandem.models.loading import load_model, load_tokenizer

    rows = read_rows(args.data, args.n, args.target)
    tokenizer, model = load_tokenizer(args.scorer), load_model(args.scorer)
    prompts = [prompt_ids(tokenizer, r["question"]) for r in rows]
    own = [as_response(tokenizer, r["solution"]) for r in rows]
    explanations = {"own": own, "shuffled": [own[j] for j in derangement(len(rows))], "empty": [[] for _ in rows],
                    "sampled": sample_responses(model, tokenizer, prompts, args.max_new_tokens, args.temperature,
                                                args.seed)}
    golds = [str(r["solution"] if args.target == "solution" else r["answer"]) for r in rows]
    scores = {k: mean_target_logprobs(model, tokenizer, prompts, explanations[k], golds, args.target, args.temperature)
              for k in KINDS}
    return {"scorer": str(args.scorer), "data": str(args.data), "target": args.target,
            "temperature": args.temperature, "seed": args.seed,
            "score": "mean log-prob per target token after the explanation (tandem.rewards.partner_score.target_sequences)",
            **summarize(scores), "per_problem": scores}


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
    summary = {k: result[k] for k in ("n", "mean_score", "own_minus_shuffled_mean", "own_beats_shuffled_fraction")}
    print(json.dumps(summary))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
