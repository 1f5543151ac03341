"""Benchmark: solo vs tandem generation on vLLM, measured side by side.

Runs wherever vLLM runs (vLLM's CPU build in the scale venv, or a GPU). Builds two zoo
models (untrained weights; EOS ignored so every response runs its full budget) and times
`vllm.LLM.generate` on the same prompts for each placement. The junior has the senior's shape,
or with `--junior-size half` half its layers and half its query heads (KV heads and head size
kept, as between Qwen3-0.6B and Qwen3-4B): about half its parameters, `split` only.

- `solo`: the senior's own engine (always run: the baseline);
- `shared`: the tandem engine with both models on the device (`vllm_source/model.py`);
- `split`: the tandem engine on two tensor-parallel ranks, the senior on rank 0 and the
  junior on rank 1 (`vllm_source/split.py`); on a CPU each rank is a process on its own
  core, solo and shared run on one core (`OMP_NUM_THREADS=1`: one thread per model).

Word strategy, p = 0.5. Every configuration is timed `--repeats` times, alternating
engines so drift in machine load hits all alike, and the median is kept. One JSON record
per (placement, batch, length) with `placement`, `batch`, `tokens_per_s`, `ms_per_step`
(wall time over decode steps) and the ratios over solo.

With `--handoff-base DIR` (a tiny base from `python -m tandem_app.train.tiny_base`, which
writes reasoning steps) it also times the evaluation's two vLLM handoff routes
(`tandem_eval/core/backends.py`): one tandem engine vs two engines taking turns.

    .venv-scale/bin/python scripts/bench_vllm.py --out bench_vllm.json
    .venv-scale/bin/python scripts/bench_vllm.py --placement shared,split --size small --lengths 32 --out FILE.json
    .venv-scale/bin/python scripts/bench_vllm.py --placement split --size small --junior-size half --out FILE.json
"""

from __future__ import annotations

import argparse
import gc
import math
import os
import platform
import statistics
import tempfile
import time
from dataclasses import asdict
from pathlib import Path


PLACEMENTS = ("shared", "split")
JUNIOR_SIZES = ("same", "half")
IDLE_S = 1.5  # pause before each timed run: vLLM's worker processes busy-poll for 1 s after their last step
# Zoo model shapes (tandem_app.zoo.TinyModelConfig fields); "tiny" is the zoo's default.
SIZES = {
    "tiny": {},
    "small": dict(hidden_size=512, intermediate_size=1536, num_hidden_layers=8, num_attention_heads=8,
                  num_key_value_heads=4, head_dim=64),
}


def parse_args():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--out", required=True, type=Path, help="JSON output path")
    p.add_argument("--batches", type=int, nargs="+", default=[1, 16, 64], help="batch sizes (default 1 16 64)")
    p.add_argument("--lengths", type=int, nargs="+", default=[128], help="response lengths (default 128)")
    p.add_argument("--repeats", type=int, default=3, help="timings per configuration; the median is kept")
    p.add_argument("--handoff-base", type=Path, default=None,
                   help="a tiny base dir (tandem_app.train.tiny_base): also time the eval's two handoff routes")
    p.add_argument("--handoff-prompts", type=int, default=32, help="problems for the handoff timing (default 32)")
    p.add_argument("--placement", default="shared",
                   help="tandem placements to time beside solo, comma-separated: shared, split (default shared)")
    p.add_argument("--size", choices=sorted(SIZES), default="tiny",
                   help="model shape: tiny (~0.85M params, overhead-bound) or small (~27M, compute-bound on a CPU)")
    p.add_argument("--junior-size", choices=JUNIOR_SIZES, default="same",
                   help="same: the senior's shape; half: half its layers and query heads (needs --placement split)")
    p.add_argument("--quick", action="store_true", help="batch 16, length 64, 2 repeats")
    return p.parse_args()


