"""Benchmark: solo vs tandem generation throughput on vLLM, measured side by side.

Runs wherever vLLM runs (vLLM's CPU build in the scale venv, or a GPU). Builds two tiny
zoo models (untrained weights, identical configs; EOS ignored so every response runs
its full budget) and times `vllm.LLM.generate` on the same prompts: `solo` (the senior's
own engine) and `tandem` (the tandem engine, `vllm_source`, word strategy, p = 0.5), for
each batch size and response length. Every configuration is timed `--repeats` times,
alternating engines so drift in machine load hits both alike, and the median is kept.
The JSON has the shape of `bench_rollout.py`'s (a list `runs` plus ratios over solo).

With `--handoff-base DIR` (a tiny base from `python -m tandem.train.tiny_base`, which
writes reasoning steps) it also times the evaluation's two vLLM handoff routes
(`tandem_eval/backends.py`): one tandem engine vs two engines taking turns.

    .venv-scale/bin/python scripts/bench_vllm.py --out bench_vllm.json
    .venv-scale/bin/python scripts/bench_vllm.py --quick --out bench_vllm.json
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import tempfile
import time
from pathlib import Path


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path, help="JSON output path")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 16, 64], help="batch sizes (default 1 16 64)")
    p.add_argument("--lengths", type=int, nargs="+", default=[128], help="response lengths (default 128)")
    p.add_argument("--repeats", type=int, default=3, help="timings per configuration; the median is kept")
    p.add_argument("--handoff-base", type=Path, default=None,
                   help="a tiny base dir (tandem.train.tiny_base): also time the eval's two handoff routes")
    p.add_argument("--handoff-prompts", type=int, default=32, help="problems for the handoff timing (default 32)")
    p.add_argument("--quick", action="store_true", help="batch 16, length 64, 2 repeats")
    return p.parse_args()


def engine_kwargs() -> dict:
    from vllm_source.runtime import vllm_platform

    kwargs = dict(dtype="float32", max_model_len=1024, seed=0)
    if vllm_platform() != "cpu":
        kwargs["gpu_memory_utilization"] = 0.3
    return kwargs


def timed_generate(llm, prompts, params) -> tuple[float, int, float]:
    start, cpu = time.perf_counter(), time.process_time()
    outs = llm.generate(prompts, params, use_tqdm=False)
    elapsed, cpu = time.perf_counter() - start, time.process_time() - cpu
    return elapsed, sum(len(o.outputs[0].token_ids) for o in outs), cpu


def rollout_runs(paths, tok, batches, lengths, repeats) -> list[dict]:
    """Solo and tandem engines on the same prompts; one record per (engine, batch, length)."""
    import vllm

    from tandem.config import TandemConfig
    from tandem.coins import request_key
    from vllm_source.engine import make_llm
    from vllm_source.requests import tandem_extra_args

    cfg = TandemConfig(selection_strategy="word", prob_senior=0.5, max_gap_tokens=32, junior_model=str(paths[1]))
    from vllm_source.compat import engine_defaults

    engines = {"solo": vllm.LLM(model=str(paths[0]), enforce_eager=True, **engine_defaults(), **engine_kwargs()),
               "tandem": make_llm(cfg, str(paths[0]), **engine_kwargs())}
    prompt = tok("Mia has 23 apples. She gets 12 more apples. How many apples does Mia have now?")["input_ids"]
    runs = []
    for batch in batches:
        for length in lengths:
            prompts = [{"prompt_token_ids": list(prompt)}] * batch
            samples = {name: [] for name in engines}
            for _ in range(repeats):
                for name, llm in engines.items():
                    params = [vllm.SamplingParams(temperature=0.6, max_tokens=length, ignore_eos=True, seed=i,
                                                  extra_args=tandem_extra_args(request_key("bench", i)))
                              for i in range(batch)]
                    samples[name].append(timed_generate(llm, prompts, params))
            rows = []
            for name, timings in samples.items():
                elapsed, cpu = statistics.median(t[0] for t in timings), statistics.median(t[2] for t in timings)
                tokens = timings[0][1]
                rows.append({"mode": f"vllm-{name}", "strategy": "word" if name == "tandem" else None,
                             "batch": batch, "max_new_tokens": length, "tokens": tokens,
                             "seconds": round(elapsed, 4), "tokens_per_s": round(tokens / elapsed, 1),
                             "cpu_tokens_per_s": round(tokens / cpu, 1) if cpu else None})
            rows[1]["ratio_over_solo"] = round(rows[1]["tokens_per_s"] / rows[0]["tokens_per_s"], 3)
            runs += rows
            print(f"B={batch:<3} T={length:<4} solo {rows[0]['tokens_per_s']:>8.1f} tok/s  tandem "
                  f"{rows[1]['tokens_per_s']:>8.1f} tok/s  (x{rows[1]['ratio_over_solo']:.3f})", flush=True)
    del engines
    gc.collect()
    return runs


def handoff_runs(base: Path, n_prompts: int, repeats: int) -> list[dict]:
    """The eval's handoff on vLLM: one tandem engine vs two engines taking turns (same samples)."""
    import json

    from tandem.coins import request_key
    from tandem_eval.backends import EvalSampling, make_backend

    rows = [json.loads(line) for line in (base / "task_test.jsonl").read_text().splitlines()[:n_prompts]]
    sampling = EvalSampling(temperature=0.7, top_p=0.8, top_k=20, max_new_tokens=96)
    backends = {route: make_backend("vllm", base / "model", base / "model", sampling, dtype="float32",
                                    handoff_route=route) for route in ("tandem", "two-engine")}
    from tandem_eval.prompts import chat_prompt_ids

    tok = backends["tandem"].tokenizer
    prompts = [chat_prompt_ids(tok, r["problem"], "") for r in rows]
    keys = [request_key("bench", i) for i in range(len(prompts))]
    samples = {route: [] for route in backends}
    for backend in backends.values():  # warm-up: engines are built on first use
        backend.handoff(prompts[:2], keys[:2])
    for _ in range(repeats):
        for route, backend in backends.items():
            start = time.perf_counter()
            out = backend.handoff(prompts, keys)
            elapsed = time.perf_counter() - start
            samples[route].append((elapsed, sum(len(s.token_ids) for s in out),
                                   sum(s.num_handoffs for s in out) / len(out)))
    runs = []
    for route, timings in samples.items():
        elapsed, tokens = statistics.median(t[0] for t in timings), timings[0][1]
        runs.append({"route": route, "prompts": len(prompts), "tokens": tokens, "seconds": round(elapsed, 3),
                     "tokens_per_s": round(tokens / elapsed, 1), "mean_handoffs": round(timings[0][2], 2)})
    runs[1]["ratio_over_tandem"] = round(runs[1]["tokens_per_s"] / runs[0]["tokens_per_s"], 3)
    print(f"handoff: tandem engine {runs[0]['tokens_per_s']} tok/s, two engines {runs[1]['tokens_per_s']} tok/s "
          f"(x{runs[1]['ratio_over_tandem']}), {runs[0]['mean_handoffs']} handoffs per response", flush=True)
    return runs


