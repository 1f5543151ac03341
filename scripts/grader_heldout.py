"""Held-out grader cases, graded: what the grader wrongly pays and wrongly refuses on cases it never saw.

    python scripts/grader_heldout.py CASES.jsonl [--against REV] [--out FILE]

CASES.jsonl holds one case per line, written by someone who has not read the grader:
`{"id", "class", "gold", "response", "expect": "pay" | "refuse"}` (the cases themselves stay
outside the repository, so that a fix cannot be fitted to them). Each case is graded by
`tandem.grading.grade` in this checkout, and with `--against REV` also by the grader committed at
REV (`grader_verdict_changes.grade_at`: its `tandem` package alone, in a child process). Prints
and writes, per side and class, the cases and the wrong verdicts (ids only), with the commit and
the machine. Exit 0 always: this reports, it does not judge.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
from collections import Counter
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "scripts"))
from grader_verdict_changes import grade_at  # noqa: E402

SIDES = ("pay", "refuse")


def read_cases(path: Path) -> list[dict]:
    cases = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        if not line.strip():
            continue
        case = json.loads(line)
        missing = {"id", "class", "gold", "response", "expect"} - set(case)
        if missing or case["expect"] not in SIDES:
            raise SystemExit(f"{path}:{n}: a case needs id, class, gold, response and expect 'pay' or 'refuse'"
                             f" (missing: {sorted(missing) or 'none'}, expect: {case.get('expect')!r})")
        cases.append(case)
    return cases


def tally(cases: list[dict], paid: list[bool]) -> dict:
    """Per side: cases, wrong verdicts and their ids, and the same per class."""
    out = {}
    for side in SIDES:
        rows = [(c, p) for c, p in zip(cases, paid) if c["expect"] == side]
        wrong = [c for c, p in rows if p != (side == "pay")]
        out[side] = {"cases": len(rows), "wrong": len(wrong), "wrong_ids": [c["id"] for c in wrong],
                     "classes": {k: {"cases": n, "wrong": Counter(c["class"] for c in wrong)[k]}
                                 for k, n in sorted(Counter(c["class"] for c, _ in rows).items())}}
    return out


def provenance() -> dict:
    commit = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"], capture_output=True, text=True)
    dirty = subprocess.run(["git", "-C", str(REPO), "status", "--porcelain", "tandem"], capture_output=True, text=True)
    cpu = next((ln.split(":", 1)[1].strip() for ln in Path("/proc/cpuinfo").read_text().splitlines()
                if ln.startswith("model name")), "") if Path("/proc/cpuinfo").exists() else platform.processor()
    return {"commit": commit.stdout.strip(), "grader_uncommitted_changes": bool(dirty.stdout.strip()),
            "cpu": cpu, "cores": os.cpu_count(), "python": platform.python_version()}


def report(name: str, counts: dict) -> None:
    pay, refuse = counts["pay"], counts["refuse"]
    print(f"{name}: right answers refused {pay['wrong']} of {pay['cases']}; "
          f"wrong answers paid {refuse['wrong']} of {refuse['cases']}")
    for side in SIDES:
        for cls, c in counts[side]["classes"].items():
            if c["wrong"]:
                print(f"  {side:6s} {cls}: {c['wrong']} of {c['cases']} wrong")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases", type=Path, help="the held-out cases (JSONL: id, class, gold, response, expect)")
    ap.add_argument("--against", default=None, help="also grade with the grader committed at this git revision")
    ap.add_argument("--out", type=Path, default=None, help="write the counts here as JSON")
    args = ap.parse_args(argv)
    from tandem.grading.grader import grade, warm_up

    cases = read_cases(args.cases)
    warm_up()
    result = {"cases_file": args.cases.name, **provenance(),
              "this_checkout": tally(cases, [bool(grade(c["response"], c["gold"])) for c in cases])}
    report("this checkout", result["this_checkout"])
    if args.against:
        then = grade_at(args.against, [{"response": c["response"], "gold": c["gold"]} for c in cases])
        result[f"at_{args.against}"] = tally(cases, then)
        report(f"at {args.against}", result[f"at_{args.against}"])
    if args.out:
        args.out.write_text(json.dumps(result, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
