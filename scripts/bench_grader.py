"""Time the grader per call: the benchmark corpus, and adversarial responses from 1 KB to 1 MB.

The grader is the reward, so its worst case is a training step's worst case. This times
`tandem.grading.grade` on every case of `tandem_eval.analysis.grader_corpus.benchmark_cases` (real
golds as models write them) and on degenerate responses of each size in `--sizes`
(digit runs, open braces and boxes, repeated answer phrases, dollar runs, a long text
with one box at the end), in the main thread as the embedded trainer calls it.

    python scripts/bench_grader.py --out model_spec/bench/bench_grader.json [--data DIR]

Output JSON: per corpus (and per size) the p50, p99 and max seconds per call, the calls,
and the grader's counters (`timeouts`, `too_long`, ...) over the run; and `bound`: in fresh
processes, the first symbolic call after `warm_up()` and without it (a cold start), and in
the main thread and in a worker thread, a call cut at `BOUND_TIMEOUT_S` and the call right
after it (the worker's restart included).
"""

from __future__ import annotations

import argparse
import json
import platform
import statistics
import subprocess
import sys
import time
from pathlib import Path

from tandem.grading import grader
from tandem_eval.analysis.grader_corpus import benchmark_cases

REPO = Path(__file__).resolve().parents[1]
SIZES = (1_000, 10_000, 100_000, 1_000_000)
BOUND_TIMEOUT_S = 0.5
# Each runs in a fresh process and prints one JSON object of seconds.
_COLD = """
import json, time, sys
from tandem.grading import grader
if sys.argv[1] == "warm":
    grader.warm_up()
start = time.perf_counter()
ok = grader.is_equivalent("\\\\frac{\\\\sqrt{2}}{2}", "\\\\frac{1}{\\\\sqrt{2}}", timeout_s=%(t)s)
print(json.dumps({"seconds": time.perf_counter() - start, "verdict": ok}))
"""
_AFTER_TIMEOUT = """
import json, threading, time, sys
from tandem.grading import grader
def run(out):
    grader.warm_up()
    start = time.perf_counter()
    cut = grader.is_equivalent("10!!!!!!", "1", timeout_s=%(t)s)
    middle = time.perf_counter()
    after = grader.is_equivalent("\\\\sqrt{9}", "3", timeout_s=%(t)s)
    out.update(cut_s=middle - start, after_s=time.perf_counter() - middle, cut=cut, after=after)
out = {}
if sys.argv[1] == "thread":
    t = threading.Thread(target=run, args=(out,)); t.start(); t.join()
else:
    run(out)
print(json.dumps(out))
"""


def _fresh(code: str, arg: str) -> dict:
    out = subprocess.run([sys.executable, "-c", code % {"t": BOUND_TIMEOUT_S}, arg], capture_output=True, text=True,
                         check=True, timeout=600)
    return json.loads(out.stdout.strip().splitlines()[-1])


def bound() -> dict:
    """The time bound, everything included: cold starts and the call after a timeout."""
    return {
        "timeout_s": BOUND_TIMEOUT_S,
        "cold_call_after_warm_up": _fresh(_COLD, "warm"),
        "cold_call_without_warm_up": _fresh(_COLD, "cold"),
        "after_timeout_main_thread": _fresh(_AFTER_TIMEOUT, "main"),
        "after_timeout_worker_thread": _fresh(_AFTER_TIMEOUT, "thread"),
    }


def adversarial_responses(size: int) -> dict[str, str]:
    """Degenerate responses of about `size` characters, by shape."""
    return {
        "digit_run": "1" * size,
        "digit_run_then_letter": "1" * size + "x",
        "answer_phrase_then_digits": "The answer is " + "1" * size + " apples.",
        "open_boxes": "\\boxed{" * (size // 7),
        "open_braces": "{" * size,
        "nested_boxes": "\\boxed{" * (size // 14) + "5" + "}" * (size // 14),
        "repeated_answer_phrase": "the answer is " * (size // 14),
        "dollar_run": "$" * size,
        "text_then_box": "We compute. " * (size // 12) + "\\boxed{5}",
        "zero_padding": "\\boxed{" + "0" * (size - 9) + "5}",
    }


def _quantiles(seconds: list[float]) -> dict:
    ordered = sorted(seconds)
    p99 = ordered[min(len(ordered) - 1, int(0.99 * len(ordered)))]
    return {"calls": len(ordered), "p50_s": statistics.median(ordered), "p99_s": p99, "max_s": ordered[-1]}


def seconds_per_call(response: str, gold: str) -> float:
    start = time.perf_counter()
    grader.grade(response, gold)
    return time.perf_counter() - start


def main(argv=None) -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--data", type=Path, default=REPO.parent / "shared" / "data", help="the shared benchmark files")
    p.add_argument("--sizes", type=int, nargs="+", default=list(SIZES), help="adversarial response sizes (characters)")
    args = p.parse_args(argv)
    grader.reset_stats()
    cases = benchmark_cases(args.data)
    result = {"benchmarks": _quantiles([seconds_per_call(c.response, c.gold) for c in cases]), "adversarial": {}}
    for size in args.sizes:
        seconds = {shape: seconds_per_call(r, "5") for shape, r in adversarial_responses(size).items()}
        per_size = _quantiles(list(seconds.values()))
        per_size["slowest_shape"] = max(seconds, key=seconds.get)
        result["adversarial"][str(size)] = per_size
        print(size, json.dumps(per_size), flush=True)
    result["counters"] = grader.stats()
    result["bound"] = bound()
    print(json.dumps(result["bound"]), flush=True)
    result["timeout_s"] = grader.DEFAULT_TIMEOUT_S
    result["machine"] = {"python": platform.python_version(), "processor": platform.machine()}
    Path(args.out).write_text(json.dumps(result, indent=1) + "\n")
    print(json.dumps(result["benchmarks"]), f"wrote {args.out}")


if __name__ == "__main__":
    main()
