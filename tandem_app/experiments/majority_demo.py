"""Maj@k of the demo's seniors: do a senior's samples agree on the right answer? (RLTR's consistency claim)

On finished demo seeds (OUT/seed-S), each senior (GRPO, TRL, the base, and the partner variants
`tandem-rlvr demo --partner` trained on every seed) writes k solo samples per test problem
at the eval's sampling; pass@1 is their mean accuracy, Maj@k the share of problems whose
majority answer is right (`tandem_eval.core.majority`: answers grouped by the grader's
equivalence). Each senior's samples are cached in OUT/seed-S/maj-eval/ARM.json (their answers
and per-problem correct counts; the vote is counted from the answers on every read); OUT/majority.md holds pass@1 and Maj@k per seed and arm, and each
arm's Maj@k minus GRPO's and TRL's per seed with the mean ± SE over seeds.

    python -m tandem_app.experiments.majority_demo --out runs/demo-partner --seeds 0 1 2 --k 8
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tandem.io.jsonl import write_json
from tandem_app.stats import mean_and_se, over_seeds_text
from tandem_app.experiments.leak_demo import ARMS, OPTIONAL_ARMS
from tandem_app.experiments.seeds import finished_seeds_parser

BASE = {"base": "base (SFT, no RL)"}
AGAINST = ("grpo", "tandem")


def model_dir(seed_dir: Path, arm: str) -> Path:
    if arm == "base":
        return seed_dir / "sft" / "model"
    return seed_dir / (arm if arm in ARMS else f"partner-{arm}") / "model"


def evaluate_arm(seed_dir: Path, seed: int, arm: str, k: int, quick: bool = False) -> dict:
    """k solo samples of `arm` per test problem, their pass@1 and Maj@k; cached in SEED_DIR/maj-eval/ARM.json."""
    path = seed_dir / "maj-eval" / f"{arm}.json"
    if path.is_file():
        cached = json.loads(path.read_text(encoding="utf-8"))
        if cached["k"] == k:
            return with_majority(cached, seed, quick)
    import torch

    from tandem.process.coins import request_key
    from tandem.grading import extract_answer, reward
    from tandem_app.experiments.demo import demo_config
    from tandem_app.task import generate_problems
    from tandem_app.train.data import prompt_ids_batch
    from tandem_app.train.evaluate import engine_settings
    from tandem_eval.core.backends import EvalBackend

    cfg = demo_config(quick=quick, seed=seed)
    problems = generate_problems("test", cfg.eval.n_problems, cfg.seed, cfg.task)
    backend = EvalBackend(engine_settings(model_dir(seed_dir, arm), None, cfg.eval), cfg.eval.sampling, progress=False)
    prompts = prompt_ids_batch(backend.tokenizer, problems)
    rows = [(i, j) for i in range(len(problems)) for j in range(k)]
    with torch.no_grad():
        done = backend.solo([prompts[i] for i, _ in rows],
                            [request_key(f"maj/{seed}/{problems[i].id}", j) for i, j in rows])
    texts = [[done[i * k + j].text for j in range(k)] for i in range(len(problems))]
    result = {"k": k, "problems": len(problems),
              "correct": [sum(reward(t, p.answer) for t in ts) for ts, p in zip(texts, problems)],
              "answers": [[extract_answer(t) for t in ts] for ts in texts]}
    result["pass@1"] = sum(result["correct"]) / (k * len(problems))
    write_json(path, result)  # the samples' answers: the vote is counted on every read, by today's rule
    return with_majority(result, seed, quick)


def with_majority(result: dict, seed: int, quick: bool = False) -> dict:
    """`result` with each problem's majority verdict and Maj@k, voted from its cached answers."""
    from tandem.grading import is_equivalent
    from tandem_app.experiments.demo import demo_config
    from tandem_app.task import generate_problems
    from tandem_eval.core.majority import vote

    cfg = demo_config(quick=quick, seed=seed)
    golds = [p.answer for p in generate_problems("test", cfg.eval.n_problems, cfg.seed, cfg.task)]
    if len(golds) != result["problems"]:
        raise ValueError(f"cached Maj@k of {result['problems']} problems, the demo's test set has {len(golds)}")
    right = [(won := vote(answers)) is not None and is_equivalent(won, gold)
             for answers, gold in zip(result["answers"], golds)]
    return {**result, "majority_right": right, f"maj@{result['k']}": sum(right) / len(golds)}


