"""Wall time of `tandem-rlvr demo --quick`, alone or beside CPU-bound jobs, over several runs.

README's first result quotes this benchmark's range (on 2 cores beside busy jobs). A single
wall-clock number on a shared (virtual) machine moves with what else runs on the host, so
this benchmark runs the whole command several times, each in a fresh folder, optionally
beside `--busy K` busy loops (each in its own session, as another user's job would be:
Linux's autogroup shares the CPU between sessions, not between processes), and records
per run the wall time, the demo's phase timings (its `timings.json`), the load average and
the CPU time the host stole from this machine (`/proc/stat`, where the kernel reports it).

    python scripts/bench_quick_demo.py --out bench_quick_demo.json [--runs 3] [--busy 2]

Output JSON: `runs` (one row each), `wall_s` {min, median, max} and the settings.
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

BUSY_LOOP = "while True: pass"


def parse_args(argv=None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--out", required=True, help="JSON file to write")
    p.add_argument("--runs", type=int, default=3, help="whole demo runs, each in a fresh folder (default 3)")
    p.add_argument("--busy", type=int, default=0, help="CPU-bound jobs beside each run, one session each (default 0)")
    p.add_argument("--seed", type=int, default=0)
    return p.parse_args(argv)


def steal_seconds() -> float | None:
    """CPU time stolen by the host so far, summed over CPUs (None where /proc/stat has no such column)."""
    try:
        fields = Path("/proc/stat").read_text().splitlines()[0].split()
    except OSError:
        return None
    return int(fields[8]) / os.sysconf("SC_CLK_TCK") if len(fields) > 8 else None


def one_run(seed: int, busy: int) -> dict:
    loops = [subprocess.Popen([sys.executable, "-c", BUSY_LOOP], start_new_session=True) for _ in range(busy)]
    try:
        time.sleep(2.0 if busy else 0.0)  # the loops are running before the demo starts
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "demo"
            steal0, t0 = steal_seconds(), time.perf_counter()
            subprocess.run([sys.executable, "-m", "tandem_app.commands.cli", "demo", "--quick", "--seed", str(seed),
                            "--out", str(out), "--no-progress"], check=True, stdout=subprocess.DEVNULL)
            wall = time.perf_counter() - t0
            steal1 = steal_seconds()
            phases = json.loads((out / "timings.json").read_text())
    finally:
        for p in loops:
            p.kill()
            p.wait()
    return {"wall_s": round(wall, 1), "phases_s": {k: round(v, 1) for k, v in phases.items()},
            "load_avg_1m": round(os.getloadavg()[0], 2),
            "host_steal_s": None if steal0 is None or steal1 is None else round(steal1 - steal0, 1)}


def main(argv=None) -> int:
    args = parse_args(argv)
    rows = []
    for i in range(args.runs):
        rows.append(one_run(args.seed, args.busy))
        print(f"run {i + 1}/{args.runs}: {rows[-1]['wall_s']} s", file=sys.stderr, flush=True)
    walls = [r["wall_s"] for r in rows]
    result = {
        "command": f"tandem-rlvr demo --quick --seed {args.seed} --no-progress",
        "busy_jobs": args.busy, "cpus": os.cpu_count(), "python": platform.python_version(),
        "wall_s": {"min": min(walls), "median": statistics.median(walls), "max": max(walls)},
        "runs": rows,
    }
    Path(args.out).write_text(json.dumps(result, indent=2) + "\n")
    print(json.dumps(result["wall_s"]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
