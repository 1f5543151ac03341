"""One launcher process for 2 GRPO steps on CPU (`scripts/scale/smoke_launch.sh`), for scale tests.

`launch_two_steps(out, senior, run, *overrides)` prepares the smoke's tiny parquet files
under `out`, runs one launch of `run` (tandem, tandem_split, vanilla, kl_reg) for 2 steps
with the CPU overrides plus `overrides`, and returns (verl's metrics per step, the launch's
stdout and stderr). Used where a variant needs its first two steps checked and not the resume, which
`tests/test_scale_verl_smoke.py` covers.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def launch_two_steps(out: Path, senior: Path, run: str, *overrides: str) -> tuple[list[dict], str]:
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    base = senior.parent
    subprocess.run(["bash", str(REPO / "scripts" / "scale_smoke.sh"), "--out", str(out), "--base", str(base),
                    "--prepare-only"], env=env, check=True, capture_output=True, timeout=600)
    (out / run).mkdir()
    launch = subprocess.run(
        ["bash", str(REPO / "scripts" / "scale" / "smoke_launch.sh"), str(out), str(base / "model"), run, "1", "2",
         *overrides], env=env, capture_output=True, text=True, timeout=1200)
    assert launch.returncode == 0, launch.stdout[-3000:] + launch.stderr[-3000:]
    rows = [json.loads(line) for line in (out / run / "metrics-1.jsonl").read_text().splitlines() if line]
    return [row["data"] for row in sorted(rows, key=lambda r: r["step"])], launch.stdout + launch.stderr
