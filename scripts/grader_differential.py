"""The grader beside its anchors: every disagreement, with which verdict is right.

    python scripts/grader_differential.py [--data DIR] [--out model_spec/bench/grader_differential.json]
    python scripts/grader_differential.py --must-pay [--per-class N]   # issue 60: the renderings, both ways

Grades `tandem_eval.analysis.grader_corpus` (every gold of the shared benchmarks in the ways models
write it, and the adversarial corpus) with three graders:

- `ours`: `tandem.grading.grade`, the project's reward and scorer;
- `math_verify`: math-verify as verl 0.9.1 calls it (`verl.utils.reward_score.math_verify`:
  the gold boxed and parsed as LaTeX, the response parsed as expression or LaTeX), run in
  this process so that no worker pool is needed;
- `verl_default`: verl 0.9.1's `default_compute_score` for the benchmark's data source
  (MATH-500 -> `math_reward`, GSM8K -> `gsm8k`, AIME / AMC / Minerva / DeepScaleR ->
  `math_dapo`, verl's rule for `math` and `aime*`).

Writes one JSON file: per corpus and grader, the cases, agreements with the correct
verdict, false positives and false negatives; per anchor, every case where `ours` and the
anchor disagree, with the correct verdict (past `--list-limit`, the counts by kind and a
sha256 of the list, which the tests compare). Needs verl 0.9.1 and math-verify (the dev extras).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
VERL_SOURCE = {"math500.jsonl": "HuggingFaceH4/MATH-500", "gsm8k_test.jsonl": "openai/gsm8k"}
VERL_FALLBACK_SOURCE = "math_dapo"


def math_verify_as_verl(response: str, gold: str) -> bool:
    """verl's `math_verify.compute_score` without its process pool (the same two parses and verify)."""
    from verl.utils.reward_score.math_verify import _verify_in_subprocess

    return _verify_in_subprocess("\\boxed{" + gold + "}", response) == 1.0


def verl_default(response: str, gold: str, source: str) -> bool:
    from verl.utils.reward_score import default_compute_score

    result = default_compute_score(VERL_SOURCE.get(source, VERL_FALLBACK_SOURCE), response, gold)
    score = result.get("acc", result.get("score")) if isinstance(result, dict) else result
    return bool(score) and float(score) > 0


def verdicts(case) -> dict[str, bool]:
    from tandem.grading import grade

    return {
        "ours": grade(case.response, case.gold),
        "math_verify": math_verify_as_verl(case.response, case.gold),
        "verl_default": verl_default(case.response, case.gold, case.source),
    }


def differential(cases, progress: bool = False) -> dict:
    """Per grader: agreement with the truth; and every case where ours and an anchor differ."""
    summary = {g: Counter() for g in ("ours", "math_verify", "verl_default")}
    disagreements = []
    for i, case in enumerate(cases):
        got = verdicts(case)
        for grader, verdict in got.items():
            counts = summary[grader]
            counts["cases"] += 1
            counts["right"] += verdict == case.correct
            counts["false_positives"] += verdict and not case.correct
            counts["false_negatives"] += case.correct and not verdict
        for anchor in ("math_verify", "verl_default"):
            if got[anchor] != got["ours"]:
                disagreements.append({
                    "anchor": anchor, "kind": case.kind, "source": case.source, "gold": case.gold,
                    "response": case.response[:300], "ours": got["ours"], "anchor_verdict": got[anchor],
                    "correct": case.correct, "ours_right": got["ours"] == case.correct,
                })
        if progress and i % 500 == 0:
            print(f"  {i}/{len(cases)}", file=sys.stderr, flush=True)
    return {"summary": {g: dict(c) for g, c in summary.items()}, "disagreements": disagreements}


def key_digest(disagreements: list[dict]) -> str:
    """One sha256 over the sorted identities of a list of disagreements (pins a long list in a line)."""
    keys = sorted(json.dumps([d["anchor"], d["kind"], d["source"], d["gold"], d["response"], d["ours"]])
                  for d in disagreements)
    return hashlib.sha256("\n".join(keys).encode()).hexdigest()


def listed(result: dict, limit: int) -> dict:
    """The report of one corpus: per anchor every disagreement, or past `limit` its counts and digest."""
    out = {"summary": result["summary"], "by_kind": disagreement_table(result["disagreements"]), "anchors": {}}
    for anchor in ("math_verify", "verl_default"):
        mine = [d for d in result["disagreements"] if d["anchor"] == anchor]
        entry = {"count": len(mine), "sha256": key_digest(mine)}
        if len(mine) <= limit:
            entry["disagreements"] = mine
        out["anchors"][anchor] = entry
    return out


def disagreement_table(disagreements: list[dict]) -> dict[str, int]:
    """Counts by `anchor / kind / ours right|wrong`."""
    return dict(sorted(Counter(
        f"{d['anchor']} / {d['kind']} / ours {'right' if d['ours_right'] else 'wrong'}" for d in disagreements
    ).items()))


