"""One step of scripts/gpu_smoke.sh, run in its own process (the driver, scripts/gpu_smoke.py, gives it a
timeout and reads back the line `GPU_SMOKE_RESULT {json}` it prints last).

    python scripts/gpu_smoke_probe.py machine --device cuda
    python scripts/gpu_smoke_probe.py engine  --device cuda --work DIR   # CUDA vs CPU at fp32 (--device cpu: CPU half)
    python scripts/gpu_smoke_probe.py handoff --device cuda --work DIR   # eval-handoff at bf16 (cpu: fp32, tiny)
    python scripts/gpu_smoke_probe.py demo    --device cuda --work DIR   # the quick demo, SFT and RL on --device

Each result is {"passed": bool, "reason": str, ...details}. The models are the tiny zoo
(tandem_app/zoo.py), built once into DIR/zoo and reused by the later steps.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

MODES = ("paired", "lockstep", "lazy")  # the reference engine's decoding modes: the same tokens by design


def emit(result: dict) -> int:
    print("GPU_SMOKE_RESULT " + json.dumps(result), flush=True)
    return 0


def machine(args) -> dict:
    """The interpreter's torch, CUDA and GPU, and the versions of what the steps import."""
    import importlib.metadata as md
    import platform

    import torch

    out = {"python": platform.python_version(), "torch": torch.__version__, "torch_cuda": torch.version.cuda,
           "cuda_available": torch.cuda.is_available(), "device_count": torch.cuda.device_count(),
           "matmul_allow_tf32": torch.backends.cuda.matmul.allow_tf32,
           "float32_matmul_precision": torch.get_float32_matmul_precision()}
    for dist in ("numpy", "sympy", "transformers", "tokenizers", "safetensors", "huggingface-hub", "omegaconf",
                 "math-verify", "matplotlib", "tqdm", "pyyaml"):
        try:
            out[dist] = md.version(dist)
        except md.PackageNotFoundError:
            out[dist] = None
    if out["cuda_available"]:
        p = torch.cuda.get_device_properties(0)
        out.update(gpu=torch.cuda.get_device_name(0), capability=".".join(map(str, torch.cuda.get_device_capability(0))),
                   gpu_memory_gib=round(p.total_memory / 2**30, 1), multiprocessors=p.multi_processor_count)
        x = torch.ones(4, device="cuda")
        out["cuda_works"] = float((x * 2).sum().item()) == 8.0
    missing = [d for d in ("numpy", "transformers", "tokenizers", "omegaconf", "math-verify") if out[d] is None]
    if args.device == "cuda" and not (out["cuda_available"] and out.get("cuda_works")):
        return {**out, "passed": False, "reason": f"torch {out['torch']} sees no working CUDA GPU"}
    if missing:
        return {**out, "passed": False, "reason": f"not importable: {', '.join(missing)}"}
    where = f"{out['gpu']} (sm {out['capability']})" if out["cuda_available"] else "no GPU (CPU run)"
    return {**out, "passed": True, "reason": f"torch {out['torch']} (CUDA {out['torch_cuda']}) on {where}"}


def zoo(work: Path) -> tuple[Path, Path]:
    """The tiny senior (seed 0) and junior (seed 1): one vocabulary, built once into WORK/zoo."""
    from tandem_app.zoo import build_tiny

    paths = []
    for role, seed in (("senior", 0), ("junior", 1)):
        path = work / "zoo" / role
        if not (path / "tandem_zoo.json").is_file():  # written last: a complete model
            import shutil

            shutil.rmtree(path, ignore_errors=True)
            build_tiny(path, seed=seed)
        paths.append(path)
    return paths[0], paths[1]


def problems(n: int):
    from tandem_app.task import generate_problems

    return generate_problems("validation", n, seed=0)


