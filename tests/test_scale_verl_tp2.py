"""The tandem launcher with a tensor-parallel rollout (placement shared, TP=2), run for real on CPU.

TP=2 of the shared wrapper is the first thing to try on two GPUs: each rank holds half of
the senior and half of the junior, so each reads about one model's worth of weights per
step. Here verl 0.9.1 runs two FSDP workers and one rollout replica of two vLLM worker
processes (`scripts/scale/smoke_launch.sh` with `rollout.tensor_model_parallel_size=2`)
for 2 GRPO steps; the resume path is the same as the TP=1 run's (`test_scale_verl_smoke.py`).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytest.importorskip("verl", reason="verl is not installed")
pytestmark = pytest.mark.vllm

REPO = Path(__file__).resolve().parents[1]
SYNC_TOL = 1e-3  # as in test_scale_verl_smoke.py


@pytest.fixture(scope="module")
def steps(scale_senior, tmp_path_factory) -> list[dict]:
    out = tmp_path_factory.mktemp("verl-tp2")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    base = scale_senior.parent
    subprocess.run(["bash", str(REPO / "scripts" / "scale_smoke.sh"), "--out", str(out), "--base", str(base),
                    "--prepare-only"], env=env, check=True, capture_output=True, timeout=600)
    (out / "tandem").mkdir()
    launch = subprocess.run(
        ["bash", str(REPO / "scripts" / "scale" / "smoke_launch.sh"), str(out), str(base / "model"), "tandem", "1",
         "2", "ray_kwargs.ray_init.num_gpus=2", "trainer.n_gpus_per_node=2",
         "actor_rollout_ref.rollout.tensor_model_parallel_size=2"],
        env=env, capture_output=True, text=True, timeout=1200)
    assert launch.returncode == 0, launch.stdout[-3000:] + launch.stderr[-3000:]
    assert "Worker_TP1" in launch.stdout  # vLLM's second tensor-parallel worker ran
    rows = [json.loads(line) for line in (out / "tandem" / "metrics-1.jsonl").read_text().splitlines() if line]
    return [row["data"] for row in sorted(rows, key=lambda r: r["step"])]


def test_two_grpo_steps_with_a_tp2_tandem_rollout(steps):
    assert [int(s["training/global_step"]) for s in steps] == [1, 2]
    assert all(0.3 < s["actor/tandem/senior_token_fraction"] < 0.7 for s in steps)
    assert all(s["actor/tandem/gated_junior_tokens"] > 0 for s in steps)


def test_the_weight_sync_reaches_both_shards_of_the_senior(steps):
    """After step 1's update, vLLM's senior (half on each rank) gives the trainer's probabilities."""
    assert all(s["actor/tandem/senior_rollout_probs_diff_max"] < SYNC_TOL for s in steps)
    assert steps[1]["training/rollout_probs_diff_max"] > 10 * SYNC_TOL  # junior tokens carry the junior's
