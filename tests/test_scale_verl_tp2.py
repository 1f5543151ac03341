"""The tandem launcher with a tensor-parallel rollout (placement shared, TP=2), run for real on CPU.

TP=2 of the shared wrapper is the first thing to try on two GPUs: each rank holds half of
the senior and half of the junior, so each reads about one model's worth of weights per
step. Here verl 0.9.1 runs two FSDP workers and one rollout replica of two vLLM worker
processes (`scripts/scale/smoke_launch.sh` with `rollout.tensor_model_parallel_size=2`)
for 2 GRPO steps; the resume path is the same as the TP=1 run's (`test_scale_verl_smoke.py`).
"""

from __future__ import annotations

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytest.importorskip("verl", reason="verl is not installed")
pytestmark = pytest.mark.vllm

from launch_once import launch_two_steps  # noqa: E402

SYNC_TOL = 1e-3  # as in test_scale_verl_smoke.py


@pytest.fixture(scope="module")
def steps(scale_senior, tmp_path_factory) -> list[dict]:
    tp2 = ["ray_kwargs.ray_init.num_gpus=2", "trainer.n_gpus_per_node=2",
           "actor_rollout_ref.rollout.tensor_model_parallel_size=2"]
    steps, stdout = launch_two_steps(tmp_path_factory.mktemp("verl-tp2"), scale_senior, "tandem", *tp2)
    assert "Worker_TP1" in stdout  # vLLM's second tensor-parallel worker ran
    return steps


def test_two_grpo_steps_with_a_tp2_tandem_rollout(steps):
    assert [int(s["training/global_step"]) for s in steps] == [1, 2]
    assert all(0.3 < s["actor/tandem/senior_token_fraction"] < 0.7 for s in steps)
    assert all(s["actor/tandem/gated_junior_tokens"] > 0 for s in steps)


def test_the_weight_sync_reaches_both_shards_of_the_senior(steps):
    """After step 1's update, vLLM's senior (half on each rank) gives the trainer's probabilities."""
    assert all(s["actor/tandem/senior_rollout_probs_diff_max"] < SYNC_TOL for s in steps)
    assert steps[1]["training/rollout_probs_diff_max"] > 10 * SYNC_TOL  # junior tokens carry the junior's
