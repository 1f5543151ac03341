"""Time how fast each command refuses bad input, and whether torch was imported by then.

A refusal (an `--out` that holds another run, a misspelt key, a missing model or file) should
answer within a second, before any work: the promise `README.md` makes ("before any work"),
measured here rather than asserted in a test (a test's wall clock depends on its neighbours).
Each case runs `python -m tandem_app.commands.cli ...` in a fresh process `--repeats` times
(wall seconds: min, median, max), and once more with `-X importtime` to record whether torch
was imported before the refusal; every run must exit 2 with one `error:` line.

    python scripts/bench_refusal.py --out model_spec/bench/bench_refusal.json [--repeats 5]

Output JSON: the machine, and per case its command line, the error line, the exit status,
the seconds and `torch_imported`. Cases that miss the bound are listed under `over_1s`.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
BOUND_S = 1.0


def _cases(work: Path) -> dict[str, list[str]]:
    """Each refusal's arguments; `taken` is a folder holding another file, `model` a folder with config.json."""
    taken, model, missing = work / "taken", work / "model", str(work / "missing")
    taken.mkdir()
    (taken / "notes.txt").write_text("someone else's\n")
    model.mkdir()
    (model / "config.json").write_text("{}\n")
    return {
        "train: --out not empty": ["train", "--model", str(model), "--out", str(taken)],
        "sft: --out not empty": ["sft", "--model", str(model), "--out", str(taken)],
        "distill: --out not empty": ["distill", "--teacher", str(model), "--student", str(model), "--out", str(taken)],
        "demo: --out not empty": ["demo", "--quick", "--out", str(taken)],
        "train: unknown key": ["train", "--model", str(model), "--out", str(work / "new"), "prob_senor=0.5"],
        "sft: missing model": ["sft", "--model", missing, "--out", str(work / "new")],
        "eval-solo: missing model": ["eval-solo", "--model", missing, "--benchmarks", "x.jsonl", "--out-dir",
                                     str(work / "e")],
        "eval-solo: missing benchmark file": ["eval-solo", "--model", str(model), "--benchmarks",
                                              str(work / "missing.jsonl"), "--out-dir", str(work / "e")],
        "eval-handoff: missing junior": ["eval-handoff", "--senior", str(model), "--junior", missing, "--benchmarks",
                                         "x.jsonl", "--out-dir", str(work / "e")],
    }


def _run(argv: list[str], importtime: bool = False) -> tuple[float, subprocess.CompletedProcess]:
    flags = ["-X", "importtime"] if importtime else []
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(REPO), os.environ.get("PYTHONPATH")]))}
    t0 = time.perf_counter()
    done = subprocess.run([sys.executable, *flags, "-m", "tandem_app.commands.cli", *argv], capture_output=True,
                          text=True, env=env, cwd=REPO, timeout=300)
    return time.perf_counter() - t0, done


def measure(argv: list[str], repeats: int) -> dict:
    """One case: its seconds over `repeats` fresh processes, its error line, and torch's import."""
    seconds, done = [], None
    for _ in range(repeats):
        s, done = _run(argv)
        seconds.append(s)
    _, traced = _run(argv, importtime=True)
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    torch = any(line.startswith("import time:") and line.rsplit("|", 1)[-1].strip() == "torch"
                for line in traced.stderr.splitlines())
    return {"argv": argv, "returncode": done.returncode, "error": errors[0] if errors else None,
            "one_error_line": len(errors) == 1, "torch_imported": torch, "min_s": min(seconds),
            "median_s": statistics.median(seconds), "max_s": max(seconds)}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--out", type=Path, default=REPO / "model_spec" / "bench" / "bench_refusal.json")
    p.add_argument("--repeats", type=int, default=5)
    args = p.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        results = {name: measure(argv, args.repeats) for name, argv in _cases(Path(tmp)).items()}
    for r in results.values():  # the temporary paths mean nothing once it is gone
        r["argv"] = [a.replace(tmp, "TMP") for a in r["argv"]]
        r["error"] = r["error"] and r["error"].replace(tmp, "TMP")
    report = {"machine": {"python": platform.python_version(), "cpus": os.cpu_count(),
                          "load_1min": os.getloadavg()[0]},
              "bound_s": BOUND_S, "repeats": args.repeats, "cases": results,
              "over_1s": [name for name, r in results.items() if r["median_s"] > BOUND_S],
              "not_refused": [name for name, r in results.items() if r["returncode"] != 2 or not r["one_error_line"]]}
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(report, indent=2) + "\n")
    for name, r in results.items():
        print(f"{name:36s} {r['median_s']:6.2f} s (min {r['min_s']:.2f}, max {r['max_s']:.2f})  torch: "
              f"{'yes' if r['torch_imported'] else 'no ':3s}  exit {r['returncode']}")
    print(f"wrote {args.out}")
    return 1 if report["not_refused"] else 0


if __name__ == "__main__":
    sys.exit(main())