def generate(device: str, senior_dir: Path, junior_dir: Path, n_prompts: int, n_tokens: int) -> dict:
    """Greedy tandem rollouts (bernoulli authors, p 0.5) on `device` at fp32 in each decoding mode."""
    import torch

    from tandem.process.coins import request_key
    from tandem.process.config import TandemConfig
    from tandem.models.loading import load_model, load_tokenizer
    from tandem.rollout.sampling import SamplingConfig
    from tandem_app.train.data import prompt_ids_batch
    from tandem_backends.reference import build

    tokenizer = load_tokenizer(senior_dir)
    senior, junior = load_model(senior_dir, "float32", device), load_model(junior_dir, "float32", device)
    prompts = prompt_ids_batch(tokenizer, problems(n_prompts))
    keys = [request_key("gpu-smoke", i) for i in range(len(prompts))]
    tandem = TandemConfig(selection_strategy="bernoulli", prob_senior=0.5)
    greedy = SamplingConfig(temperature=0.0, max_new_tokens=n_tokens)
    runs, seconds = {}, {}
    for mode in MODES:
        engine = build(senior, junior, tandem, tokenizer=tokenizer, mode=mode)
        t0 = time.monotonic()
        with torch.no_grad():
            rows = engine.generate(prompts, greedy, keys)
        if device.startswith("cuda"):
            torch.cuda.synchronize()
        seconds[mode] = round(time.monotonic() - t0, 2)
        runs[mode] = [(r.token_ids, r.authorship_mask) for r in rows]
    return {"runs": runs, "seconds": seconds}


def first_difference(a: list, b: list) -> dict | None:
    """Where two runs' rows first differ (row, token position, which of tokens/mask), or None."""
    for row, ((ta, ma), (tb, mb)) in enumerate(zip(a, b)):
        for what, x, y in (("tokens", ta, tb), ("mask", ma, mb)):
            if x != y:
                pos = next((i for i, (u, v) in enumerate(zip(x, y)) if u != v), min(len(x), len(y)))
                return {"row": row, "position": pos, "differs_in": what}
    return None if len(a) == len(b) else {"row": min(len(a), len(b)), "position": 0, "differs_in": "rows"}


def engine(args) -> dict:
    """The embedded tandem engine (tandem.reference.engine.TandemEngine) on CUDA equal to CPU at fp32: greedy tokens and
    authorship masks of every decoding mode; with --device cpu, the CPU half (the modes agree with each other)."""
    n_prompts, n_tokens = (4, 12) if args.tiny else (8, 48)
    senior, junior = zoo(Path(args.work))
    cpu = generate("cpu", senior, junior, n_prompts, n_tokens)
    runs = cpu["runs"]
    rows = runs["paired"]
    out = {"prompts": n_prompts, "max_new_tokens": n_tokens, "modes": list(MODES), "cpu_seconds": cpu["seconds"],
           "tokens": sum(len(t) for t, _ in rows),
           "senior_token_fraction": round(sum(sum(m) for _, m in rows) / max(1, sum(len(m) for _, m in rows)), 3)}
    modes_differ = {m: d for m in MODES[1:] if (d := first_difference(runs["paired"], runs[m]))}
    if modes_differ:
        return {**out, "passed": False, "reason": f"on CPU the decoding modes disagree: {modes_differ}"}
    if args.device == "cpu":
        return {**out, "passed": True, "reason": f"CPU half: {n_prompts} prompts x {n_tokens} greedy tokens, the "
                f"{len(MODES)} decoding modes agree (the CUDA half runs on a GPU)"}
    import torch

    gpu = generate(args.device, senior, junior, n_prompts, n_tokens)
    differ = {m: d for m in MODES if (d := first_difference(runs[m], gpu["runs"][m]))}
    out.update(cuda_seconds=gpu["seconds"], differences=differ,
               matmul_allow_tf32=torch.backends.cuda.matmul.allow_tf32)
    if differ:
        return {**out, "passed": False, "reason": f"CUDA differs from CPU at fp32: {differ}"}
    return {**out, "passed": True, "reason": f"CUDA equals CPU at fp32: {n_prompts} prompts x {n_tokens} greedy "
            f"tokens and masks in each of {', '.join(MODES)}"}


