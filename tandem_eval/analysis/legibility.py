"""Legibility (the junior reading the senior) and drift (the senior's token usage vs the junior's).

- legibility: the junior's cross-entropy on the senior's responses, by teacher forcing
  with an HF causal LM. Per response: the mean over its tokens (the end-of-sequence token
  included) of -ln p_junior(token | prompt, earlier response tokens), in nats. Reported:
  `mean_ce` = the mean of those per-response means, and `token_mean_ce` = all tokens pooled.
  Lower = more legible to the junior. Responses longer than the junior's context are dropped
  and counted. The junior reads the senior's own token ids, so it must share its tokenizer.
- drift: the Jensen-Shannon divergence, base 2 (bits, in [0, 1]), between the unigram
  token distributions of the senior's and the junior's responses to the same problems
  (problem ids present in both). Special tokens are not counted. Also the tokens whose
  frequency moved most (`top_shifts`).

Inputs are the per-sample JSONL files of `eval_solo` (a file or an output directory).
See model_spec/SPEC.md §11 for the definitions in prose.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from tandem.errors import TandemError
from tandem.io.jsonl import read_json, read_jsonl, write_json
from tandem.metrics import junior_cross_entropy, js_divergence, top_shifts, unigram_counts
from tandem.models.threads import apply_threads, check_threads
from tandem_eval.core import tool


def read_samples(path: str | Path) -> list[dict]:
    """Rows of one `*.samples.jsonl` file or of every such file in an eval output directory."""
    path = Path(path)
    files = sorted(path.glob("*.samples.jsonl")) if path.is_dir() else [path]
    if not files or not files[0].exists():
        raise TandemError(f"{path}: no *.samples.jsonl there; pass an eval_solo output directory or samples file")
    rows = [r for f in files for r in read_jsonl(f, required=("problem_id", "benchmark", "response_ids"))]
    if not rows:
        raise TandemError(f"{path}: no samples in it; pass the output of an eval_solo run that finished")
    return rows


def legibility(junior_path: str, senior_rows: list[dict], batch_size: int, device: str, dtype: str,
               max_per_problem: int | None, preset: str = "ours") -> dict:
    from tandem.models.loading import load_model, load_tokenizer
    from tandem_eval.core.presets import get_preset

    rules = get_preset(preset)
    rows = [r for r in senior_rows if max_per_problem is None or r.get("sample", 0) < max_per_problem]
    if any("prompt_ids" not in r for r in rows):
        raise TandemError("samples lack prompt_ids; re-run eval_solo with this version to record them")
    model = load_model(junior_path, dtype=dtype, device=device)
    vocab = model.get_output_embeddings().out_features
    if max(max(r["prompt_ids"] + r["response_ids"], default=0) for r in rows) >= vocab:
        raise TandemError(f"the samples hold token ids beyond the junior's {vocab}-token vocabulary; "
                          "the junior must share the senior's tokenizer")
    pairs = [(r["prompt_ids"], r["response_ids"]) for r in rows]
    too_long = [False] * len(pairs)
    if rules.context_length is not None:  # the paper preset: the release's scoring rules
        special = set(load_tokenizer(junior_path).all_special_ids)
        pairs = [(p, resp[:-1] if resp and resp[-1] in special else resp) for p, resp in pairs]
        limit = rules.context_length - rules.context_reserve
        too_long = [len(p) + len(resp) >= limit for p, resp in pairs]
    scored = junior_cross_entropy(model, [([], []) if long else pair for pair, long in zip(pairs, too_long)],
                                  batch_size)
    kept = [(r, s) for r, s in zip(rows, scored) if s is not None]
    if not kept:
        raise TandemError("no response could be scored (all empty or longer than the junior's context)")
    by_bench: dict[str, list[float]] = {}
    for r, s in kept:
        by_bench.setdefault(r["benchmark"], []).append(s.nll_sum / s.n_tokens)
    means = [v for vs in by_bench.values() for v in vs]
    return {
        "junior": junior_path, "preset": rules.name, "mean_ce": sum(means) / len(means),
        "macro_ce": sum(sum(v) / len(v) for v in by_bench.values()) / len(by_bench),
        "token_mean_ce": sum(s.nll_sum for _, s in kept) / sum(s.n_tokens for _, s in kept),
        "by_benchmark": {b: sum(v) / len(v) for b, v in by_bench.items()},
        "n_scored": len(kept), "n_dropped": len(rows) - len(kept), "unit": "nats per token",
    }


def drift(senior_rows: list[dict], junior_rows: list[dict], tokenizer=None, k: int = 20) -> dict:
    common = {(r["benchmark"], r["problem_id"]) for r in senior_rows} & {(r["benchmark"], r["problem_id"]) for r in junior_rows}
    if not common:
        raise TandemError("the senior's and the junior's samples share no problem; evaluate both on the same benchmarks")
    special = getattr(tokenizer, "all_special_ids", []) if tokenizer is not None else []

    def responses(rows):
        return [r["response_ids"] for r in rows if (r["benchmark"], r["problem_id"]) in common]

    p, q = unigram_counts(responses(senior_rows), special), unigram_counts(responses(junior_rows), special)
    return {"js_bits": js_divergence(p, q), "n_problems": len(common), "senior_tokens": sum(p.values()),
            "junior_tokens": sum(q.values()), "top_shifts": top_shifts(p, q, k, tokenizer)}


DESCRIPTION = (
    "Legibility: the junior's mean per-token cross-entropy (nats) on the senior's responses. "
    "Drift: Jensen-Shannon divergence (bits) between the senior's and the junior's unigram token "
    "distributions on the same problems. Inputs are eval_solo outputs."
)


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("--senior-samples", required=True, help="eval_solo output directory (or one *.samples.jsonl) of the senior")
    p.add_argument("--junior", help="junior model directory: computes legibility")
    p.add_argument("--junior-samples", help="eval_solo outputs of the junior on the same problems: computes drift")
    p.add_argument("--tokenizer", help="tokenizer for drift's token strings and special ids (default: --junior)")
    p.add_argument("--out", required=True, type=Path, help="JSON file to write")
    p.add_argument("--max-per-problem", type=int, default=None, help="score only the first N samples of each problem")
    p.add_argument("--top-k", type=int, default=20, help="how many token frequency shifts to list (default: %(default)s)")
    p.add_argument("--batch-size", type=int, default=8, help="responses per forward pass (default: %(default)s)")
    p.add_argument("--device", default="cpu", help="cpu or cuda[:i] (default: %(default)s)")
    p.add_argument("--dtype", default="float32", help="junior dtype: float32, bfloat16, float16 (default: %(default)s)")
    p.add_argument("--threads", type=int, default=0, help="torch CPU threads; 0 = auto: 1 for a small junior "
                   "(tandem/models/threads.py) (default: %(default)s)")
    p.add_argument("--preset", choices=("ours", "paper"), default="ours",
                   help="scoring rules: ours (every response token, EOS included) or paper (the release's: no EOS, "
                        "responses reaching 4096 - 8 tokens with their prompt dropped) (default: %(default)s)")


def check_args(args) -> None:
    """Every flag before any sample is read or model loaded: what to compute, counts in range, a device and
    dtype torch has, models and a tokenizer that are there, an --out that can be written."""
    from tandem.models.devices import check_device
    from tandem.models.loading import TOKENIZER_FILES, check_model_path, resolve_dtype
    from tandem.io.run_lock import check_out_file

    if not args.junior and not args.junior_samples:
        raise TandemError("nothing to compute; pass --junior (legibility) and/or --junior-samples (drift)")
    if args.batch_size < 1:
        raise TandemError(f"--batch-size must be >= 1, got {args.batch_size}")
    if args.max_per_problem is not None and args.max_per_problem < 1:
        raise TandemError(f"--max-per-problem must be >= 1 (leave it out to score every sample), got "
                          f"{args.max_per_problem}")
    if args.top_k < 0:
        raise TandemError(f"--top-k must be >= 0, got {args.top_k}")
    check_device(args.device, "--device")
    resolve_dtype(args.dtype)
    if args.junior:
        check_model_path(args.junior, what="junior model")
    if args.junior_samples and (args.tokenizer or args.junior):
        check_model_path(args.tokenizer or args.junior, TOKENIZER_FILES, "tokenizer")
    check_out_file(args.out)


def run(args) -> int:
    check_args(args)
    senior_rows = read_samples(args.senior_samples)
    result: dict = {"senior_samples": str(args.senior_samples)}
    summary = Path(args.senior_samples) / "summary.json"
    if summary.is_file():  # carry the generation config (model, sampling) into this output
        result["senior_config"] = read_json(summary, "re-run eval_solo, which writes it").get("config")
    if args.junior:
        check_threads(args.threads)
        apply_threads(args.threads, [args.junior])
        result["legibility"] = legibility(args.junior, senior_rows, args.batch_size, args.device, args.dtype,
                                          args.max_per_problem, args.preset)
        print(f"legibility: mean CE {result['legibility']['mean_ce']:.4f} nats/token")
    if args.junior_samples:
        tok_path = args.tokenizer or args.junior
        tokenizer = None
        if tok_path:
            from tandem.models.loading import load_tokenizer

            tokenizer = load_tokenizer(tok_path)
        result["drift"] = drift(senior_rows, read_samples(args.junior_samples), tokenizer, args.top_k)
        print(f"drift: JS {result['drift']['js_bits']:.4f} bits")
    write_json(args.out, result)
    print(f"wrote {args.out}")
    return 0


main = tool.entry(__name__)  # main(argv=None) -> exit status: parse, run, one-line errors


if __name__ == "__main__":
    sys.exit(main())
