"""The shared driver of `eval_solo` and `eval_sentence_handoff`: flags, generation, grading, outputs.

For each benchmark it writes, under `--out-dir`:
- `<benchmark>.samples.jsonl`: one row per sample (`tandem_eval.rows.SampleRow`: problem id,
  benchmark, source, sample index, gold, text, extracted answer, correct, finish reason,
  token ids; the handoff adds the authorship mask, the number of handoffs and the senior's
  token share; every row: whether the answer was visible before the junior's last turn,
  who wrote the final answer, whether the budget was spent, `tandem_eval.leak`);
- `<benchmark>.summary.json`: the run's config, pass@k for k = 1, 2, 4, ... <= n (the
  unbiased estimator), the same per source, per-problem (n, c), the rates of the three
  leak fields and, for the handoff, `leak_controlled`: pass@k over the samples without a
  leak (each problem's own n; problems with fewer than k left out and counted).
and finally `summary.json` with every benchmark's pass@k and their macro / micro means.

`--preset` (`tandem_eval.presets`: `ours`, the default, or `paper`, the release's
evaluation) fills every flag left out (`tandem_eval.run_config.EvalRun`, the typed
settings everything below reads); the config each output records names the preset.

Resuming: a benchmark whose two files exist and whose recorded config equals this run's
is not recomputed. Within a benchmark, finished problems are appended every
`--save-every` problems to `<benchmark>.partial.jsonl` (its first line holds the config);
a killed run continues from there, never re-generating a finished sample (sampling is
keyed per request, so the continuation draws what one uninterrupted run would have). One
process writes an `--out-dir` at a time (`tandem.run_lock`: a second is refused). A
different config, another preset above all, is an error unless `--overwrite` is given,
which starts that benchmark over.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from tqdm.auto import tqdm

from tandem import run_lock
from tandem.config_files import config_diff
from tandem.errors import TandemError
from tandem.rollout import stats_of_masks
from tandem.jsonl import write_json, write_jsonl
from tandem_eval import grader, leak
from tandem_eval.backends import BACKENDS, make_backend
from tandem_eval.datasets import ERRATA_MODES, FieldMap, Problem, load_benchmarks
from tandem_eval.handoff import cap_rounds
from tandem.metrics import benchmark_pass_at_k, ks_for, summarize
from tandem_eval.presets import DEFAULT_PRESET, PRESETS, EvalPreset, response_budget
from tandem_eval.prompts import chat_prompt_ids, chat_prompt_text
from tandem_eval.rows import SampleRow
from tandem_eval.run_config import EvalRun

DEFAULTS = PRESETS[DEFAULT_PRESET]
DEFAULT_N = DEFAULTS.n
DEFAULT_SAVE_EVERY = EvalRun.save_every


def _preset_help(field: str) -> str:
    values = {name: p.value(field) for name, p in PRESETS.items()}
    shown = {k: (",".join(v) if isinstance(v, tuple) else v) for k, v in values.items()}
    return "default: the preset's (" + "; ".join(f"{k}: {v!r}" for k, v in shown.items()) + ")"


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """Flags shared by the solo and the handoff evaluation (None = the --preset's value)."""
    p.add_argument("--preset", choices=sorted(PRESETS), default=DEFAULT_PRESET,
                   help="the evaluation protocol every flag left out comes from: ours (this project's default) or "
                        "paper (the release's: its prompt, n 8, seed 17, AIME 24 / 25 / 26 and AMC 23-25 as four "
                        "benchmarks, budget min(3000, 4096 - prompt - 8), at most 150 handoff rounds; "
                        "tandem_eval/README.md lists what still differs) (default: %(default)s)")
    p.add_argument("--benchmarks", default=None,
                   help="comma-separated benchmarks: presets (aime2024 aime2025 aime2026 amc2023 amc2024 amc2025 "
                        "minerva_math math500 gsm8k), the paper's groups (aime_24_26 amc_23_25 minerva), "
                        ".jsonl/.parquet paths, or hf:owner/name[:split]; " + _preset_help("benchmarks"))
    p.add_argument("--n", type=int, default=None, help="samples per problem; pass@k is reported for k = 1, 2, 4, "
                   "... <= n; " + _preset_help("n"))
    p.add_argument("--out-dir", required=True, type=Path, help="directory for the per-sample JSONL and summary JSONs")
    p.add_argument("--backend", choices=BACKENDS, default="engine",
                   help="engine = the reference PyTorch engine (CPU or one GPU); vllm = vLLM (a GPU, or vLLM's "
                        "CPU build) (default: %(default)s)")
    p.add_argument("--max-problems", type=int, default=None,
                   help="keep only the first N problems of each benchmark (for small runs)")
    p.add_argument("--temperature", type=float, default=None, help="sampling temperature; 0 = greedy; "
                   + _preset_help("temperature"))
    p.add_argument("--top-p", type=float, default=None, help="nucleus sampling mass; " + _preset_help("top_p"))
    p.add_argument("--top-k", type=int, default=None, help="top-k cutoff, 0 = off; " + _preset_help("top_k"))
    p.add_argument("--max-new-tokens", type=int, default=None,
                   help="response budget in tokens (shared by both models in the handoff; the paper preset also "
                        "caps it at 4096 - prompt - 8); " + _preset_help("max_new_tokens"))
    p.add_argument("--seed", type=int, default=None, help="sampling seed; with the problem id and sample "
                   "index it keys every request's randomness; " + _preset_help("seed"))
    p.add_argument("--data-dir", default=None, help="directory with the benchmark JSONL files (default: "
                   "$TANDEM_DATA_DIR, else ../shared/data beside the repository); presets missing there are read "
                   "from their Hugging Face copy")
    p.add_argument("--offline", action="store_true", help="never fall back to the Hugging Face hub for presets")
    p.add_argument("--errata", choices=ERRATA_MODES, default=None,
                   help="AMC 2024 answers: fixed = the four verified corrections, source = as published, which the "
                        "paper scored against; " + _preset_help("errata"))
    p.add_argument("--fields", default=None, help="column mapping for file / hub benchmarks, e.g. "
                   "problem=question,answer=answer,id=idx (answer_after=#### keeps text after a marker)")
    p.add_argument("--device", default="cpu", help="engine device: cpu or cuda[:i] (default: %(default)s)")
    p.add_argument("--dtype", default="auto", help="model dtype: auto (float32 on CPU, bfloat16 on GPU; the "
                   "checkpoint's under vLLM), float32, bfloat16, float16 (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=64, help="engine: samples generated together (default: %(default)s)")
    p.add_argument("--gpu-memory-utilization", type=float, default=None,
                   help="vllm: memory fraction per model (default 0.85 for one model, 0.42 each for two)")
    p.add_argument("--instruction", default=None,
                   help='instruction appended to every problem ("" = the bare problem); ' + _preset_help("instruction"))
    p.add_argument("--save-every", type=int, default=DEFAULT_SAVE_EVERY,
                   help="problems generated and graded between two saves of a benchmark's finished samples (what a "
                        "killed run resumes from; the samples do not depend on it) (default: %(default)s)")
    p.add_argument("--overwrite", action="store_true",
                   help="start over the benchmarks whose outputs exist with another config or preset")


def model_id(path: str) -> str:
    p = Path(path)
    return str(p.resolve()) if p.exists() else str(path)


def _problems_digest(problems: list[Problem]) -> str:
    h = hashlib.sha256()
    for p in problems:
        h.update(json.dumps([p.id, p.problem, p.answer, p.source]).encode())
    return h.hexdigest()[:16]


def _file_stem(benchmark: str) -> str:
    return benchmark.replace("/", "__").replace(":", "_")


def check_same_config(path: Path, stored: dict, config: dict) -> None:
    """One line naming what differs between a stored output's config and this run's (another preset first)."""
    if stored.get("preset", DEFAULT_PRESET) != config.get("preset", DEFAULT_PRESET):
        raise TandemError(
            f"{path} was made with the {stored.get('preset', DEFAULT_PRESET)!r} eval preset, this run asks for "
            f"{config.get('preset', DEFAULT_PRESET)!r}; outputs of two presets are never mixed: pass --overwrite "
            "to start over, or choose another --out-dir")
    differ = config_diff(stored, config) or ["(unreadable config)"]
    raise TandemError(
        f"{path} was written with a different config (differs in: {', '.join(differ)}); "
        "pass --overwrite to recompute it, or choose another --out-dir"
    )


def _existing_summary(summary_path: Path, samples_path: Path, config: dict, overwrite: bool) -> dict | None:
    """The stored summary if this benchmark is already done with the same config, else None."""
    if not (summary_path.is_file() and samples_path.is_file()):
        return None
    try:
        stored = json.loads(summary_path.read_text(encoding="utf-8"))
    except json.JSONDecodeError:
        stored = {}
    if stored.get("config") == config:
        return stored
    if overwrite:
        return None
    check_same_config(summary_path, stored.get("config", {}), config)
    return None


def _read_partial(path: Path, config: dict, n: int, overwrite: bool) -> dict[str, list[SampleRow]]:
    """Finished samples of an interrupted run of this benchmark: {problem id: its n rows}."""
    if not path.is_file():
        return {}
    lines = path.read_text(encoding="utf-8").splitlines()
    try:
        head = json.loads(lines[0]) if lines else {}
    except json.JSONDecodeError:
        head = {}
    if head.get("config") != config:
        if overwrite:
            return {}
        check_same_config(path, head.get("config", {}), config)
    rows: dict[str, list[SampleRow]] = {}
    for line in lines[1:]:
        try:
            row = SampleRow.from_json(json.loads(line))
        except (json.JSONDecodeError, TypeError):  # the last line of a killed write
            break
        rows.setdefault(row.problem_id, []).append(row)
    return {pid: sorted(r, key=lambda x: x.sample) for pid, r in rows.items() if len(r) == n}


def _append_rows(path: Path, config: dict, rows: list[SampleRow]) -> None:
    new = not path.is_file()
    with path.open("a", encoding="utf-8") as f:
        if new:
            f.write(json.dumps({"config": config}) + "\n")
        for row in rows:
            f.write(json.dumps(row.to_json(), ensure_ascii=False) + "\n")
        f.flush()


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
            row.num_handoffs, row.senior_fraction = sample.num_handoffs, sample.senior_fraction
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
    from tandem.coins import request_key

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


class LazyBackend:
    """The evaluation backend, built on first use (a run whose benchmarks are all done loads no model)."""

    def __init__(self, factory):
        self.factory, self._backend = factory, None

    def get(self):
        if self._backend is None:
            self._backend = self.factory()
        return self._backend


def run_benchmark(backend: LazyBackend, benchmark: str, problems: list[Problem], base_config: dict, run: EvalRun,
                  handoff: bool) -> dict:
    """Evaluate one benchmark (or load its finished outputs, or go on from its finished problems); return its summary."""
    config = {**base_config, "benchmark": benchmark, "num_problems": len(problems),
              "problems_sha256": _problems_digest(problems)}
    preset = run.preset
    stem = _file_stem(benchmark)
    samples_path, summary_path = run.out_dir / f"{stem}.samples.jsonl", run.out_dir / f"{stem}.summary.json"
    partial_path = run.out_dir / f"{stem}.partial.jsonl"
    done = _existing_summary(summary_path, samples_path, config, run.overwrite)
    if done is not None:
        print(f"{benchmark}: already done with this config, skipped ({summary_path})", file=sys.stderr)
        return done
    finished = _read_partial(partial_path, config, run.n, run.overwrite)
    if not finished and partial_path.exists():
        partial_path.unlink()  # another config's (with --overwrite) or nothing whole in it
    elif finished:
        print(f"{benchmark}: resuming after {len(finished)} finished problems ({partial_path})", file=sys.stderr)
        # Rewrite with whole problems only, so a half-written problem is generated again in full.
        partial_path.unlink()
        _append_rows(partial_path, config, [r for p in problems if p.id in finished for r in finished[p.id]])
    todo = [p for p in problems if p.id not in finished]
    before = grader.stats()
    for start in range(0, len(todo), run.save_every):
        chunk = todo[start : start + run.save_every]
        samples, prompts, cuts = _generate(backend.get(), chunk, run.n, benchmark, handoff, preset, run)
        rows = _grade_rows(chunk, samples, prompts, cuts, run.n, benchmark, handoff, backend.get().tokenizer)
        _append_rows(partial_path, config, rows)
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


def run_eval(run: EvalRun, phase: str, models: dict, backend_factory) -> dict:
    """Evaluate every benchmark of `run`; write and return the overall summary."""
    preset = run.preset
    benchmarks = load_run_benchmarks(run)
    base = {"phase": phase, "preset": preset.name, **models, "backend": run.backend, "n": run.n,
            "sampling": run.sampling.record(), "max_problems": run.max_problems, "errata": run.errata,
            "instruction": run.instruction, "instruction_separator": preset.instruction_separator,
            "budget_rule": {"context_length": preset.context_length, "context_reserve": preset.context_reserve},
            "dtype": run.dtype}
    if phase == "handoff":
        base["max_rounds"] = preset.max_rounds
    backend = LazyBackend(backend_factory)
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


def backend_factory(run: EvalRun, senior: str, junior: str | None = None):
    """Builds the run's `EvalBackend` when called (`make_backend` with the run's settings)."""
    def build():
        return make_backend(run.backend, senior, junior, run.sampling, device=run.device, dtype=run.dtype,
                            batch_size=run.batch_size, allow_vocab_mismatch=run.allow_vocab_mismatch,
                            gpu_memory_utilization=run.gpu_memory_utilization, handoff_route=run.vllm_handoff,
                            max_model_len=run.preset.context_length)
    return build


__all__ = ["EvalRun", "add_common_arguments", "backend_factory", "load_run_benchmarks", "print_table",
           "run_eval", "model_id"]