def handoff(args) -> dict:
    """eval-handoff (tandem-rlvr eval-handoff) on a small JSONL of the synthetic task: bf16 on a GPU (fp32 on CPU)."""
    from tandem_eval.MATH import eval_step_handoff

    work = Path(args.work)
    senior, junior = zoo(work)
    n_problems, n, tokens = (3, 1, 16) if args.tiny else (16, 2, 64)
    data = work / "handoff" / "smoke.jsonl"
    data.parent.mkdir(parents=True, exist_ok=True)
    data.write_text("".join(json.dumps({"id": p.id, "problem": p.prompt, "answer": p.answer}) + "\n"
                            for p in problems(n_problems)))
    dtype = "float32" if args.device == "cpu" else "bfloat16"
    out_dir = work / "handoff" / f"out-{args.device.replace(':', '')}-{dtype}"
    argv = ["--senior", str(senior), "--junior", str(junior), "--benchmarks", str(data), "--out-dir", str(out_dir),
            "--device", args.device, "--dtype", dtype, "--n", str(n), "--max-new-tokens", str(tokens),
            "--temperature", "1.0", "--top-k", "0", "--top-p", "1.0", "--seed", "0", "--offline", "--overwrite"]
    t0 = time.monotonic()
    rc = eval_step_handoff.main(argv)
    seconds = round(time.monotonic() - t0, 1)
    summary = json.loads((out_dir / "smoke.summary.json").read_text()) if (out_dir / "smoke.summary.json").is_file() else {}
    acc = (summary.get("pass_at_k") or {}).get("pass@1")
    out = {"command": "tandem-rlvr eval-handoff " + " ".join(argv), "dtype": dtype, "problems": n_problems,
           "samples_per_problem": n, "accuracy": acc, "eval_seconds": seconds}
    if rc != 0 or acc is None:
        return {**out, "passed": False, "reason": f"eval-handoff exited {rc} and wrote no pass@1"}
    return {**out, "passed": True, "reason": f"eval-handoff on {args.device} at {dtype}: pass@1 {acc:.3f} over "
            f"{n_problems} problems x {n} samples (untrained tiny models: a run, not a result), {seconds} s"}


def demo(args) -> dict:
    """The quick demo (tandem-rlvr demo --quick) with its SFT and RL on --device. The command has no device flag:
    the demo's config carries it (DemoConfig.sft.device, DemoConfig.train.device; its evaluation stays on the CPU)."""
    from dataclasses import replace

    from tandem_app.experiments.demo import demo_config, run_demo

    cfg = demo_config(quick=True, seed=0)
    cfg = replace(cfg, sft=replace(cfg.sft, device=args.device), train=replace(cfg.train, device=args.device))
    out = Path(args.work) / f"demo-quick-{args.device.replace(':', '')}"
    t0 = time.monotonic()
    report = run_demo(cfg, out, progress=False)
    wall = round(time.monotonic() - t0, 1)
    results = json.loads((out / "eval" / "results.json").read_text())
    timings = json.loads((out / "timings.json").read_text()) if (out / "timings.json").is_file() else {}
    acc = {name: {k: results[name].get(k) for k in ("solo_acc", "handoff_acc")} for name in ("base", "grpo", "tandem")
           if name in results}
    return {"passed": report.is_file(), "wall_seconds": wall, "phase_seconds": {k: round(v, 1) for k, v in timings.items()},
            "accuracy": acc, "device": args.device,
            "reason": f"quick demo with SFT and RL on {args.device} in {wall} s (report {'written' if report.is_file() else 'missing'})"}


STEPS = {"machine": machine, "engine": engine, "handoff": handoff, "demo": demo}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("step", choices=sorted(STEPS))
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--work", default=None, help="folder for the zoo and the runs")
    ap.add_argument("--tiny", action="store_true", help="the dry run's sizes")
    args = ap.parse_args(argv)
    import torch

    torch.set_num_threads(1 if args.tiny else min(4, torch.get_num_threads()))  # tiny models: one thread is fastest
    return emit(STEPS[args.step](args))


if __name__ == "__main__":
    sys.exit(main())
