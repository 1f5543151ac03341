"""Handoff evaluation: the senior and the junior alternate one reasoning step at a time.

A step ends at a blank line (`\\n\\n`). The senior writes the first step; both models see
the same history (token ids) and share one token budget; the team's final answer is graded.
Both backends hand over at the same tokens as `TandemConfig(selection_strategy="step",
first_author="senior")`: the reference engine runs it directly; vLLM takes turns on two
engines that stop at the step tokens (`--vllm-handoff two-engine`, the default) or runs
it on one tandem vLLM engine (`--vllm-handoff tandem`).
Different vocabularies are refused unless `--allow-vocab-mismatch`, which re-tokenises the
history text for each model at every handoff.

    python -m tandem_eval.MATH.eval_sentence_handoff --senior PATH --junior BASE --out-dir ...
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tandem_eval import runner  # noqa: E402

DESCRIPTION = (
    "Handoff pass@k: --senior and --junior alternate one reasoning step at a time (steps end at a blank line), "
    "senior first, sharing the --max-new-tokens budget; the team's final answer is graded. Writes per-sample "
    "JSONL (with the authorship mask and number of handoffs) and summary JSONs to --out-dir. Benchmarks "
    "already finished there with the same config are skipped."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--senior", required=True, help="the trained model (HF directory or hub name); writes step 1")
    p.add_argument("--junior", required=True, help="the frozen partner, normally the senior's pre-RL base")
    p.add_argument("--allow-vocab-mismatch", action="store_true",
                   help="pair models with different vocabularies by re-tokenising the shared history text for "
                        "each model at every handoff (budget counted in each writer's tokens; outputs in the "
                        "senior's vocabulary)")
    p.add_argument("--vllm-handoff", choices=("two-engine", "tandem"), default="two-engine",
                   help="vllm backend: two-engine = one engine per model taking turns, each decoding only its own "
                        "steps; tandem = one engine holding both models (both run on every token); the same "
                        "tokens either way (default: %(default)s; see tandem_eval/README.md)")
    runner.add_common_arguments(p)


def run(args) -> int:
    models = {"senior": runner.model_id(args.senior), "junior": runner.model_id(args.junior),
              "allow_vocab_mismatch": args.allow_vocab_mismatch}
    if args.backend == "vllm":
        models["vllm_handoff"] = args.vllm_handoff
    settings = runner.EvalRun.from_args(args)
    overall = runner.run_eval(settings, "handoff", models, runner.backend_factory(settings, args.senior, args.junior))
    runner.print_table(overall)
    print(f"wrote {settings.out_dir / 'summary.json'}")
    return 0


def main(argv: list[str] | None = None) -> int:
    from tandem_eval import tool

    return tool.main(__name__, argv)


if __name__ == "__main__":
    sys.exit(main())
