"""Child process of the grader: reads `[pred, gold]` JSON lines, writes one verdict per line.

Started by `tandem.grading.timebound` when the caller is not the main thread (no SIGALRM there);
the parent enforces the time bound by killing this process. Not meant to be run by hand.
"""

import json
import sys

from tandem.grading.timebound import math_verify_equal


def main() -> None:
    math_verify_equal("1", "1")  # import math-verify and load its LaTeX grammar before saying ready
    print("ready", flush=True)
    for line in sys.stdin:
        pred, gold = json.loads(line)
        try:
            verdict = math_verify_equal(pred, gold)
        except Exception as e:  # noqa: BLE001 - any failure grades as incorrect
            verdict = f"error: {type(e).__name__}"
        print(json.dumps(verdict), flush=True)


if __name__ == "__main__":
    main()