def arms_on_every_seed(out: Path, seeds: list[int]) -> dict[str, str]:
    names = {**BASE, **ARMS, **OPTIONAL_ARMS}
    return {a: label for a, label in names.items()
            if all(model_dir(out / f"seed-{s}", a).is_dir() for s in seeds)}


def write_table(out: Path, seeds: list[int], k: int, per_seed: dict[int, dict[str, dict]], threads: int | None = None) -> Path:
    arms = list(per_seed[seeds[0]])
    names = {**BASE, **ARMS, **OPTIONAL_ARMS}
    maj = f"maj@{k}"
    lines = [f"# Maj@{k} of the demo's seniors, seeds {', '.join(map(str, seeds))}", "",
             f"{k} solo samples per test problem; Maj@{k}: the share of problems whose majority answer is right.", "",
             "| arm | " + " | ".join(f"pass@1 / {maj} s{s}" for s in seeds) + f" | {maj} - pass@1, mean over seeds |",
             "|" + "---|" * (2 + len(seeds))]
    for a in arms:
        gains = [per_seed[s][a][maj] - per_seed[s][a]["pass@1"] for s in seeds]
        lines.append(f"| {names[a]} | " + " | ".join(f"{per_seed[s][a]['pass@1']:.3f} / {per_seed[s][a][maj]:.3f}"
                                                     for s in seeds) + f" | {sum(gains) / len(gains):+.3f} |")
    diffs = {}
    for against in AGAINST:
        lines += ["", f"## {maj} minus {names[against]}'s, per seed (over seeds: mean ± SE, 95% t interval)", "",
                  "| arm | " + " | ".join(f"seed {s}" for s in seeds) + " | over seeds |", "|" + "---|" * (2 + len(seeds))]
        for a in arms:
            if a == against:
                continue
            row = [per_seed[s][a][maj] - per_seed[s][against][maj] for s in seeds]
            diffs[f"{a}-{against}"] = {"per_seed": row, "mean_se": mean_and_se(row) if len(row) > 1 else None}
            lines.append(f"| {names[a]} | " + " | ".join(f"{d:+.3f}" for d in row) + f" | "
                         f"{over_seeds_text(row) if len(row) > 1 else '—'} |")
    write_json(out / "majority.json", {"k": k, "seeds": {str(s): {a: {m: r[m] for m in ('pass@1', maj)}
                                                                for a, r in per_seed[s].items()} for s in seeds},
                                       "differences": diffs, "threads": threads})
    path = out / "majority.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    from tandem.errors import TandemError, run_reporting_errors

    p = finished_seeds_parser(__doc__)
    p.add_argument("--k", type=int, default=8, help="solo samples per problem (default: %(default)s)")
    p.add_argument("--arms", nargs="+", metavar="ARM",
                   help="evaluate only these (default: every senior finished on every seed, and the base)")

    def run(args) -> int:
        import torch

        if args.k < 1:
            raise TandemError(f"--k {args.k}: give at least 1 sample per problem")
        torch.set_num_threads(args.threads)
        arms = arms_on_every_seed(args.out, args.seeds)
        missing = [a for a in args.arms or [] if a not in arms]
        if missing:
            raise TandemError(f"--arms {missing[0]}: no finished model on every seed of {args.seeds} (have: "
                              f"{', '.join(arms)})")
        arms = {a: arms[a] for a in args.arms} if args.arms else arms
        if "grpo" not in arms or "tandem" not in arms:
            raise TandemError(f"{args.out}: GRPO and TRL (grpo, tandem) must be evaluated, finished on every seed of "
                              f"{args.seeds}; run tandem-rlvr demo --seeds ... there first")
        per_seed = {s: {a: evaluate_arm(args.out / f"seed-{s}", s, a, args.k, args.quick) for a in arms}
                    for s in args.seeds}
        print(write_table(args.out, args.seeds, args.k, per_seed, args.threads).read_text(encoding="utf-8"))
        return 0

    return run_reporting_errors(run, p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
