"""The flags every evaluation tool shares (`eval_solo`, `eval_step_handoff`, `handoff_protocols`).

A flag left out is None and takes the `--preset`'s value (`tandem_eval.core.presets`);
`tandem_eval.core.run_config.EvalRun.from_args` turns the parsed flags into the run's typed settings.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from tandem_eval.core.datasets import ERRATA_MODES
from tandem_backends.registry import NAMES as BACKENDS
from tandem_eval.core.presets import DEFAULT_PRESET, PRESETS
from tandem_eval.core.run_config import EvalRun

DEFAULTS = PRESETS[DEFAULT_PRESET]
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
                   "$TANDEM_DATA_DIR, else ../shared/data beside the repository; `python "
                   "scripts/fetch_shared_data.py --out DIR` downloads them); presets missing there are read "
                   "from their Hugging Face copy")
    p.add_argument("--offline", action="store_true", help="never fall back to the Hugging Face hub for presets")
    p.add_argument("--errata", choices=ERRATA_MODES, default=None,
                   help="AMC 2024 answers: fixed = the four verified corrections, source = as published, which the "
                        "paper scored against; " + _preset_help("errata"))
    p.add_argument("--fields", default=None, help="column mapping for file / hub benchmarks: KEY=COLUMN,... with "
                   "keys problem, answer, id, answer_after; without it the columns read are problem, answer and id; "
                   "e.g. problem=question,answer=answer,id=idx (answer_after=#### "
                   "keeps the text after a marker, as GSM8K's answers need)")
    p.add_argument("--device", default="cpu", help="engine device: cpu or cuda[:i] (default: %(default)s)")
    p.add_argument("--dtype", default="auto", help="model dtype: auto (float32 on CPU, bfloat16 on GPU; the "
                   "checkpoint's under vLLM), float32, bfloat16, float16 (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=64, help="engine: samples generated together (default: %(default)s)")
    p.add_argument("--threads", type=int, default=0, help="engine: torch CPU threads; 0 = auto: 1 when both models "
                   "are small (the demo's tiny ones), else torch's default (default: %(default)s)")
    p.add_argument("--gpu-memory-utilization", type=float, default=None,
                   help="vllm: memory fraction per model (default 0.85 for one model, 0.42 each for two)")
    p.add_argument("--instruction", default=None,
                   help='instruction appended to every problem ("" = the bare problem); default: the one the '
                        "model records in its tandem_prompt.json (the demo's and the embedded trainers' models: the "
                        "bare problem, as they were trained), else the preset's ("
                        + _preset_help("instruction").removeprefix("default: the preset's ("))
    p.add_argument("--save-every", type=int, default=DEFAULT_SAVE_EVERY,
                   help="problems generated and graded between two saves of a benchmark's finished samples (what a "
                        "killed run resumes from; the samples do not depend on it) (default: %(default)s)")
    p.add_argument("--overwrite", action="store_true",
                   help="start over the benchmarks whose outputs exist with another config or preset")
