"""How often our handoff and the release's text handoff write different responses.

Our handoff hands over at a token: the turn ends with the first token whose text holds a
blank line, and the next model continues the same token history. The release's hands
over at text: a turn stops when the decoded text holds `\\n\\n`, the text is passed on,
and the next model reads the prompt plus the whole response re-tokenised. The two differ
where a blank line spans two tokens (`\\n` then `\\n`), and where re-tokenising the text
does not give back the sampled tokens. This runs both on the same models, prompts and
request keys (`tandem_eval.core.handoff.run_step_handoff` with the step token set, and with
`step_ids=None`, its text route) and counts the responses that differ.

    python -m tandem_eval.analysis.handoff_protocols --senior S --junior J --benchmarks FILE.jsonl --n 4 --out-dir cmp

(writes `cmp/handoff_protocols.json`; the other flags are the evaluations' own).

The text route here keeps a stop token's whole text where vLLM's `include_stop_str_in_output`
would cut it after the `\\n\\n`, so it is the release's protocol up to that detail.
"""

from __future__ import annotations

import argparse
import json
import sys

from tandem.io.jsonl import write_json
from tandem.grading import grader
from tandem_eval.core.sampling import record
from tandem_eval.core import tool

DESCRIPTION = "Count the responses on which the token handoff (ours) and the text handoff (the release's) differ."


def compare(senior, junior, prompts: list[list[int]], texts: list[str], keys: list[int], sampling,
            golds: list[str] | None = None) -> dict:
    """Run both protocols on the same requests; counts of identical and differing responses."""
    from tandem.process.boundaries import boundary_ids
    from tandem.rollout.contract import stats_of_masks
    from tandem.io.metric_log import MEAN_HANDOFFS
    from tandem_eval.core.handoff import run_step_handoff

    step_ids = boundary_ids(senior.tokenizer, "step")
    by_token = run_step_handoff(senior, junior, prompts, texts, keys, sampling, step_ids, progress=False)
    by_text = run_step_handoff(senior, junior, prompts, texts, keys, sampling, None, progress=False)
    out = {
        "responses": len(prompts),
        "same_tokens": sum(a.token_ids == b.token_ids for a, b in zip(by_token, by_text)),
        "same_text": sum(a.text == b.text for a, b in zip(by_token, by_text)),
        "same_authorship": sum(a.authorship_mask == b.authorship_mask for a, b in zip(by_token, by_text)),
        "mean_handoffs": {name: stats_of_masks([r.authorship_mask for r in rollouts]).metrics()[MEAN_HANDOFFS]
                          for name, rollouts in (("token", by_token), ("text", by_text))},
    }
    if golds is not None:
        grades = [(grader.grade(a.text, g), grader.grade(b.text, g)) for a, b, g in zip(by_token, by_text, golds)]
        out["same_grade"] = sum(x == y for x, y in grades)
        out["correct"] = {"token": sum(x for x, _ in grades), "text": sum(y for _, y in grades)}
    out["differ_fraction"] = 1 - out["same_tokens"] / max(1, len(prompts))
    return out


def add_arguments(p: argparse.ArgumentParser) -> None:
    from tandem_eval.core import flags

    p.add_argument("--senior", required=True)
    p.add_argument("--junior", required=True)
    flags.add_common_arguments(p)


def run(args) -> int:
    from dataclasses import replace

    from tandem.process.coins import request_key
    from tandem_eval.core.backends import EvalBackend
    from tandem_eval.core.prompts import chat_prompt_ids, chat_prompt_text
    from tandem_eval.core.run_config import EvalRun
    from tandem_eval.core.runner import load_run_benchmarks

    settings = EvalRun.from_args(args)
    preset = settings.preset
    # both protocols take turns on two reference engines, whatever --backend says
    backend = EvalBackend(replace(settings.engine, backend="engine"), settings.sampling)
    benchmarks = load_run_benchmarks(settings)
    sep = preset.instruction_separator
    prompts, texts, keys, golds = [], [], [], []
    for name, problems in benchmarks.items():
        for p in problems:
            for s in range(settings.n):
                prompts.append(chat_prompt_ids(backend.tokenizer, p.problem, settings.instruction, sep))
                texts.append(chat_prompt_text(backend.tokenizer, p.problem, settings.instruction, sep))
                keys.append(request_key(f"{name}/{p.id}", s))
                golds.append(p.answer)
    result = compare(backend.backend("senior"), backend.backend("junior"), prompts, texts, keys,
                     backend.sampling, golds)
    result["config"] = {"senior": args.senior, "junior": args.junior, "preset": preset.name, "n": settings.n,
                        "sampling": record(backend.sampling), "benchmarks": list(benchmarks)}
    print(json.dumps({k: v for k, v in result.items() if k != "config"}))
    write_json(settings.out_dir / "handoff_protocols.json", result)
    return 0


main = tool.entry(__name__)  # main(argv=None) -> exit status: parse, run, one-line errors


if __name__ == "__main__":
    sys.exit(main())