def machine(load_before) -> dict:
    import torch
    import vllm

    from vllm_source.runtime import vllm_platform

    cpu = next((line.split(":", 1)[1].strip() for line in Path("/proc/cpuinfo").read_text().splitlines()
                if line.startswith("model name")), platform.processor()) if Path("/proc/cpuinfo").exists() else ""
    return {"platform": platform.platform(), "cpu": cpu, "cores": os.cpu_count(), "torch": torch.__version__,
            "vllm": vllm.__version__, "vllm_platform": vllm_platform(),
            "load_average_before_after": [round(load_before[0], 2), round(os.getloadavg()[0], 2)]}


def main():
    args = parse_args()
    if args.quick:
        args.batches, args.lengths, args.repeats = [16], [64], 2
    os.environ.setdefault("VLLM_ENABLE_V1_MULTIPROCESSING", "0")  # both engines in this process
    os.environ.setdefault("VLLM_CPU_KVCACHE_SPACE", "1")
    os.environ.setdefault("VLLM_CPU_OMP_THREADS_BIND", "nobind")
    os.environ.setdefault("OMP_NUM_THREADS", "1")  # unset, vLLM CPU ran 30-40x slower here (PERFORMANCE.md)
    from tandem.jsonl import write_json
    from tandem.models import load_tokenizer
    from tandem.zoo import build_tiny

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        paths = [build_tiny(Path(tmp) / f"s{s}", seed=s) for s in (0, 1)]
        runs = rollout_runs(paths, load_tokenizer(paths[0]), args.batches, args.lengths, args.repeats)
    ratios = {f'b{r["batch"]}/t{r["max_new_tokens"]}': r["ratio_over_solo"] for r in runs if "ratio_over_solo" in r}
    result = {
        "machine": machine(load_before),
        "model": "tiny zoo Qwen3 (~0.85M params), float32, untrained weights, EOS ignored; vLLM in-process, eager",
        "runs": runs,
        "ratios_over_solo": ratios,
        "ratio_tandem_over_solo": round(statistics.median(ratios.values()), 3),
    }
    if args.handoff_base:
        result["handoff"] = handoff_runs(args.handoff_base, args.handoff_prompts, args.repeats)
    write_json(args.out, result)
    print(f"ratio_tandem_over_solo (median over configs) = {result['ratio_tandem_over_solo']}")


if __name__ == "__main__":
    main()