# Which of our rules decides each must-pay class (issue 60), for the must-pay differential's table.
MUST_PAY_RULES = {
    "self": "a gold equals itself", "brace_less": "TeX's argument rule (tokens.braced_arguments)",
    "braced": "TeX's argument rule (tokens.braced_arguments)", "dfrac": "\\dfrac / \\tfrac are \\frac (tokens)",
    "tfrac": "\\dfrac / \\tfrac are \\frac (tokens)", "left_right": "\\left / \\right are presentation (tokens)",
    "thin_space": "spacing is presentation (tokens)", "script_braces": "TeX's argument rule for ^ and _",
    "script_brace_less": "TeX's argument rule for ^ and _", "unit_spelling": "units by one name (lexicon.UNIT_NAMES)",
    "assignment": "a leading `x =` names the value (answer._unwrap)", "set_order": "lists and sets as multisets",
    "trailing_period": "the sentence's closing period (answer._end_of_sentence)",
    "displaystyle": "\\displaystyle is presentation (tokens)", "control": "exact values: a changed digit is another value",
    "approximation": "an exact value, then `\\approx` its decimal, is the exact value "
                     "(answer._exact_before_approximation)",
    "mixed_number": "a whole number, a TeX space, a proper slash fraction is a mixed number (answer._mixed_slash)",
    "complex_arrangement": "`i` read alike on both sides of a complex pair (timebound._complex_numbers)",
    "set_or_list": "a set and a bare list are both unordered (compare._values)",
    "named_value": "a name before the only `=` names the value (answer._name_end)",
    "plus_infinity": "a leading `+` is presentation (answer._unwrap)",
    "final_answer_display": "a line that is only \"Final Answer\", then display math (extract._MARKERS)",
}


def rule_for(kind: str) -> str | None:
    """The rule of ours that decides a must-pay class (`MUST_PAY_RULES`), or None where none is listed."""
    base = kind.removeprefix("control_").removesuffix("_as_gold")
    return MUST_PAY_RULES.get("control" if kind.startswith("control_") else base)


def must_pay_differential(data: Path | None, per_class: int | None, golds=None) -> dict:
    """Ours and math-verify (verl's call) on the must-pay cases (`generate_must_pay`), both directions:
    per class, the cases where one pays and the other does not, with the rule of ours that decides
    (`rule`: None where `MUST_PAY_RULES` names none, which the tests refuse). `golds` instead of
    every benchmark gold under `data`: a fixed sample."""
    from tandem.grading import grade
    from tandem_eval.analysis.grader_corpus import BENCHMARK_FILES
    from tandem_eval.analysis.grader_generator import benchmark_golds, generate_must_pay

    cases, seen = [], Counter()
    for case in generate_must_pay(benchmark_golds(data, BENCHMARK_FILES) if golds is None else golds):
        if per_class is None or seen[case.kind] < per_class:
            seen[case.kind] += 1
            cases.append(case)
    table: dict[str, Counter] = {}
    examples: dict[str, list] = {}
    for case in cases:
        ours, anchor = grade(case.response, case.gold), math_verify_as_verl(case.response, case.gold)
        c = table.setdefault(case.kind, Counter())
        c["cases"] += 1
        c["ours_pays_math_verify_not"] += ours and not anchor
        c["math_verify_pays_ours_not"] += anchor and not ours
        if ours != anchor and len(examples.setdefault(case.kind, [])) < 3:
            examples[case.kind].append({"response": case.response[:200], "gold": case.gold, "ours": ours,
                                        "correct": case.correct})
    return {kind: {**dict(c), "correct": not kind.startswith("control_"), "rule": rule_for(kind),
                   "examples": examples.get(kind, [])}
            for kind, c in sorted(table.items()) if c["ours_pays_math_verify_not"] or c["math_verify_pays_ours_not"]}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data", help="the shared benchmark files")
    ap.add_argument("--out", type=Path, default=REPO / "model_spec" / "bench" / "grader_differential.json")
    ap.add_argument("--list-limit", type=int, default=200,
                    help="list an anchor's disagreements one by one up to this many; past it, counts by kind "
                         "and a sha256 of the whole list (default 200)")
    ap.add_argument("--must-pay", action="store_true",
                    help="instead: ours and math-verify on the must-pay renderings and their controls (issue 60), "
                         "every class where one pays and the other does not, printed as JSON")
    ap.add_argument("--per-class", type=int, default=None, help="with --must-pay: at most this many cases per class")
    args = ap.parse_args(argv)
    if args.must_pay:
        table = must_pay_differential(args.data, args.per_class)
        print(json.dumps(table, indent=1, ensure_ascii=False))
        unruled = [kind for kind, row in table.items() if not row["rule"]]
        if unruled:
            print(f"error: classes where ours and math-verify disagree with no deciding rule: {unruled}", file=sys.stderr)
            return 1
        return 0
    from tandem_eval.analysis.grader_corpus import ADVERSARIAL, benchmark_cases

    if not args.data.is_dir():
        print(f"error: no benchmark data at {args.data}: run python scripts/fetch_shared_data.py", file=sys.stderr)
        return 2
    report = {}
    for name, cases in (("adversarial", list(ADVERSARIAL)), ("benchmarks", benchmark_cases(args.data))):
        start = time.monotonic()
        result = listed(differential(cases, progress=True), args.list_limit)
        result["seconds"] = round(time.monotonic() - start, 1)
        report[name] = result
        print(name, json.dumps(result["summary"]), json.dumps(result["by_kind"], indent=1))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=1, ensure_ascii=False) + "\n")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
