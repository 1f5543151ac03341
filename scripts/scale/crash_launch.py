"""One smoke launch killed mid-step: SIGKILL to the whole launcher tree once checkpoint K is tracked.

    python scripts/scale/crash_launch.py OUT MODEL RUN N STEPS --after K [key=value ...]

Runs `scripts/scale/smoke_launch.sh OUT MODEL RUN N STEPS key=value...` (saving after every
step, Ray in a private temporary directory) in a session of its own. Once the tracker
`latest_checkpointed_iteration.txt` names step K and the tandem trace holds a training
response of step K + 1 (its rollouts have started), every process of the run (driver, Ray,
FSDP workers, vLLM servers) gets SIGKILL. Then it writes OUT/RUN/kill.json: what the
checkpoint directory holds after the kill and what verl's `resume_mode=auto` would pick
(`find_latest_ckpt_path`), the steps the killed launch logged, and the training responses in
the trace. Exits 1 (and says why) if the run ended or stalled before the kill.
Environment: SMOKE_TIMEOUT seconds (default 900).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
LAUNCH = REPO / "scripts" / "scale" / "smoke_launch.sh"
TRAIN_RESPONSES_PER_STEP = 8 * 4  # the smoke's prompts x responses (smoke_launch.sh)
TRACKER = "latest_checkpointed_iteration.txt"


def train_lines(trace: Path) -> int:
    if not trace.is_file():
        return 0
    lines = trace.read_text().splitlines()
    return sum(1 for line in lines if line.strip() and line.endswith("}") and not json.loads(line)["validate"])


def tree_pids(session: int, marker: str) -> list[int]:
    """Live processes of the launcher's session, or naming its private Ray directory (Ray's daemons leave the session)."""
    pids = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdigit() or int(proc.name) == os.getpid():
            continue
        try:
            sid = int((proc / "stat").read_text().rsplit(")", 1)[1].split()[4])
            cmdline = (proc / "cmdline").read_bytes().decode(errors="replace")
        except (OSError, IndexError, ValueError):
            continue
        if sid == session or marker in cmdline:
            pids.append(int(proc.name))
    return pids


def kill_tree(session: int, marker: str) -> None:
    """SIGKILL every process of the run (only those this script started), until none is left."""
    for _ in range(50):
        pids = tree_pids(session, marker)
        if not pids:
            return
        for pid in pids:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        time.sleep(0.2)
    raise SystemExit(f"error: processes of the killed run survive: {tree_pids(session, marker)}")


def after_kill(run_dir: Path, ckpt: Path, n: int) -> dict:
    from verl.utils.checkpoint.checkpoint_manager import find_latest_ckpt_path

    tracker = ckpt / TRACKER
    metrics = run_dir / f"metrics-{n}.jsonl"
    return {
        "tracker": tracker.read_text().strip() if tracker.is_file() else None,
        "latest": find_latest_ckpt_path(str(ckpt)),
        "dirs": sorted(p.name for p in ckpt.iterdir()),
        "steps_logged": sorted(json.loads(x)["step"] for x in metrics.read_text().splitlines() if x.strip())
        if metrics.is_file() else [],
        "train_lines": train_lines(run_dir / "trace.jsonl"),
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("out", type=Path)
    ap.add_argument("model")
    ap.add_argument("run")
    ap.add_argument("n")
    ap.add_argument("steps")
    ap.add_argument("--after", type=int, required=True, help="kill once checkpoint AFTER is tracked and step AFTER+1 "
                                                             "has started its rollouts")
    args, overrides = ap.parse_known_args(argv)
    run_dir = args.out / args.run
    ckpt = run_dir / "ckpt" / args.run
    ray_dir = tempfile.mkdtemp(prefix="rc", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    cmd = ["bash", str(LAUNCH), str(args.out), args.model, args.run, args.n, args.steps, *overrides,
           "trainer.save_freq=1", f"+ray_kwargs.ray_init._temp_dir={ray_dir}"]
    started = train_lines(run_dir / "trace.jsonl")
    deadline, landed = time.monotonic() + float(os.environ.get("SMOKE_TIMEOUT", "900")), False
    with open(run_dir / f"launch-{args.n}.log", "w") as log:
        proc = subprocess.Popen(cmd, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        try:
            while time.monotonic() < deadline and proc.poll() is None:
                tracked = (ckpt / TRACKER).is_file() and (ckpt / TRACKER).read_text().strip() == str(args.after)
                if tracked and train_lines(run_dir / "trace.jsonl") - started > args.after * TRAIN_RESPONSES_PER_STEP:
                    landed = True
                    break
                time.sleep(0.05)
        finally:
            kill_tree(proc.pid, ray_dir)
            proc.wait(timeout=60)
            shutil.rmtree(ray_dir, ignore_errors=True)
    if not landed:
        print(f"error: the run ended or stalled before step {args.after + 1} (exit {proc.returncode}); see "
              f"{run_dir / f'launch-{args.n}.log'}", file=sys.stderr)
        return 1
    (run_dir / "kill.json").write_text(json.dumps(after_kill(run_dir, ckpt, int(args.n)), indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
