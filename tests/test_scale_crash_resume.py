"""Crash safety of the tandem launcher: SIGKILL mid-step after the first checkpoint, relaunch, finish.

Scale lane (vLLM's CPU build + verl 0.9.1 for real; skips without them). The tandem
launcher runs at the smoke's tiny scale (scripts/scale/smoke_launch.sh) for 3 steps,
saving after every step. Once the step-1 checkpoint is tracked and step 2's rollouts have
started, the launcher's whole process tree (driver, Ray, FSDP worker, vLLM server) gets
SIGKILL. The test then reads the checkpoint directory as verl's resume_mode=auto would
(`find_latest_ckpt_path`): it must name a whole checkpoint. The relaunch, with the same
command, resumes at step 2 and finishes step 3. One kill and one resume (about 4 min here).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytest.importorskip("verl", reason="verl is not installed")
pytestmark = pytest.mark.vllm

REPO = Path(__file__).resolve().parents[1]
LAUNCH = REPO / "scripts" / "scale" / "smoke_launch.sh"
TRAIN_RESPONSES_PER_STEP = 8 * 4  # the smoke's prompts x responses
ACTOR_FILES = ("model_world_size_1_rank_0.pt", "optim_world_size_1_rank_0.pt", "extra_state_world_size_1_rank_0.pt")


def train_lines(trace: Path) -> int:
    if not trace.is_file():
        return 0
    return sum(1 for line in trace.read_text().splitlines() if line.strip() and not json.loads(line)["validate"])


def tree_pids(session: int, marker: str) -> list[int]:
    """Live processes of the launcher's session, or naming its private Ray directory."""
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
    """SIGKILL every process of the run (only those this test started), until none is left."""
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
    raise AssertionError(f"processes of the killed run survive: {tree_pids(session, marker)}")


@pytest.fixture(scope="module")
def crash(scale_senior, tmp_path_factory) -> dict:
    out = tmp_path_factory.mktemp("crash")
    base = scale_senior.parent
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    subprocess.run(["bash", str(REPO / "scripts" / "scale_smoke.sh"), "--out", str(out), "--base", str(base),
                    "--prepare-only"], env=env, check=True, capture_output=True, timeout=900)
    ray_dir = tempfile.mkdtemp(prefix="rc", dir="/tmp")  # short: Ray's socket paths must fit 107 bytes
    args = ["trainer.save_freq=1", "trainer.test_freq=3", f"+ray_kwargs.ray_init._temp_dir={ray_dir}"]
    run, ckpt = out / "tandem", out / "tandem" / "ckpt" / "tandem"
    tracker = ckpt / "latest_checkpointed_iteration.txt"

    log1 = open(out / "launch-1.log", "w")
    proc = subprocess.Popen(["bash", str(LAUNCH), str(out), str(base / "model"), "tandem", "1", "3", *args], env=env,
                            stdout=log1, stderr=subprocess.STDOUT, start_new_session=True)
    deadline, killed_at = time.monotonic() + 900, None
    try:
        while time.monotonic() < deadline and proc.poll() is None:
            tracked = tracker.is_file() and tracker.read_text().strip() == "1"
            if tracked and train_lines(run / "trace.jsonl") > TRAIN_RESPONSES_PER_STEP:
                killed_at = train_lines(run / "trace.jsonl")
                break
            time.sleep(0.05)
    finally:
        kill_tree(proc.pid, ray_dir)
        proc.wait(timeout=60)
        log1.close()
    assert killed_at is not None, f"the run ended or stalled before step 2 (exit {proc.returncode}); see " \
                                  f"{out / 'launch-1.log'}:\n" + (out / "launch-1.log").read_text()[-3000:]
    from verl.utils.checkpoint.checkpoint_manager import find_latest_ckpt_path

    after_kill = {
        "tracker": tracker.read_text(),
        "latest": find_latest_ckpt_path(str(ckpt)),
        "dirs": sorted(p.name for p in ckpt.iterdir()),
        "steps_logged": sorted(json.loads(x)["step"] for x in (run / "metrics-1.jsonl").read_text().splitlines()
                               if x.strip()),
        "train_lines": killed_at,
    }
    relaunch = subprocess.run(["bash", str(LAUNCH), str(out), str(base / "model"), "tandem", "2", "3", *args], env=env,
                              capture_output=True, text=True, timeout=900)
    (out / "launch-2.log").write_text(relaunch.stdout + relaunch.stderr)
    assert relaunch.returncode == 0, relaunch.stdout[-2000:] + relaunch.stderr[-4000:]
    kill_tree(-1, ray_dir)  # the finished run's Ray processes are gone, or are removed now
    shutil.rmtree(ray_dir, ignore_errors=True)
    resumed = sorted({json.loads(x)["step"] for x in (run / "metrics-2.jsonl").read_text().splitlines() if x.strip()})
    return {**after_kill, "ckpt": ckpt, "resumed_steps": resumed, "final_tracker": tracker.read_text(),
            "final_latest": find_latest_ckpt_path(str(ckpt))}


def whole(path: str | None) -> bool:
    return path is not None and (Path(path) / "data.pt").is_file() and all(
        (Path(path) / "actor" / name).is_file() for name in ACTOR_FILES)


def test_the_kill_landed_mid_step_two_after_the_first_checkpoint(crash):
    assert crash["tracker"].strip() == "1" and crash["steps_logged"] == [1]
    assert TRAIN_RESPONSES_PER_STEP < crash["train_lines"] <= 2 * TRAIN_RESPONSES_PER_STEP


def test_what_resume_auto_would_pick_after_the_kill_is_a_whole_checkpoint(crash):
    assert crash["latest"].endswith("global_step_1") and whole(crash["latest"])


def test_the_relaunch_resumes_at_step_two_and_finishes(crash):
    assert crash["resumed_steps"] == [2, 3]
    assert crash["final_tracker"].strip() == "3" and whole(crash["final_latest"])


def test_retention_keeps_one_checkpoint_per_launch_and_leaves_no_debris(crash):
    """max_actor_ckpt_to_keep=1 counts the saves of one process, as in verl: the relaunch removed step 2."""
    names = sorted(p.name for p in crash["ckpt"].iterdir())
    assert [n for n in names if n.startswith("global_step_")] == ["global_step_1", "global_step_3"]
    assert not [n for n in names if n.startswith(".")]
