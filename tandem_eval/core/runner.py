"""The shared driver of `eval_solo` and `eval_step_handoff`: generation, grading, outputs.

For each benchmark it writes, under `--out-dir`:
- `<benchmark>.samples.jsonl`: one row per sample (`tandem_eval.core.rows.SampleRow`: problem id,
  benchmark, source, sample index, gold, text, extracted answer, correct, finish reason,
  token ids; the handoff adds the authorship mask, the number of handoffs and the senior's
  token share; every row: whether the answer was visible before the junior's last turn,
  who wrote the final answer, whether the budget was spent, `tandem_eval.core.leak`);
- `<benchmark>.summary.json`: the run's config, pass@k for k = 1, 2, 4, ... <= n (the
  unbiased estimator), the same per source, per-problem (n, c), the rates of the three
  leak fields and, for the handoff, `leak_controlled`: pass@k over the samples without a
  leak (each problem's own n; problems with fewer than k left out and counted).
and finally `summary.json` with every benchmark's pass@k and their macro / micro means.

The flags (`tandem_eval.core.flags`) become the run's typed settings (`tandem_eval.core.run_config.EvalRun`,
what everything below reads); `--preset` (`tandem_eval.core.presets`: `ours`, the default, or
`paper`, the release's evaluation) fills every flag left out, and the config each output
records names the preset. The models generate through the run's `EvalBackend`
(`tandem_eval.core.backends`), whose backends are built on first use.

Resuming (`tandem_eval.core.resume`): a benchmark whose two files exist and whose recorded config
equals this run's is not recomputed. Within a benchmark, finished problems are appended
every `--save-every` problems to `<benchmark>.partial.jsonl`; a killed run continues from
there, never re-generating a finished sample (sampling is keyed per request, so the
continuation draws what one uninterrupted run would have). One process writes an
`--out-dir` at a time (`tandem.io.run_lock`: a second is refused). A different config,
another preset above all, is an error unless `--overwrite` is given, which starts that
benchmark over.
"""

from __future__ import annotations

import sys
from pathlib import Path

from tqdm.auto import tqdm

from tandem.io import run_lock
from tandem.io.jsonl import write_json, write_jsonl
from tandem.metrics import benchmark_pass_at_k, ks_for, summarize
from tandem.rollout.contract import stats_of_masks
from tandem.grading import grader
from tandem_eval.core import leak
from tandem_eval.core.backends import EvalBackend
from tandem_eval.core.datasets import FieldMap, Problem, check_benchmark_spec, load_benchmarks
from tandem_eval.core.handoff import cap_rounds
from tandem_eval.core.presets import EvalPreset, response_budget
from tandem_eval.core.prompts import chat_prompt_ids, chat_prompt_text
from tandem_eval.core.resume import (append_rows, existing_summary, file_stem, problems_digest, read_partial,
                                     write_partial)
from tandem_eval.core.rows import SampleRow
from tandem_eval.core.run_config import EvalRun
from tandem_eval.core.sampling import record


def model_id(path: str) -> str:
    """A model as its config records it: a local directory's absolute path, else the name as given."""
    p = Path(path)
    return str(p.resolve()) if p.exists() else str(path)


