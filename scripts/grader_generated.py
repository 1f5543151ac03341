"""Wrong and right answers generated from every gold, graded: the grader's property run.

    python scripts/grader_generated.py [--data DIR] [--with-training-sets] [--seed 0] [--must-pay]
                                       [--out model_spec/bench/grader_generated.json]

Takes every gold of the shared benchmarks (AIME, AMC, MATH-500, Minerva, GSM8K test) and
of the toy task (its train, validation and test problems), and with `--with-training-sets`
also MATH train, GSM8K train and the DeepScaleR sample; writes, per gold, the responses of
`tandem_eval.analysis.grader_generator` (wrong ones that must not be paid, right ones that must),
grades them with `tandem.grading.grade`, and writes per class the cases, wrong answers paid
and right answers refused, with every failing case. Exits 1 if any wrong answer was paid.
With `--must-pay`, the equivalent renderings of each gold instead (both directions, with
digit-changed controls): the classes `control_*` must not be paid, the rest must.
`tests/test_grader_generated.py` runs the default set in the main suite.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

from tandem.grading import grade, grader
from tandem_app.task import generate_problems
from tandem_eval.core.datasets import resolve_data_dir
from tandem_eval.analysis.grader_corpus import BENCHMARK_FILES
from tandem_eval.analysis.grader_generator import benchmark_golds, generate, generate_must_pay, grade_cases

TRAINING_FILES = ("math_train.jsonl", "gsm8k_train.jsonl", "deepscaler_train_partial.jsonl")
MUST_PAY_REFUSED_RATE = 0.005  # with --must-pay: the most right renderings a class may refuse (issue 60)
TOY_PROBLEMS = {"train": 2000, "validation": 200, "test": 200}


def toy_golds() -> list[str]:
    return [p.answer for split, n in TOY_PROBLEMS.items() for p in generate_problems(split, n)]


def run(data_dir: Path, with_training_sets: bool = False, seed: int = 0, must_pay: bool = False,
        memo: dict | None = None) -> dict:
    """The must-not-pay run (`generate`), or with `must_pay` the renderings that must be paid
    (`generate_must_pay`); the same golds and the same report either way. A `memo` shared by
    both runs grades each distinct pair of parsed answers once (`grade_cases`)."""
    files = BENCHMARK_FILES + (TRAINING_FILES if with_training_sets else ())
    golds = benchmark_golds(data_dir, files) + toy_golds()
    start = time.monotonic()
    cases = (generate_must_pay if must_pay else generate)(golds, seed=seed)
    result = grade_cases(cases, grade, memo)
    classes = result["classes"]
    return {
        "golds": len(set(map(str, golds))),
        "files": list(files) + ["toy task"],
        "cases": len(cases),
        "seconds": round(time.monotonic() - start, 1),
        "wrong_paid": sum(c["wrong_paid"] for c in classes.values()),
        "right_refused": sum(c["right_refused"] for c in classes.values()),
        "classes": classes,
        "failures": [vars(c) for c in result["failures"]],
        "slowest_call_s": round(result["slowest_call_s"], 3),
        "slowest_case": vars(result["slowest_case"]) if result["slowest_case"] else None,
        "grader_stats": grader.stats(),
    }


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", default=None, help="folder of the shared benchmarks (default: ../shared/data)")
    ap.add_argument("--with-training-sets", action="store_true", help="also every gold of the training sets")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--must-pay", action="store_true", help="grade the equivalent renderings that must be paid (issue 60)")
    ap.add_argument("--out", default=None, help="write the JSON here (default: print the summary only)")
    args = ap.parse_args(argv)
    report = run(resolve_data_dir(args.data), args.with_training_sets, args.seed, must_pay=args.must_pay, memo={})
    if args.out:
        Path(args.out).write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    width = max(map(len, report["classes"]))
    print(f"{'class':<{width}}  must pay    cases  wrong paid  right refused")
    for kind, c in report["classes"].items():
        print(f"{kind:<{width}}  {str(c['must_pay']):<8} {c['cases']:>8}  {c['wrong_paid']:>10}  {c['right_refused']:>13}")
    print(f"{report['cases']} cases from {report['golds']} golds in {report['seconds']} s: "
          f"{report['wrong_paid']} wrong answers paid, {report['right_refused']} right answers refused; "
          f"slowest call {report['slowest_call_s']} s")
    refused = [k for k, c in report["classes"].items() if c["must_pay"] and c["right_refused"] > MUST_PAY_REFUSED_RATE * c["cases"]]
    return 1 if report["wrong_paid"] or (args.must_pay and refused) else 0


if __name__ == "__main__":
    sys.exit(main())
