"""Handoff evaluation: the senior and the junior alternate one reasoning step at a time (the `step` strategy).

A step ends at a blank line (`\\n\\n`). The senior writes the first step; both models see
the same history (token ids) and share one token budget; the team's final answer is graded.
Both backends hand over at the same tokens as `TandemConfig(selection_strategy="step",
first_author="senior")`: the reference engine runs it directly; vLLM takes turns on two
engines that stop at the step tokens (`--vllm-handoff two-engine`, the default) or runs
it on one tandem vLLM engine (`--vllm-handoff tandem`).
Different vocabularies are refused unless `--allow-vocab-mismatch`, which re-tokenises the
history text for each model at every handoff.

Which part of the score is the junior's (`tandem_eval.core.leak`): every row records whether
the gold was visible in the senior's text before the junior's last turn, who wrote the
final answer and whether the budget was spent; each summary adds their rates and pass@k
over the samples without a leak (`--leak-control` prints them). `--prefix-fractions`
adds prefix transfer (`tandem_eval.analysis.prefix_transfer`).

    python -m tandem_eval.MATH.eval_step_handoff --senior PATH --junior BASE --out-dir ...

The release runs it as `eval_sentence_handoff` (`tandem_eval/MATH/eval_sentence_handoff.py`,
`tandem-rlvr eval-handoff`): the same evaluation under the release's name.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

if __package__ in (None, ""):  # run as a script: make the repository importable
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tandem.errors import TandemError  # noqa: E402
from tandem_eval.core import flags  # noqa: E402
from tandem_eval.core.resume import file_stem  # noqa: E402
from tandem_eval.core.run_config import EvalRun  # noqa: E402
from tandem_eval.core import tool  # noqa: E402

DESCRIPTION = (
    "Handoff pass@k: --senior and --junior alternate one reasoning step at a time (steps end at a blank line), "
    "senior first, sharing the --max-new-tokens budget; the team's final answer is graded. Writes per-sample "
    "JSONL (with the authorship mask, the number of handoffs, whether the answer was visible before the junior's "
    "last turn, who wrote it and whether the budget was spent) and summary JSONs (with leak-controlled pass@k) to "
    "--out-dir; --prefix-fractions adds prefix transfer. Benchmarks already finished there with the same config "
    "are skipped."
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
    p.add_argument("--leak-control", action="store_true",
                   help="also print pass@k over the samples whose answer the senior had not shown before the "
                        "junior's last turn, and the leak, final-author and budget rates (every summary holds "
                        "them; tandem_eval/core/leak.py)")
    p.add_argument("--prefix-fractions", nargs="+", default=None, metavar="F",
                   help="after the handoff, prefix transfer: the junior finishes the senior's solo response cut at "
                        "each fraction F of its tokens, before the answer's first appearance (e.g. 0.3 0.5 0.7; "
                        "each in (0, 1); tandem_eval/analysis/prefix_transfer.py)")
    p.add_argument("--prefix-solo-dir", type=Path, default=None,
                   help="the senior's eval-solo output (same flags) to cut the prefixes from (default: generate "
                        "the senior's solo responses with the requests eval-solo makes)")
    flags.add_common_arguments(p)


def run(args) -> int:
    settings = EvalRun.from_args(args)  # bad flags, models or files: refused before torch is imported
    from tandem_eval.analysis import prefix_transfer
    from tandem_eval.core import runner  # the engines and the grader: not for --help
    from tandem_backends.registry import backend as backend_entry
    from tandem_eval.core.backends import EvalBackend

    fractions = prefix_transfer.check_fractions(args.prefix_fractions) if args.prefix_fractions else ()
    models = {"senior": runner.model_id(args.senior), "junior": runner.model_id(args.junior),
              "allow_vocab_mismatch": args.allow_vocab_mismatch}
    if backend_entry(settings.engine.backend).capabilities.two_engine_handoff:  # the route is a setting there
        models["vllm_handoff"] = args.vllm_handoff
    if fractions and args.allow_vocab_mismatch:
        raise TandemError("--prefix-fractions hands the prefix over as tokens, which needs one vocabulary; "
                          "leave it out with --allow-vocab-mismatch")
    # one backend for both parts: prefix transfer reuses the handoff's junior (on vLLM, its engine and memory)
    backend = EvalBackend(settings.engine, settings.sampling)
    overall = runner.run_eval(settings, "handoff", models, backend)
    runner.print_table(overall)
    if args.leak_control:
        print_leak_table(settings.out_dir, overall)
    if fractions:
        summaries = prefix_transfer.run_prefix_transfer(settings, models, fractions, backend,
                                                       args.prefix_solo_dir)
        prefix_transfer.print_table(summaries)
    print(f"wrote {settings.out_dir / 'summary.json'}")
    return 0


def print_leak_table(out_dir: Path, overall: dict) -> None:
    """Per benchmark: pass@k over the clean samples (problems left out), and the leak and budget rates."""
    import json

    ks = overall["ks"]
    print("leak-controlled".ljust(24) + "".join(f"pass@{k}".rjust(16) for k in ks) + "  visible  undet.  budget")
    for name in overall["benchmarks"]:
        s = json.loads((out_dir / f"{file_stem(name)}.summary.json").read_text(encoding="utf-8"))
        lc, vis = s["leak_controlled"], s["answer_visible"]
        cells = "".join(("—" if lc[f"pass@{k}"] is None else f"{lc[f'pass@{k}']:.4f}").rjust(9)
                        + f" (-{lc['left_out'][f'pass@{k}']})".ljust(7) for k in ks)
        rate = lambda v: "—" if v is None else f"{v:.3f}"  # noqa: E731
        print(name.ljust(24) + cells + f"  {rate(vis['visible_rate']):>7}  {rate(vis['undetermined_rate']):>5}"
              f"  {rate(s['hit_budget']['rate']):>6}")
    print(LEAK_LEGEND)


LEAK_LEGEND = ("pass@k over each problem's clean samples (the senior never wrote the gold answer before the junior's last "
               "turn), (-N) = problems with fewer than k clean samples, left out; visible = share of the determinable "
               "samples in which the senior showed the answer, undet. = share whose gold cannot be told (too short, "
               "unreadable), budget = share that spent the token budget; — = nothing to rate")


main = tool.entry(__name__)  # main(argv=None) -> exit status: parse, run, one-line errors


if __name__ == "__main__":
    sys.exit(main())
