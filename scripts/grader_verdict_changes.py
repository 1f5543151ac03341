"""What a grader change changes: the recorded evaluation pairs re-graded (issue 60, item 6).

    python scripts/grader_verdict_changes.py [--data DIR] [--against REV] [--out FILE]

The pairs the repository records with a verdict: the grader's differential corpora
(`tandem_eval.analysis.grader_corpus`: every benchmark gold in the four forms models write it, and
the 60 labelled adversarial responses), whose verdicts `model_spec/bench/grader_differential.json`
records (ours right on every case, so the recorded verdict is the label, and each listed
disagreement with an anchor stores ours as it was). Each pair is graded by the grader in this
checkout and by the grader of git revision `--against` (default `HEAD`: the committed one, exported
with `git archive` into a temporary folder and run in a child process), and every pair whose
verdict differs, from the record or between the two graders, is printed. Exit 0 always: this
reports, it does not judge.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
RECORD = REPO / "model_spec" / "bench" / "grader_differential.json"
_CHILD = """
import json, sys
from tandem.grading.grader import grade, warm_up
warm_up()
pairs = json.load(open(sys.argv[1]))
json.dump([bool(grade(r, g)) for r, g in pairs], open(sys.argv[2], "w"))
"""


def recorded_pairs(data: Path) -> list[dict]:
    """Every recorded pair: response, gold, corpus, kind, and the verdict the record gives ours."""
    from tandem_eval.analysis.grader_corpus import ADVERSARIAL, benchmark_cases

    record = json.loads(RECORD.read_text())
    listed = {}
    for corpus, report in record.items():
        for entry in report["anchors"].values():
            for d in entry.get("disagreements", []):
                listed[(corpus, d["gold"], d["response"])] = d["ours"]
    out = []
    for corpus, cases in (("adversarial", ADVERSARIAL), ("benchmarks", benchmark_cases(data))):
        if record[corpus]["summary"]["ours"]["right"] != record[corpus]["summary"]["ours"]["cases"]:
            raise SystemExit(f"{RECORD}: ours is not right on every {corpus} case, "
                             "so the record's verdicts are not its labels")
        for c in cases:
            verdict = listed.get((corpus, c.gold, c.response[:300]), c.correct)
            out.append({"corpus": corpus, "kind": c.kind, "response": c.response, "gold": c.gold, "recorded": verdict})
    return out


def grade_at(rev: str, pairs: list[dict]) -> list[bool]:
    """The verdicts of the grader committed at `rev` (its `tandem` package alone, in a child process)."""
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev, "tandem"], check=True, capture_output=True).stdout
    with tempfile.TemporaryDirectory() as tmp:
        with tarfile.open(fileobj=BytesIO(archive)) as tar:
            tar.extractall(tmp, filter="data")
        src, dst = Path(tmp) / "pairs.json", Path(tmp) / "verdicts.json"
        src.write_text(json.dumps([[p["response"], p["gold"]] for p in pairs]))
        env = {**os.environ, "PYTHONPATH": tmp}
        subprocess.run([sys.executable, "-c", _CHILD, str(src), str(dst)], check=True, env=env, cwd=tmp)
        return json.loads(dst.read_text())


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data", help="the shared benchmark files")
    ap.add_argument("--against", default="HEAD", help="the git revision whose grader to compare with (default HEAD)")
    ap.add_argument("--out", type=Path, default=None, help="write every changed pair here as JSON")
    args = ap.parse_args(argv)
    from tandem.grading.grader import grade, warm_up

    warm_up()
    pairs = recorded_pairs(args.data)
    now = [bool(grade(p["response"], p["gold"])) for p in pairs]
    then = grade_at(args.against, pairs)
    changed = [{**p, "now": a, args.against: b} for p, a, b in zip(pairs, now, then) if a != p["recorded"] or a != b]
    from_record = sum(a != p["recorded"] for p, a in zip(pairs, now))
    print(f"{len(pairs)} recorded pairs; verdict differs from the record: {from_record}; "
          f"from the grader at {args.against}: {sum(a != b for a, b in zip(now, then))}")
    for c in changed:
        print(f"  {c['corpus']} / {c['kind']}: recorded {c['recorded']}, {args.against} {c[args.against]}, "
              f"now {c['now']}: {c['response'][:100]!r} | {c['gold'][:60]!r}")
    if args.out:
        args.out.write_text(json.dumps(changed, indent=1, ensure_ascii=False) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