def junior_shape(senior: dict, size: str) -> dict:
    """The junior's TinyModelConfig fields: the senior's, or half its layers and query heads."""
    if size == "same":
        return dict(senior)
    return {**senior, "num_hidden_layers": senior["num_hidden_layers"] // 2,
            "num_attention_heads": senior["num_attention_heads"] // 2}


def parameter_count(model_dir: Path) -> int:
    from safetensors import safe_open

    with safe_open(str(model_dir / "model.safetensors"), "pt") as f:
        return sum(math.prod(f.get_slice(name).get_shape()) for name in f.keys())


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


def make_engines(paths, placements):
    """{"solo": LLM, placement: LLM, ...}: the senior's own engine and one tandem engine per placement."""
    import vllm

    from tandem.process.config import TandemConfig
    from vllm_source.compat import engine_defaults
    from vllm_source.engine import make_llm

    engines = {"solo": vllm.LLM(model=str(paths[0]), enforce_eager=True, **engine_defaults(), **engine_kwargs())}
    if "split" in placements:  # solo with worker processes too: splits the executor's cost from the tandem's
        engines["solo-mp"] = vllm.LLM(model=str(paths[0]), enforce_eager=True, distributed_executor_backend="mp",
                                      **engine_defaults(), **engine_kwargs())
    for placement in placements:
        cfg = TandemConfig(selection_strategy="word", prob_senior=0.5, max_gap_tokens=32, junior_model=str(paths[1]),
                           placement=placement)
        engines[placement] = make_llm(cfg, str(paths[0]), **engine_kwargs())
    return engines


def rollout_runs(paths, tok, batches, lengths, repeats, placements) -> list[dict]:
    """Solo and tandem engines on the same prompts; one record per (placement, batch, length)."""
    import vllm

    from tandem.process.coins import request_key
    from vllm_source.requests import tandem_extra_args

    engines = make_engines(paths, placements)
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
                    time.sleep(IDLE_S)  # the last engine's worker processes stop polling (vLLM: 1 s busy loop)
                    samples[name].append(timed_generate(llm, prompts, params))
            rows = {}
            for name, timings in samples.items():
                elapsed, cpu = statistics.median(t[0] for t in timings), statistics.median(t[2] for t in timings)
                tokens = timings[0][1]
                rows[name] = {
                    "placement": name.split("-")[0], "executor": "mp" if name in ("split", "solo-mp") else "uni",
                    "mode": f"vllm-{'tandem' if name == 'shared' else name}",
                    "strategy": None if name.startswith("solo") else "word", "batch": batch,
                    "max_new_tokens": length, "tokens": tokens, "seconds": round(elapsed, 4),
                    "tokens_per_s": round(tokens / elapsed, 1), "ms_per_step": round(1000 * elapsed / length, 3),
                    "main_process_cpu_tokens_per_s": round(tokens / cpu, 1) if cpu else None}
            solo = rows["solo"]
            line = f"B={batch:<3} T={length:<4} solo {solo['tokens_per_s']:>8.1f} tok/s {solo['ms_per_step']:.2f} ms"
            for name in placements:
                r = rows[name]
                r["ratio_over_solo"] = round(r["tokens_per_s"] / solo["tokens_per_s"], 3)
                r["latency_over_solo"] = round(r["ms_per_step"] / solo["ms_per_step"], 3)
                line += f" | {name} {r['tokens_per_s']:>8.1f} tok/s (x{r['ratio_over_solo']:.3f})"
            if "solo-mp" in rows:
                split, solo_mp = rows["split"], rows["solo-mp"]
                split["latency_over_solo_mp"] = round(split["ms_per_step"] / solo_mp["ms_per_step"], 3)
                line += f" | solo-mp {rows['solo-mp']['ms_per_step']:.2f} ms/step"
            runs += rows.values()
            print(line, flush=True)
    del engines
    gc.collect()
    return runs


def handoff_runs(base: Path, n_prompts: int, repeats: int) -> list[dict]:
    """The eval's handoff on vLLM: one tandem engine vs two engines taking turns (same samples)."""
    import json

    from tandem.process.coins import request_key
    from tandem_eval.core.backends import EvalBackend
    from tandem_backends.settings import EngineSettings
    from tandem_eval.core.sampling import eval_sampling

    rows = [json.loads(line) for line in (base / "task_test.jsonl").read_text().splitlines()[:n_prompts]]
    sampling = eval_sampling(max_new_tokens=96)
    model = base / "model"
    backends = {route: EvalBackend(EngineSettings(model, model, backend="vllm", dtype="float32", vllm_handoff=route),
                                   sampling) for route in ("tandem", "two-engine")}
    from tandem_eval.core.prompts import chat_prompt_ids

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
    from tandem.io.jsonl import write_json
    from tandem.models.loading import load_tokenizer
    from tandem_app.zoo import build_tiny

    placements = [p.strip() for p in args.placement.split(",") if p.strip()]
    if not placements or any(p not in PLACEMENTS for p in placements):
        raise SystemExit(f"--placement {args.placement!r}: a comma-separated list of {', '.join(PLACEMENTS)}")
    if args.junior_size != "same" and placements != ["split"]:
        raise SystemExit(f"--junior-size {args.junior_size} needs --placement split: placement shared refuses a "
                         "junior with other head counts")
    from tandem_app.zoo import TinyModelConfig

    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as tmp:
        senior_shape = {**asdict(TinyModelConfig()), **SIZES[args.size]}
        shapes = [senior_shape, junior_shape(senior_shape, args.junior_size)]
        paths = [build_tiny(Path(tmp) / f"s{s}", seed=s, cfg=TinyModelConfig(**shape)) for s, shape in enumerate(shapes)]
        params = [parameter_count(path) for path in paths]
        print(f"senior {params[0]:,} parameters, junior {params[1]:,} ({params[1] / params[0]:.2f}x)", flush=True)
        runs = rollout_runs(paths, load_tokenizer(paths[0]), args.batches, args.lengths, args.repeats, placements)
    ratios = {p: {f'b{r["batch"]}/t{r["max_new_tokens"]}': r["ratio_over_solo"] for r in runs
                  if r["placement"] == p and "ratio_over_solo" in r} for p in placements}
    result = {
        "machine": machine(load_before),
        "model": f"zoo Qwen3 '{args.size}' {SIZES[args.size] or 'default shape'}, float32, untrained weights, "
                 "EOS ignored; eager; solo and shared in-process (executor uni), split on 2 worker processes "
                 "(executor mp); with split, solo also on 1 worker process (solo-mp)",
        "junior_size": args.junior_size,
        "junior_shape": shapes[1],
        "parameters": {"senior": params[0], "junior": params[1]},
        "runs": runs,
        "ratios_over_solo": ratios,
    }
    for p in placements:
        result[f"ratio_{'tandem' if p == 'shared' else p}_over_solo"] = round(statistics.median(ratios[p].values()), 3)
    if args.handoff_base:
        result["handoff"] = handoff_runs(args.handoff_base, args.handoff_prompts, args.repeats)
    write_json(args.out, result)
    for p in placements:
        key = f"ratio_{'tandem' if p == 'shared' else p}_over_solo"
        print(f"{key} (median over configs) = {result[key]}")


if __name__ == "__main__":
    main()
