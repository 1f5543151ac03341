"""Does TRL's handoff advantage over GRPO survive leak control? The demo's seniors, measured without leaks.

On finished demo seeds (OUT/seed-S, each a `tandem-rlvr demo --seed S --out OUT/seed-S`),
`evaluate.evaluate_transfer` measures the GRPO and TRL seniors with the base as the junior
on the demo's test problems and samples: the plain handoff, the handoff over the samples
whose answer the senior had not shown before the junior's last turn, and prefix transfer
at each fraction; so are the partner variants (`grpo_score`, `score`, `grpo_answer_score`,
`grpo_transfer`, `transfer`) where `tandem-rlvr demo --partner` trained them on every seed. OUT/leak.md and OUT/leak.json
hold, per seed and arm, each score with the leak, undetermined, budget and junior-answer
rates, and TRL - GRPO (and the variants' pairs) per seed, paired over the problems both
arms score (± SE over problems), then the mean ± SE over seeds with its 95% t interval (k - 1
degrees of freedom, `stats.t_interval`).

    python -m tandem_app.experiments.leak_demo --out runs/leak --seeds 0 1 2
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tandem.errors import TandemError
from tandem.io.jsonl import write_json
from tandem_app.experiments.seeds import finished_seeds_parser
from tandem_app.stats import mean_and_se, over_seeds_text, t_interval
from tandem_eval.core.leak import gold_key

ARMS = {"grpo": "GRPO", "tandem": "TRL"}
# partner variants (`partner_demo`), measured where their model exists on every seed
OPTIONAL_ARMS = {"grpo_score": "GRPO + partner score", "score": "TRL + partner score",
                 "grpo_answer_score": "GRPO + partner score (target answer)", "grpo_transfer": "GRPO + transfer",
                 "transfer": "TRL + transfer"}
PAIRS = (("tandem", "grpo"), ("grpo_score", "grpo"), ("tandem", "grpo_score"), ("score", "tandem"),
         ("grpo_answer_score", "grpo"), ("grpo_transfer", "grpo"), ("transfer", "tandem"))


def evaluate_seed(seed_dir: Path, seed: int, fractions: tuple[float, ...], quick: bool = False) -> dict:
    """{arm: evaluate_transfer's result}, cached in SEED_DIR/leak-eval/ARM.json; partner variants where trained."""
    from tandem_app.task import generate_problems
    from tandem_app.experiments.demo import demo_config
    from tandem_app.train.evaluate import evaluate_transfer

    cfg = demo_config(quick=quick, seed=seed)
    problems = generate_problems("test", cfg.eval.n_problems, cfg.seed, cfg.task)
    out = {}
    optional = [a for a in OPTIONAL_ARMS if (seed_dir / f"partner-{a}" / "summary.json").is_file()]
    for arm in [*ARMS, *optional]:
        path = seed_dir / "leak-eval" / f"{arm}.json"
        model = seed_dir / (arm if arm in ARMS else f"partner-{arm}") / "model"
        if not path.is_file():
            if not model.is_dir():
                raise TandemError(f"{seed_dir / arm / 'model'} not found; run tandem-rlvr demo --seed {seed} --out "
                                  f"{seed_dir} first")
            result = evaluate_transfer(model, seed_dir / "sft" / "model", problems, cfg.eval,
                                       fractions, tag=f"test/{cfg.seed}")
            write_json(path, {"fractions": list(fractions), **result})
        out[arm] = json.loads(path.read_text(encoding="utf-8"))
        # which problems' golds the leak test can see (the rest are undetermined, never clean)
        out[arm]["determined"] = [gold_key(p.answer) is not None for p in problems]
    return out


def scores(result: dict) -> dict[str, list[tuple[int, int]]]:
    """Per measure, per problem (n, c): handoff (all problems, and those whose gold is determined: the pool the
    leak control draws from), leak-controlled handoff, prefix at each fraction (over all solo responses,
    and over correct ones only)."""
    n = result["n"]
    out = {"handoff": [(n, c) for c in result["handoff_counts"]],
           "handoff, gold determined": [(n if d else 0, c if d else 0)
                                        for c, d in zip(result["handoff_counts"], result["determined"])],
           "handoff, no leak": [tuple(x) for x in result["handoff_clean"]]}
    out.update({f"prefix {f}": [tuple(x) for x in p["counts"]] for f, p in result["prefix"].items()})
    out.update({f"prefix {f}, correct solo": [tuple(x) for x in p["counts_correct_solo"]]
                for f, p in result["prefix"].items() if "counts_correct_solo" in p})  # absent before issue 44
    return out


def paired(a: list[tuple[int, int]], b: list[tuple[int, int]]) -> tuple[float, float, int]:
    """Mean and SE over the problems both score (n >= 1) of accuracy(a) - accuracy(b), and how many."""
    diffs = [ca / na - cb / nb for (na, ca), (nb, cb) in zip(a, b) if na and nb]
    if not diffs:
        return float("nan"), float("nan"), 0
    mean, se = mean_and_se(diffs)
    return mean, se, len(diffs)


def _score(acc: float, kept: int) -> str:
    return f"{acc:.3f} ({kept})" if kept else "— (0)"


def accuracy(counts: list[tuple[int, int]]) -> tuple[float, int]:
    """Mean per-problem accuracy over the problems with at least one sample (pass@1), and how many."""
    kept = [c / n for n, c in counts if n]
    return (sum(kept) / len(kept) if kept else float("nan")), len(kept)


def write_table(out: Path, per_seed: dict[int, dict], threads: int | None = None) -> Path:
    seeds = sorted(per_seed)
    names = {**ARMS, **OPTIONAL_ARMS}
    arms = [a for a in names if all(a in per_seed[s] for s in seeds)]
    measures = list(scores(per_seed[seeds[0]]["grpo"]))
    lines = [f"# TRL vs GRPO without leaks, seeds {', '.join(map(str, seeds))}", "",
             "pass@1 per arm (problems scored); a problem with no clean (or continued) sample is left out.", "",
             "| measure | arm | " + " | ".join(f"seed {s}" for s in seeds) + " |", "|" + "---|" * (2 + len(seeds))]
    for m in measures:
        for a in arms:
            cells = [_score(*accuracy(scores(per_seed[s][a])[m])) for s in seeds]
            lines.append(f"| {m} | {names[a]} | " + " | ".join(cells) + " |")
    table: dict = {}
    for first, second in [p for p in PAIRS if p[0] in arms and p[1] in arms]:
        key = f"{first}-{second}"
        lines += ["", f"## {names[first]} - {names[second]}, paired over the problems both score (± SE over "
                  "problems)", "", "| measure | " + " | ".join(f"seed {s}" for s in seeds) + " | over seeds, mean ± SE, 95% t interval |",
                  "|" + "---|" * (2 + len(seeds))]
        for m in measures:
            row = [paired(scores(per_seed[s][first])[m], scores(per_seed[s][second])[m]) for s in seeds]
            scored = [d for d, _, k in row if k]  # a seed with no problem both arms score has no difference
            mean, se = mean_and_se(scored) if scored else (None, None)
            table.setdefault(key, {})[m] = {"per_seed": row, "mean": mean, "se_over_seeds": se,
                                            "seeds_scored": len(scored),
                                            "interval": t_interval(scored) if scored else None}
            over = "—" if mean is None else over_seeds_text(scored) + (
                "" if len(scored) == len(seeds) else f" ({len(scored)} seeds)")
            lines.append(f"| {m} | " + " | ".join(f"{d:+.3f} ± {e:.3f} ({k})" if k else "— (0)" for d, e, k in row)
                         + f" | {over} |")
    lines += ["", "## Rates per arm (handoff; solo in brackets)", "",
              "| seed | arm | answer visible | gold undetermined | budget hit | junior wrote the answer | prefix cut "
              "(mean fraction of the solo response) |", "|---|---|---|---|---|---|---|"]
    for s in seeds:
        for a in arms:
            r = per_seed[s][a]
            h, so = r["handoff_rates"], r["solo_rates"]
            cut = ", ".join(f"{f}: {p['mean_cut_fraction']:.2f}" for f, p in r["prefix"].items())
            lines.append(f"| {s} | {names[a]} | {h['visible_rate']:.3f} ({so['visible_rate']:.3f}) | "
                         f"{h['undetermined_rate']:.3f} | {h['hit_budget_rate']:.3f} ({so['hit_budget_rate']:.3f}) | "
                         f"{h['junior_final_rate']:.3f} | {cut} |")
    write_json(out / "leak.json", {"seeds": {str(s): per_seed[s] for s in seeds}, "paired": table, "threads": threads})
    path = out / "leak.md"
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def main(argv: list[str] | None = None) -> int:
    from tandem.errors import run_reporting_errors
    from tandem_eval.analysis.prefix_transfer import DEFAULT_FRACTIONS, check_fractions

    p = finished_seeds_parser(__doc__)
    p.add_argument("--prefix-fractions", nargs="+", default=[str(f) for f in DEFAULT_FRACTIONS])

    def run(args) -> int:
        import torch

        torch.set_num_threads(args.threads)
        fractions = check_fractions(args.prefix_fractions)
        per_seed = {s: evaluate_seed(args.out / f"seed-{s}", s, fractions, args.quick) for s in args.seeds}
        print(write_table(args.out, per_seed, args.threads).read_text(encoding="utf-8"))
        return 0

    return run_reporting_errors(run, p.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