def _grade_rows(problems: list[Problem], samples, prompts: list[list[int]], cuts: list[bool], n: int,
                benchmark: str, handoff: bool, tokenizer) -> list[SampleRow]:
    rows = []
    bar = tqdm(total=len(samples), desc=f"grade {benchmark}", unit="sample")
    for i, (sample, prompt, cut) in enumerate(zip(samples, prompts, cuts, strict=True)):
        problem = problems[i // n]
        answer = grader.extract_answer(sample.text)
        row = SampleRow(
            problem.id, benchmark, problem.source, i % n, problem.answer, answer,
            grader.is_equivalent(answer, problem.answer), sample.finish_reason, len(sample.token_ids), sample.text,
            sample.token_ids, prompt,
        )
        if handoff:
            row.cut_by_max_rounds, row.authorship_mask = cut, sample.authorship_mask
            row.num_handoffs, row.senior_token_fraction = sample.num_handoffs, sample.senior_token_fraction
        rows.append(row.mark_leaks(tokenizer))
        bar.update(1)
    bar.close()
    return rows


def _summary(config: dict, problems: list[Problem], rows: list[SampleRow], n: int, handoff: bool,
             stats: dict) -> dict:
    ks = ks_for(n)
    correct: dict[str, int] = {}
    for r in rows:
        correct[r.problem_id] = correct.get(r.problem_id, 0) + int(r.correct)
    per_problem = [{"id": p.id, "source": p.source, "n": n, "c": correct.get(p.id, 0)} for p in problems]
    by_source: dict[str, list] = {}
    for pp in per_problem:
        by_source.setdefault(pp["source"], []).append((n, pp["c"]))
    out = {
        "phase": config["phase"], "benchmark": config["benchmark"], "config": config,
        "num_problems": len(problems), "num_samples": len(rows), "ks": ks,
        "pass_at_k": benchmark_pass_at_k([(n, pp["c"]) for pp in per_problem], ks),
        "by_source": {s: benchmark_pass_at_k(c, ks) for s, c in by_source.items()},
        "mean_response_tokens": sum(r.num_tokens for r in rows) / max(1, len(rows)),
        "finish_reasons": {k: sum(r.finish_reason == k for r in rows) for k in ("stop", "length")},
        **leak.rates(rows),
        "grader": stats,
        "per_problem": per_problem,
    }
    if handoff:
        out.update(stats_of_masks([r.authorship_mask for r in rows]).metrics())
        out["chains_cut_by_max_rounds"] = sum(r.cut_by_max_rounds for r in rows)
        clean = leak.controlled_counts(rows)  # the samples whose answer the senior had not shown
        out["leak_controlled"] = {**leak.pass_at_k_over_clean([(p["n"], p["c"]) for p in clean], ks),
                                  "per_problem": clean}
    return out


def _generate(backend, problems: list[Problem], n: int, benchmark: str, handoff: bool, preset: EvalPreset,
              run: EvalRun) -> tuple[list, list[list[int]], list[bool]]:
    """n samples per problem, in (problem, sample) order, each prompt under its own response budget; with
    each sample's prompt ids and whether the preset's handoff round cap cut it."""
    from tandem.process.coins import request_key

    separator = preset.instruction_separator
    texts = [chat_prompt_text(backend.tokenizer, p.problem, run.instruction, separator) for p in problems]
    ids = [chat_prompt_ids(backend.tokenizer, p.problem, run.instruction, separator) for p in problems]
    budgets = [response_budget(preset, run.sampling.max_new_tokens, len(i)) for i in ids]
    out: list = [None] * (len(problems) * n)
    for budget in sorted(set(budgets)):
        rows = [i for i in range(len(out)) if budgets[i // n] == budget]
        prompts = [ids[i // n] for i in rows]
        keys = [request_key(f"{benchmark}/{problems[i // n].id}", i % n) for i in rows]
        cap = None if budget == run.sampling.max_new_tokens else budget
        if handoff:
            got = backend.handoff(prompts, keys, [texts[i // n] for i in rows], max_new_tokens=cap)
        else:
            got = backend.solo(prompts, keys, max_new_tokens=cap)
        for i, rollout in zip(rows, got):
            out[i] = rollout
    cut = [False] * len(out)
    if handoff:  # what the release's round cap leaves is what gets graded
        for i, rollout in enumerate(out):
            out[i], cut[i] = cap_rounds(rollout, preset.max_rounds, backend.tokenizer)
    return out, [ids[i // n] for i in range(len(out))], cut


def run_benchmark(backend: EvalBackend, benchmark: str, problems: list[Problem], base_config: dict, run: EvalRun,
                  handoff: bool) -> dict:
    """Evaluate one benchmark (or load its finished outputs, or go on from its finished problems); return its summary."""
    config = {**base_config, "benchmark": benchmark, "num_problems": len(problems),
              "problems_sha256": problems_digest(problems)}
    preset = run.preset
    stem = file_stem(benchmark)
    samples_path, summary_path = run.out_dir / f"{stem}.samples.jsonl", run.out_dir / f"{stem}.summary.json"
    partial_path = run.out_dir / f"{stem}.partial.jsonl"
    done = existing_summary(summary_path, samples_path, config, run.overwrite)
    if done is not None:
        print(f"{benchmark}: already done with this config, skipped ({summary_path})", file=sys.stderr)
        return done
    finished = read_partial(partial_path, config, run.n, run.overwrite)
    if not finished and partial_path.exists():
        partial_path.unlink()  # another config's (with --overwrite) or nothing whole in it
    elif finished:
        print(f"{benchmark}: resuming after {len(finished)} finished problems ({partial_path})", file=sys.stderr)
        # Rewrite with whole problems only, so a half-written problem is generated again in full;
        # in place, by a rename, so a kill here loses none of them.
        write_partial(partial_path, config, [r for p in problems if p.id in finished for r in finished[p.id]])
    todo = [p for p in problems if p.id not in finished]
    before = grader.stats()
    for start in range(0, len(todo), run.save_every):
        chunk = todo[start : start + run.save_every]
        samples, prompts, cuts = _generate(backend, chunk, run.n, benchmark, handoff, preset, run)
        rows = _grade_rows(chunk, samples, prompts, cuts, run.n, benchmark, handoff, backend.tokenizer)
        append_rows(partial_path, config, rows)
        for p in chunk:
            finished[p.id] = [r for r in rows if r.problem_id == p.id]
    rows = [r for p in problems for r in finished[p.id]]
    after = grader.stats()
    stats = {k: after[k] - before[k] for k in after}  # this process's grading (a resumed run: its part only)
    summary = _summary(config, problems, rows, run.n, handoff, stats)
    write_jsonl(samples_path, [r.to_json() for r in rows])
    write_json(summary_path, summary)
    partial_path.unlink(missing_ok=True)
    return summary


def load_run_benchmarks(run: EvalRun) -> dict[str, list[Problem]]:
    """The problems of every benchmark of `run`, by benchmark name."""
    return load_benchmarks(list(run.benchmarks), run.data_dir, FieldMap.parse(run.fields) if run.fields else None,
                           run.errata, allow_hub=not run.offline, max_problems=run.max_problems)


def run_eval(run: EvalRun, phase: str, models: dict, backend: EvalBackend) -> dict:
    """Evaluate every benchmark of `run` with `backend` (its models load when a benchmark needs them); write and
    return the overall summary."""
    preset = run.preset
    for spec in run.benchmarks:  # the names first: no model or file is read for a misspelt one
        check_benchmark_spec(spec)
    backend.check_models()  # the models' tokens before the data, the data before the folder
    benchmarks = load_run_benchmarks(run)
    grader.warm_up()  # math-verify imported now, not inside the first grading call's time bound
    base = {"phase": phase, "preset": preset.name, **models, "backend": run.engine.backend, "n": run.n,
            "sampling": record(run.sampling), "max_problems": run.max_problems, "errata": run.errata,
            "instruction": run.instruction, "instruction_separator": preset.instruction_separator,
            "budget_rule": {"context_length": preset.context_length, "context_reserve": preset.context_reserve},
            "dtype": run.engine.dtype}
    if phase == "handoff":
        base["max_rounds"] = preset.max_rounds
    with run_lock.hold(run.out_dir, "--out-dir"):  # one writer per folder: two evals never interleave rows
        per = {name: run_benchmark(backend, name, problems, base, run, phase == "handoff")
               for name, problems in benchmarks.items()}
        counts = {name: [(p["n"], p["c"]) for p in s["per_problem"]] for name, s in per.items()}
        overall = {"phase": phase, "preset": preset.name, "config": base, "ks": ks_for(run.n),
                   **summarize(counts, ks_for(run.n))}
        if phase == "handoff":
            overall["mean_handoffs"] = {name: s["mean_handoffs"] for name, s in per.items()}
        write_json(run.out_dir / "summary.json", overall)
    return overall


def print_table(overall: dict) -> None:
    ks = overall["ks"]
    print("benchmark".ljust(24) + "".join(f"pass@{k}".rjust(10) for k in ks))
    rows = list(overall["benchmarks"].items()) + [("macro", overall["macro"]), ("micro", overall["micro"])]
    for name, scores in rows:
        print(name.ljust(24) + "".join(f"{scores[f'pass@{k}']:10.4f}" for k in ks))
    print(TABLE_LEGEND.format(n=overall["config"]["n"]))


TABLE_LEGEND = ("pass@k: the unbiased estimate from n={n} samples per problem, mean over a benchmark's problems; "
                "macro = mean of the benchmarks, micro = every problem pooled")
