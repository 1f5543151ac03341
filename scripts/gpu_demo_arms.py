"""Are the quick demo's two arms different runs on a device? One JSON answer per seed.

`scripts/gpu_smoke.sh` runs the quick demo once on CUDA and reports its accuracies. This script
reruns it for several seeds on one device and, per seed, compares the GRPO senior with the TRL
senior, which train with the same seed and hyper-parameters and differ only in who writes:

  - the largest absolute difference between their weights (0 would mean one run twice);
  - how many of the test problems each senior solved alone and in handoff (counts, not rates);
  - the TRL run's senior token share over its training steps (1.0 would mean no junior wrote).

    python scripts/gpu_demo_arms.py --device cuda --seeds 0 1 2 --out OUT   # on the GPU machine
    python scripts/gpu_demo_arms.py --device cpu --seeds 0 --out OUT        # the same on a CPU

Writes OUT/demo_arms.json; exit 0 when every seed ran, 1 otherwise. Each seed's demo runs under
WORK (default: a temporary folder) and is removed unless --keep.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def weight_gap(a_dir: Path, b_dir: Path) -> float:
    """The largest |a - b| over every tensor the two saved models share."""
    from safetensors.torch import load_file

    a = load_file(str(next(a_dir.glob("*.safetensors"))))
    b = load_file(str(next(b_dir.glob("*.safetensors"))))
    return max(float((a[k].float() - b[k].float()).abs().max()) for k in a.keys() & b.keys())


def senior_share(metrics: Path) -> list[float]:
    rows = [json.loads(line) for line in metrics.read_text().splitlines() if line.strip()]
    return [r["senior_token_fraction"] for r in rows if r.get("senior_token_fraction") is not None]


def one_seed(seed: int, device: str, work: Path) -> dict:
    from tandem_app.experiments.demo import demo_config, run_demo

    cfg = demo_config(quick=True, seed=seed)
    cfg = replace(cfg, sft=replace(cfg.sft, device=device), train=replace(cfg.train, device=device))
    out = work / f"seed-{seed}"
    t0 = time.monotonic()
    run_demo(cfg, out, progress=False)
    wall = round(time.monotonic() - t0, 1)
    results = json.loads((out / "eval" / "results.json").read_text())
    solved = {name: {mode: sum(results[name][f"{mode}_counts"]) for mode in ("solo", "handoff")}
              for name in ("base", "grpo", "tandem")}
    same_solo = sum(a == b for a, b in zip(results["grpo"]["solo_counts"], results["tandem"]["solo_counts"]))
    share = senior_share(out / "tandem" / "metrics.jsonl")
    return {"seed": seed, "wall_seconds": wall,
            "samples": len(results["base"]["solo_counts"]) * results["base"]["solo_n"],
            "solved": solved,
            "accuracy": {name: {k: results[name][k] for k in ("solo_acc", "handoff_acc")} for name in solved},
            "problems_with_equal_solo_counts_grpo_tandem": same_solo,
            "weight_gap_grpo_tandem": weight_gap(out / "grpo" / "model", out / "tandem" / "model"),
            "weight_gap_grpo_sft": weight_gap(out / "grpo" / "model", out / "sft" / "model"),
            "tandem_train_senior_share": {"mean": sum(share) / len(share), "min": min(share), "max": max(share),
                                          "steps": len(share)} if share else None}


def machine(device: str) -> dict:
    """What a result record needs of the machine (`tandem.io.result_record`), and the GPU where one ran."""
    import torch

    from tandem.io.result_record import machine_stamp

    info = {**machine_stamp(threads=None), "torch": torch.__version__, "device": device}
    if device.startswith("cuda"):
        info["gpu"] = torch.cuda.get_device_name(0)
    return info


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter,
                                epilog=__doc__.split("\n\n", 1)[1])
    p.add_argument("--device", default="cuda")
    p.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    p.add_argument("--out", required=True, help="OUT/demo_arms.json")
    p.add_argument("--work", help="the demos' folders (default: a temporary folder)")
    p.add_argument("--keep", action="store_true", help="keep WORK's demo folders")
    args = p.parse_args(argv)
    work = Path(args.work) if args.work else Path(tempfile.mkdtemp(prefix="demo-arms-"))
    record = {"machine": machine(args.device), "seeds": [], "errors": []}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    for seed in args.seeds:
        try:
            record["seeds"].append(one_seed(seed, args.device, work))
        except Exception as e:  # one seed's failure is recorded; the next seed still runs
            record["errors"].append({"seed": seed, "error": f"{type(e).__name__}: {e}"})
        (out / "demo_arms.json").write_text(json.dumps(record, indent=1) + "\n")
        if not args.keep:
            shutil.rmtree(work / f"seed-{seed}", ignore_errors=True)
    for s in record["seeds"]:
        print(f"seed {s['seed']}: solved {s['solved']}, weight gap GRPO/TRL {s['weight_gap_grpo_tandem']:.3g}, "
              f"TRL senior share {s['tandem_train_senior_share']}, {s['wall_seconds']} s")
    for e in record["errors"]:
        print(f"seed {e['seed']}: {e['error']}")
    return 1 if record["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
