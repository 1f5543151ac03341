"""The shared driver of `eval_solo` and `eval_sentence_handoff`: flags, generation, grading, outputs.

For each benchmark it writes, under `--out-dir`:
- `<benchmark>.samples.jsonl`: one row per sample (problem id, benchmark, source, sample
  index, gold, text, extracted answer, correct, finish reason, token ids; the handoff adds
  the authorship mask, the number of handoffs and the senior's token share);
- `<benchmark>.summary.json`: the run's config, pass@k for k = 1, 2, 4, ... <= n (the
  unbiased estimator), the same per source, and per-problem (n, c).
and finally `summary.json` with every benchmark's pass@k and their macro / micro means.

Resuming: a benchmark whose two files exist and whose recorded config equals this run's
is not recomputed. A different config is an error unless `--overwrite` is given.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from tqdm.auto import tqdm

from tandem.config_files import config_diff
from tandem.errors import TandemError, run_reporting_errors
from tandem.jsonl import write_json, write_jsonl
from tandem_eval import grader
from tandem_eval.backends import BACKENDS, EvalSampling, make_backend
from tandem_eval.datasets import ERRATA_MODES, PAPER_BENCHMARKS, FieldMap, Problem, load_benchmarks
from tandem_eval.metrics import benchmark_pass_at_k, ks_for, summarize
from tandem_eval.prompts import INSTRUCTION, chat_prompt_ids, chat_prompt_text

DEFAULTS = EvalSampling()
DEFAULT_N = 8


def add_common_arguments(p: argparse.ArgumentParser) -> None:
    """Flags shared by the solo and the handoff evaluation."""
    p.add_argument("--benchmarks", default=",".join(PAPER_BENCHMARKS),
                   help="comma-separated benchmarks: presets (aime2024 aime2025 aime2026 amc2023 amc2024 amc2025 "
                        "minerva_math math500 gsm8k), the paper's groups (aime_24_26 amc_23_25 minerva), "
                        ".jsonl/.parquet paths, or hf:owner/name[:split] (default: %(default)s)")
    p.add_argument("--n", type=int, default=DEFAULT_N, help="samples per problem; pass@k is reported for k = 1, 2, 4, "
                   "... <= n (default: %(default)s)")
    p.add_argument("--out-dir", required=True, type=Path, help="directory for the per-sample JSONL and summary JSONs")
    p.add_argument("--backend", choices=BACKENDS, default="engine",
                   help="engine = the reference PyTorch engine (CPU or one GPU); vllm = vLLM (a GPU, or vLLM's "
                        "CPU build) (default: %(default)s)")
    p.add_argument("--max-problems", type=int, default=None,
                   help="keep only the first N problems of each benchmark (for small runs)")
    p.add_argument("--temperature", type=float, default=DEFAULTS.temperature, help="sampling temperature; 0 = greedy "
                   "(default: %(default)s, the paper's eval)")
    p.add_argument("--top-p", type=float, default=DEFAULTS.top_p, help="nucleus sampling mass (default: %(default)s)")
    p.add_argument("--top-k", type=int, default=DEFAULTS.top_k, help="top-k cutoff, 0 = off (default: %(default)s)")
    p.add_argument("--max-new-tokens", type=int, default=DEFAULTS.max_new_tokens,
                   help="response budget in tokens (shared by both models in the handoff) (default: %(default)s)")
    p.add_argument("--seed", type=int, default=DEFAULTS.seed, help="sampling seed; with the problem id and sample "
                   "index it keys every request's randomness (default: %(default)s)")
    p.add_argument("--data-dir", default=None, help="directory with the benchmark JSONL files (default: "
                   "$TANDEM_DATA_DIR, else ../shared/data beside the repository); presets missing there are read "
                   "from their Hugging Face copy")
    p.add_argument("--offline", action="store_true", help="never fall back to the Hugging Face hub for presets")
    p.add_argument("--errata", choices=ERRATA_MODES, default="fixed",
                   help="AMC 2024 answers: fixed = the four verified corrections, source = as published, which the "
                        "paper scored against (default: %(default)s)")
    p.add_argument("--fields", default=None, help="column mapping for file / hub benchmarks, e.g. "
                   "problem=question,answer=answer,id=idx (answer_after=#### keeps text after a marker)")
    p.add_argument("--device", default="cpu", help="engine device: cpu or cuda[:i] (default: %(default)s)")
    p.add_argument("--dtype", default="auto", help="model dtype: auto (float32 on CPU, bfloat16 on GPU; the "
                   "checkpoint's under vLLM), float32, bfloat16, float16 (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=64, help="engine: samples generated together (default: %(default)s)")
    p.add_argument("--gpu-memory-utilization", type=float, default=None,
                   help="vllm: memory fraction per model (default 0.85 for one model, 0.42 each for two)")
    p.add_argument("--instruction", default=INSTRUCTION,
                   help='instruction appended to every problem (default: "%(default)s"); "" = the bare problem')
    p.add_argument("--overwrite", action="store_true", help="recompute benchmarks whose outputs exist with another config")


def sampling_from_args(args) -> EvalSampling:
    return EvalSampling(args.temperature, args.top_p, args.top_k, args.max_new_tokens, args.seed)


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
    differ = config_diff(stored.get("config", {}), config) or ["(unreadable summary)"]
    raise TandemError(
        f"{summary_path} was written with a different config (differs in: {', '.join(differ)}); "
        "pass --overwrite to recompute it, or choose another --out-dir"
    )


def _grade_rows(problems: list[Problem], samples, n: int, benchmark: str) -> list[dict]:
    rows = []
    bar = tqdm(total=len(samples), desc=f"grade {benchmark}", unit="sample")
    for i, sample in enumerate(samples):
        problem = problems[i // n]
        answer = grader.extract_answer(sample.text)
        row = {
            "problem_id": problem.id, "benchmark": benchmark, "source": problem.source, "sample": i % n,
            "gold": problem.answer, "extracted_answer": answer, "correct": grader.is_equivalent(answer, problem.answer),
            "finish_reason": sample.finish_reason, "num_tokens": len(sample.token_ids), "text": sample.text,
            "response_ids": sample.token_ids,
        }
        rows.append(row)
        bar.update(1)
    bar.close()
    return rows


def _summary(config: dict, problems: list[Problem], rows: list[dict], n: int, handoff: bool, stats: dict) -> dict:
    ks = ks_for(n)
    correct: dict[str, int] = {}
    for r in rows:
        correct[r["problem_id"]] = correct.get(r["problem_id"], 0) + int(r["correct"])
    per_problem = [{"id": p.id, "source": p.source, "n": n, "c": correct.get(p.id, 0)} for p in problems]
    by_source: dict[str, list] = {}
    for pp in per_problem:
        by_source.setdefault(pp["source"], []).append((n, pp["c"]))
    out = {
        "phase": config["phase"], "benchmark": config["benchmark"], "config": config,
        "num_problems": len(problems), "num_samples": len(rows), "ks": ks,
        "pass_at_k": benchmark_pass_at_k([(n, pp["c"]) for pp in per_problem], ks),
        "by_source": {s: benchmark_pass_at_k(c, ks) for s, c in by_source.items()},
        "mean_response_tokens": sum(r["num_tokens"] for r in rows) / max(1, len(rows)),
        "finish_reasons": {k: sum(r["finish_reason"] == k for r in rows) for k in ("stop", "length")},
        "grader": stats,
        "per_problem": per_problem,
    }
    if handoff:
        out["mean_handoffs"] = sum(r["num_handoffs"] for r in rows) / max(1, len(rows))
        out["senior_token_fraction"] = sum(sum(r["authorship_mask"]) for r in rows) / max(1, sum(r["num_tokens"] for r in rows))
    return out


def _generate(backend, problems: list[Problem], n: int, benchmark: str, handoff: bool, instruction: str = INSTRUCTION):
    from tandem.coins import request_key

    texts = [chat_prompt_text(backend.tokenizer, p.problem, instruction) for p in problems]
    ids = [chat_prompt_ids(backend.tokenizer, p.problem, instruction) for p in problems]
    prompts = [ids[i // n] for i in range(len(problems) * n)]
    keys = [request_key(f"{benchmark}/{problems[i // n].id}", i % n) for i in range(len(prompts))]
    if handoff:
        return backend.handoff(prompts, keys, [texts[i // n] for i in range(len(prompts))]), prompts
    return backend.solo(prompts, keys), prompts


def run_benchmark(backend_factory, benchmark: str, problems: list[Problem], base_config: dict, args, handoff: bool,
                  state: dict) -> dict:
    """Evaluate one benchmark (or load its finished outputs); return its summary."""
    config = {**base_config, "benchmark": benchmark, "num_problems": len(problems),
              "problems_sha256": _problems_digest(problems)}
    stem = _file_stem(benchmark)
    samples_path, summary_path = args.out_dir / f"{stem}.samples.jsonl", args.out_dir / f"{stem}.summary.json"
    done = _existing_summary(summary_path, samples_path, config, args.overwrite)
    if done is not None:
        print(f"{benchmark}: already done with this config, skipped ({summary_path})", file=sys.stderr)
        return done
    if "backend" not in state:
        state["backend"] = backend_factory()
    before = grader.stats()
    samples, prompts = _generate(state["backend"], problems, args.n, benchmark, handoff,
                                 getattr(args, "instruction", INSTRUCTION))
    rows = _grade_rows(problems, samples, args.n, benchmark)
    for row, sample, prompt in zip(rows, samples, prompts):
        row["prompt_ids"] = prompt
        if handoff:
            row["authorship_mask"] = sample.authorship_mask
            row["num_handoffs"] = sample.num_handoffs
            row["senior_fraction"] = sum(sample.authorship_mask) / max(1, len(sample.authorship_mask))
    after = grader.stats()
    stats = {k: after[k] - before[k] for k in after}
    summary = _summary(config, problems, rows, args.n, handoff, stats)
    write_jsonl(samples_path, rows)
    write_json(summary_path, summary)
    return summary


def validate_args(args) -> None:
    if args.n < 1:
        raise TandemError(f"--n must be >= 1, got {args.n}")
    if args.max_problems is not None and args.max_problems < 1:
        raise TandemError(f"--max-problems must be >= 1, got {args.max_problems}")
    if args.out_dir.exists() and not args.out_dir.is_dir():
        raise TandemError(f"--out-dir {args.out_dir} is a file; pass a directory")


def run_eval(args, phase: str, models: dict, backend_factory) -> dict:
    """Evaluate every benchmark of `args`; write and return the overall summary."""
    validate_args(args)
    sampling = sampling_from_args(args)
    benchmarks = load_benchmarks([b for b in args.benchmarks.split(",") if b.strip()], args.data_dir,
                                 FieldMap.parse(args.fields) if args.fields else None, args.errata,
                                 allow_hub=not args.offline, max_problems=args.max_problems)
    base = {"phase": phase, **models, "backend": args.backend, "n": args.n, "sampling": sampling.record(),
            "max_problems": args.max_problems, "errata": args.errata, "instruction": args.instruction,
            "dtype": args.dtype}
    args.out_dir.mkdir(parents=True, exist_ok=True)
    state: dict = {}
    per = {name: run_benchmark(backend_factory, name, problems, base, args, phase == "handoff", state)
           for name, problems in benchmarks.items()}
    counts = {name: [(p["n"], p["c"]) for p in s["per_problem"]] for name, s in per.items()}
    overall = {"phase": phase, "config": base, "ks": ks_for(args.n), **summarize(counts, ks_for(args.n))}
    if phase == "handoff":
        overall["mean_handoffs"] = {name: s["mean_handoffs"] for name, s in per.items()}
    write_json(args.out_dir / "summary.json", overall)
    return overall


def print_table(overall: dict) -> None:
    ks = overall["ks"]
    print("benchmark".ljust(24) + "".join(f"pass@{k}".rjust(10) for k in ks))
    rows = list(overall["benchmarks"].items()) + [("macro", overall["macro"]), ("micro", overall["micro"])]
    for name, scores in rows:
        print(name.ljust(24) + "".join(f"{scores[f'pass@{k}']:10.4f}" for k in ks))


def cli_main(parser: argparse.ArgumentParser, run, argv=None) -> int:
    """Parse, run, and turn an expected mistake into one `error: ...` line and exit status 2."""
    return run_reporting_errors(run, parser.parse_args(argv))


def backend_factory(args, senior: str, junior: str | None = None):
    def build():
        return make_backend(args.backend, senior, junior, sampling_from_args(args), device=args.device,
                            dtype=args.dtype, batch_size=args.batch_size,
                            allow_vocab_mismatch=getattr(args, "allow_vocab_mismatch", False),
                            gpu_memory_utilization=args.gpu_memory_utilization,
                            handoff_route=getattr(args, "vllm_handoff", "two-engine"))
    return build


__all__ = ["add_common_arguments", "backend_factory", "cli_main", "print_table", "run_eval", "model_id"]
