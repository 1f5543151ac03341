"""Solo evaluation: n samples per problem from one model, graded, with pass@k per benchmark.

    python -m tandem_eval.MATH.eval_solo --model PATH --out-dir runs/eval/solo-step120
    python tandem_eval/MATH/eval_solo.py --model PATH --benchmarks amc_23_25 --n 16 --out-dir ...

Outputs are described in `tandem_eval.core.runner`, resuming in `tandem_eval.core.resume`.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tandem_eval.core import flags  # noqa: E402
from tandem_eval.core.run_config import EvalRun  # noqa: E402
from tandem_eval.core import tool  # noqa: E402

_D = flags.DEFAULTS.sampling
DESCRIPTION = (
    f"Solo pass@k: draw --n responses per problem from --model with the paper's eval sampling (temperature "
    f"{_D.temperature}, top-p {_D.top_p}, top-k {_D.top_k}, {_D.max_new_tokens} new tokens), grade each with "
    "tandem_eval.grade, and write per-sample JSONL plus summary JSONs (pass@k, k = 1, 2, 4, ... <= n) to "
    "--out-dir. Benchmarks already finished there with the same config are skipped."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--model", required=True, help="model directory (HF format) or hub name to evaluate")
    flags.add_common_arguments(p)


def run(args) -> int:
    settings = EvalRun.from_args(args)  # bad flags, models or files: refused before torch is imported
    from tandem_eval.core import runner  # the engines and the grader: not for --help
    from tandem_eval.core.backends import EvalBackend

    models = {"model": runner.model_id(args.model)}
    overall = runner.run_eval(settings, "solo", models, EvalBackend(settings.engine, settings.sampling))
    runner.print_table(overall)
    print(f"wrote {settings.out_dir / 'summary.json'}")
    return 0


main = tool.entry(__name__)  # main(argv=None) -> exit status: parse, run, one-line errors


if __name__ == "__main__":
    sys.exit(main())
