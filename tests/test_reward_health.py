"""The reward's health beside the reward: every trainer logs the grader calls cut short each step."""

from __future__ import annotations

from tandem.grading.grader import HEALTH_METRICS
from tandem.rollout.sampling import SamplingConfig
from tandem_app.train.grpo_trainer import GRPOTrainer
from tandem_app.train.rollout_batch import rollout_metrics
from tandem_app.train.train_config import TrainConfig

STALLING = "\\boxed{" + "9" * 5000 + "}"  # over the grader's length cap: refused, counted as too long


def test_the_embedded_trainer_reports_the_grader_calls_of_each_step(tiny_dir, tmp_path):
    cfg = TrainConfig(method="grpo", model=str(tiny_dir), out=str(tmp_path / "run"), prompts_per_step=1, group_size=2,
                      sampling=SamplingConfig(max_new_tokens=4), n_train_problems=4, n_val_problems=1)
    trainer = GRPOTrainer(cfg, progress=False)
    batch = trainer.rollout(0)
    metrics = rollout_metrics(batch, cfg.group_size)
    assert metrics["grader_calls"] == 2.0  # one per response of the step
    assert all(metrics[name] == 0.0 for name in HEALTH_METRICS)


def test_the_hf_trl_reward_function_logs_the_health_beside_the_reward():
    from hf_grpo.tandem_rollout import grader_reward

    logged = {}
    rewards = grader_reward(["so \\boxed{5}", STALLING], ["5", "5"], log_metric=logged.__setitem__)
    assert rewards == [1.0, 0.0]
    assert logged == {"grader_calls": 2.0, "grader_timeouts": 0.0, "grader_too_long": 1.0, "grader_errors": 0.0,
                      "grader_unparsed": 0.0, "grader_hedged": 0.0}


def test_the_hf_trl_reward_function_still_works_without_log_metric():
    from hf_grpo.tandem_rollout import grader_reward

    assert grader_reward([[{"role": "assistant", "content": "\\boxed{7}"}]], ["7"]) == [1.0]
