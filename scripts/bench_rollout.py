"""Benchmark: solo vs tandem rollout throughput on one engine, measured side by side.

Builds two tiny zoo models (untrained weights, identical configs; EOS is disabled so
every response runs its full budget), then times `TandemEngine.generate` in each mode on
the same prompts: `solo` (senior alone), `paired`, `lockstep` and `lazy` (see
tandem/reference/engine.py), for each batch size, response length and strategy. Every
configuration is timed `--repeats` times, alternating modes so drift in machine load
hits all alike, and the median is kept. Each tandem record carries its ratio over the
solo run timed beside it. Besides wall-clock tokens/s it records tokens per second of
process CPU time, which is steadier on a shared machine. Writes JSON (a list `runs`
plus ratios) and optionally a PNG.

    python scripts/bench_rollout.py --out bench_rollout.json            # full matrix
    python scripts/bench_rollout.py --quick --out bench_rollout.json    # one small config
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path

import torch

from tandem.process.config import ENGINE_MODES, TandemConfig
from tandem.io.jsonl import write_json
from tandem.models.loading import load_model, load_tokenizer
from tandem.rollout.sampling import SamplingConfig
from tandem_app.zoo import build_tiny
from tandem_backends.registry import build_backend

CONCRETE = tuple(m for m in ENGINE_MODES if m != "auto")
STRATEGIES = {"word": TandemConfig(selection_strategy="word", prob_senior=0.5, max_gap_tokens=32),
              "step": TandemConfig(selection_strategy="step", first_author="senior")}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path, help="JSON output path")
    p.add_argument("--plot", type=Path, help="optional PNG of tokens/s per configuration")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 16, 64], help="batch sizes (default 1 16 64)")
    p.add_argument("--lengths", type=int, nargs="+", default=[128, 512], help="response lengths (default 128 512)")
    p.add_argument("--strategies", nargs="+", default=["word", "step"], choices=list(STRATEGIES))
    p.add_argument("--modes", nargs="+", default=list(CONCRETE), choices=list(CONCRETE),
                   help="tandem modes to time (default all; `auto` is recorded as the mode it picks)")
    p.add_argument("--repeats", type=int, default=3, help="timings per configuration; the median is kept")
    p.add_argument("--threads", type=int, default=1, help="torch intra-op threads (default 1)")
    p.add_argument("--device", default="cpu")
    p.add_argument("--quick", action="store_true", help="batch 16, length 128, word only, 2 repeats")
    return p.parse_args()


def timed(engine, prompts, sampling, solo):
    start, cpu = time.perf_counter(), time.process_time()
    out = engine.generate(prompts, sampling, request_keys=list(range(len(prompts))), solo=solo)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    tokens = sum(len(r.token_ids) for r in out)
    return elapsed, tokens, engine.last_forward_calls, cpu


def bench(models, tok, batch, length, strategy, modes, repeats):
    senior, junior = models
    prompt = tok("Mia has 23 apples. She gets 12 more apples. How many apples does Mia have now?")["input_ids"]
    prompts = [prompt] * batch
    sampling = SamplingConfig(temperature=0.6, max_new_tokens=length, eos_token_ids=(), seed=0)
    engines = {"solo": build_backend("engine", senior, tokenizer=tok)}
    for mode in modes:
        engines[mode] = build_backend("engine", senior, junior, STRATEGIES[strategy], tokenizer=tok, mode=mode)
    samples = {name: [] for name in engines}
    for _ in range(repeats):  # alternate modes so drift in machine load hits all alike
        for name, engine in engines.items():
            samples[name].append(timed(engine, prompts, sampling, solo=name == "solo"))
    runs = []
    for name, rows in samples.items():
        elapsed, cpu = statistics.median(r[0] for r in rows), statistics.median(r[3] for r in rows)
        tokens, calls = rows[0][1], rows[0][2]
        runs.append({"mode": name, "strategy": strategy if name != "solo" else None, "batch": batch,
                     "max_new_tokens": length, "tokens": tokens, "seconds": round(elapsed, 4),
                     "tokens_per_s": round(tokens / elapsed, 1), "cpu_tokens_per_s": round(tokens / cpu, 1),
                     "forward_calls": calls, "forward_calls_per_token": round(calls / tokens, 4)})
    auto = build_backend("engine", senior, junior, STRATEGIES[strategy], tokenizer=tok).decoding_mode(batch)
    for r in runs[1:]:
        r["auto_picks"] = r["mode"] == auto  # the engine default (`auto`) decodes this configuration so
    solo = runs[0]
    solo["timed_with"] = strategy  # solo is timed again beside each strategy's modes
    for r in runs[1:]:  # against the solo run timed beside it
        r["ratio_over_solo"] = round(r["tokens_per_s"] / solo["tokens_per_s"], 3)
        r["cpu_ratio_over_solo"] = round(r["cpu_tokens_per_s"] / solo["cpu_tokens_per_s"], 3)
    return runs


def ratios(runs):
    return {f'{r["mode"]}/{r["strategy"]}/b{r["batch"]}/t{r["max_new_tokens"]}': r["ratio_over_solo"]
            for r in runs if r["mode"] != "solo"}


def plot(runs, path):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    labels = sorted({(r["batch"], r["max_new_tokens"]) for r in runs})
    series = sorted({(r["mode"], r["strategy"]) for r in runs}, key=lambda s: (s[0] != "solo", s))
    fig, (top, bottom) = plt.subplots(2, 1, figsize=(max(7, 2.0 * len(labels)), 7), sharex=True)
    width = 0.8 / len(series)
    for i, (mode, strat) in enumerate(series):
        def at(lab, key):
            return next((r.get(key, 1.0) for r in runs if (r["batch"], r["max_new_tokens"]) == lab
                         and r["mode"] == mode and r["strategy"] == strat), 0)

        xs = [j + i * width for j in range(len(labels))]
        name = mode if strat is None else f"{mode} ({strat})"
        top.bar(xs, [at(lab, "tokens_per_s") for lab in labels], width, label=name, color=f"C{i}")
        if mode != "solo":
            bottom.bar(xs, [at(lab, "ratio_over_solo") for lab in labels], width, label=name, color=f"C{i}")
    bottom.axhline(0.85, color="k", linestyle="--", linewidth=1, label="target 0.85")
    bottom.set_xticks([j + 0.4 - width / 2 for j in range(len(labels))], [f"B={b}, T={t}" for b, t in labels])
    top.set_yscale("log")
    top.set_ylabel("tokens / s (log)")
    bottom.set_ylabel("tokens/s over solo")
    top.set_title("Rollout throughput on the tiny zoo model (1 CPU thread)")
    top.legend(fontsize=7, ncol=2)
    bottom.legend(fontsize=7, ncol=2)
    fig.tight_layout()
    fig.savefig(path, dpi=120)


def machine(args, load_before) -> dict:
    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    return {"platform": platform.platform(), "cpu": cpu, "cores": os.cpu_count(), "torch": torch.__version__,
            "threads": args.threads, "device": args.device,
            "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)]}


def main():
    args = parse_args()
    if args.quick:
        args.batches, args.lengths, args.strategies, args.repeats = [16], [128], ["word"], 2
    torch.set_num_threads(args.threads)
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        paths = [build_tiny(Path(tmp) / f"s{s}", seed=s) for s in (0, 1)]
        tok = load_tokenizer(paths[0])
        models = [load_model(p, "float32", args.device) for p in paths]
        runs = []
        for batch in args.batches:
            for length in args.lengths:
                for strategy in args.strategies:
                    new = bench(models, tok, batch, length, strategy, args.modes, args.repeats)
                    runs += new
                    for r in new:
                        print(f'{r["mode"]:>8} {r["strategy"] or "":>5} B={batch:<3} T={length:<4} '
                              f'{r["tokens_per_s"]:>9.1f} tok/s (x{r.get("ratio_over_solo", 1):.2f})  '
                              f'cpu {r["cpu_tokens_per_s"]:>9.1f} tok/s (x{r.get("cpu_ratio_over_solo", 1):.2f})  '
                              f'{r["forward_calls_per_token"]:.4f} calls/token', flush=True)
    rat = ratios(runs)
    tandem = [r for r in runs if r["mode"] != "solo"]
    best = {}
    for r in tandem:
        key = (r["strategy"], r["batch"], r["max_new_tokens"])
        best[key] = max(best.get(key, 0), rat[f'{r["mode"]}/{r["strategy"]}/b{r["batch"]}/t{r["max_new_tokens"]}'])
    result = {
        "machine": machine(args, load_before),
        "model": "tiny zoo Qwen3 (~0.85M params), float32, untrained weights, EOS disabled",
        "runs": runs,
        "ratios_over_solo": rat,
        # The headline: the median over configurations of the best tandem mode's tokens/s over solo.
        "ratio_tandem_over_solo": round(statistics.median(best.values()), 3),
    }
    picked = [r["ratio_over_solo"] for r in tandem if r.get("auto_picks")]
    if picked:  # the same median for the mode the engine default (`auto`) decodes with
        result["ratio_default_over_solo"] = round(statistics.median(picked), 3)
    write_json(args.out, result)
    if args.plot:
        plot(runs, args.plot)
    print(f"ratio_tandem_over_solo (median over configs of the best mode) = {result['ratio_tandem_over_solo']}")


if __name__ == "__main__":
    main()
