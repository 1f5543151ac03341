"""Benchmark: solo vs tandem rollout throughput on one engine, measured side by side.

Builds two tiny zoo models (untrained weights; EOS is disabled so every response runs
its full budget), then times `TandemEngine.generate` in each mode on the same prompts:
`solo` (senior alone), `lockstep` and `lazy` (see tandem/engine.py), for each batch
size, response length and strategy. Every configuration is timed `--repeats` times,
alternating modes, and the median is kept. Writes JSON (a list `runs` plus ratios) and
optionally a PNG.

    python scripts/bench_rollout.py --out bench_rollout.json            # full matrix
    python scripts/bench_rollout.py --quick --out bench_rollout.json    # one small config
"""

from __future__ import annotations

import argparse
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch

from tandem.config import TandemConfig
from tandem.engine import TandemEngine
from tandem.jsonl import write_json
from tandem.models import load_model, load_tokenizer
from tandem.sampling import SamplingConfig
from tandem.zoo import build_tiny

STRATEGIES = {"word": TandemConfig(selection_strategy="word", prob_senior=0.5, max_gap_tokens=32),
              "step": TandemConfig(selection_strategy="step", first_author="senior")}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path, help="JSON output path")
    p.add_argument("--plot", type=Path, help="optional PNG of tokens/s per configuration")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 16, 64], help="batch sizes (default 1 16 64)")
    p.add_argument("--lengths", type=int, nargs="+", default=[128, 512], help="response lengths (default 128 512)")
    p.add_argument("--strategies", nargs="+", default=["word", "step"], choices=list(STRATEGIES))
    p.add_argument("--modes", nargs="+", default=["lockstep", "lazy"], choices=["lockstep", "lazy"])
    p.add_argument("--repeats", type=int, default=3, help="timings per configuration; the median is kept")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--quick", action="store_true", help="batch 16, length 128, word only, 2 repeats")
    return p.parse_args()


def timed(engine, prompts, sampling, solo):
    start = time.perf_counter()
    out = engine.generate(prompts, sampling, request_keys=list(range(len(prompts))), solo=solo)
    elapsed = time.perf_counter() - start
    tokens = sum(len(r.token_ids) for r in out)
    return elapsed, tokens, engine.last_forward_calls


def bench(models, tok, batch, length, strategy, modes, repeats):
    senior, junior = models
    prompt = tok("Mia has 23 apples. She gets 12 more apples. How many apples does Mia have now?")["input_ids"]
    prompts = [prompt] * batch
    sampling = SamplingConfig(temperature=0.6, max_new_tokens=length, eos_token_ids=(), seed=0)
    engines = {"solo": TandemEngine(senior, None, tok)}
    for mode in modes:
        engines[mode] = TandemEngine(senior, junior, tok, STRATEGIES[strategy], mode=mode)
    samples = {name: [] for name in engines}
    for _ in range(repeats):  # alternate modes so drift in machine load hits all alike
        for name, engine in engines.items():
            samples[name].append(timed(engine, prompts, sampling, solo=name == "solo"))
    runs = []
    for name, rows in samples.items():
        elapsed = statistics.median(r[0] for r in rows)
        tokens, calls = rows[0][1], rows[0][2]
        runs.append({"mode": name, "strategy": strategy if name != "solo" else None, "batch": batch,
                     "max_new_tokens": length, "tokens": tokens, "seconds": round(elapsed, 4),
                     "tokens_per_s": round(tokens / elapsed, 1),
                     "forward_calls": calls, "forward_calls_per_token": round(calls / tokens, 4)})
    return runs


def ratios(runs):
    out = {}
    for r in runs:
        if r["mode"] == "solo":
            continue
        solo = next(s for s in runs if s["mode"] == "solo" and s["batch"] == r["batch"]
                    and s["max_new_tokens"] == r["max_new_tokens"])
        out[f'{r["mode"]}/{r["strategy"]}/b{r["batch"]}/t{r["max_new_tokens"]}'] = round(
            r["tokens_per_s"] / solo["tokens_per_s"], 3)
    return out


def plot(runs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = sorted({(r["batch"], r["max_new_tokens"]) for r in runs})
    series = sorted({(r["mode"], r["strategy"]) for r in runs}, key=lambda s: (s[0] != "solo", s))
    fig, ax = plt.subplots(figsize=(max(6, 1.6 * len(labels)), 4))
    width = 0.8 / len(series)
    for i, (mode, strat) in enumerate(series):
        ys = [next((r["tokens_per_s"] for r in runs if (r["batch"], r["max_new_tokens"]) == lab
                    and r["mode"] == mode and r["strategy"] == strat), 0) for lab in labels]
        ax.bar([j + i * width for j in range(len(labels))], ys, width, label=mode if strat is None else f"{mode} ({strat})")
    ax.set_xticks([j + 0.4 - width / 2 for j in range(len(labels))], [f"B={b}, T={t}" for b, t in labels])
    ax.set_ylabel("tokens / s")
    ax.set_title("Rollout throughput on the tiny zoo model")
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def main():
    args = parse_args()
    if args.quick:
        args.batches, args.lengths, args.strategies, args.repeats = [16], [128], ["word"], 2
    torch.set_num_threads(args.threads)
    with tempfile.TemporaryDirectory() as tmp:
        paths = [build_tiny(Path(tmp) / f"s{s}", seed=s) for s in (0, 1)]
        tok = load_tokenizer(paths[0])
        models = [load_model(p, "float32", args.device) for p in paths]
        runs = []
        for batch in args.batches:
            for length in args.lengths:
                for strategy in args.strategies:
                    new = bench(models, tok, batch, length, strategy, args.modes, args.repeats)
                    runs += [r for r in new if r["mode"] != "solo" or not any(
                        x["mode"] == "solo" and x["batch"] == batch and x["max_new_tokens"] == length for x in runs)]
                    for r in new:
                        print(f'{r["mode"]:>8} {r["strategy"] or "":>5} B={batch:<3} T={length:<4} '
                              f'{r["tokens_per_s"]:>9.1f} tok/s  {r["forward_calls_per_token"]:.4f} calls/token')
    rat = ratios(runs)
    tandem = [r for r in runs if r["mode"] != "solo"]
    best = {}
    for r in tandem:
        key = (r["strategy"], r["batch"], r["max_new_tokens"])
        best[key] = max(best.get(key, 0), rat[f'{r["mode"]}/{r["strategy"]}/b{r["batch"]}/t{r["max_new_tokens"]}'])
    result = {
        "machine": {"platform": platform.platform(), "torch": torch.__version__, "threads": args.threads,
                    "device": args.device},
        "model": "tiny zoo Qwen3 (~0.85M params), float32, untrained weights, EOS disabled",
        "runs": runs,
        "ratios_over_solo": rat,
        # The headline: the median over configurations of the best tandem mode's tokens/s over solo.
        "ratio_tandem_over_solo": round(statistics.median(best.values()), 3),
    }
    write_json(args.out, result)
    if args.plot:
        plot(runs, args.plot)
    print(f"ratio_tandem_over_solo (median over configs of the best mode) = {result['ratio_tandem_over_solo']}")


if __name__ == "__main__":
    main()
