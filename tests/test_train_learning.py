"""The trainer learns on the task: a short GRPO / TRL run raises the reward (fixed seeds, stated margin).

A quick SFT on an easy version of the task gives a base that is right part of the time
at temperature 1. Training then runs on a small pool of problems, and the reward is
measured on that pool with fixed sampling keys before and after (a paired comparison,
so problem difficulty cancels out). At this model size RL gains on *unseen* problems are
within noise over a short run (see the demo report), so the test pins the trainer's
ability to raise the reward it optimises.
"""

from __future__ import annotations

import pytest

from tandem.process.coins import request_key
from tandem.reference.engine import TandemEngine
from tandem.grading import reward
from tandem.rollout.sampling import SamplingConfig
from tandem_app.task import TaskConfig
from tandem_app.train.data import prompt_ids_batch
from tandem_app.train.grpo_trainer import GRPOTrainer
from tandem_app.train.sft import SFTConfig, run_sft
from tandem_app.train.train_config import TrainConfig

EASY = TaskConfig(min_steps=1, max_steps=1, max_start=20, max_operand=9, max_factor=3)
MAX_NEW_TOKENS = 40
POOL = 8  # training problems, all of them in every step
MARGIN = 0.15  # reward gain the run must show on its pool


@pytest.fixture(scope="module")
def easy_base(tiny_dir, tmp_path_factory) -> str:
    out = tmp_path_factory.mktemp("learn") / "sft"
    cfg = SFTConfig(
        model=str(tiny_dir),
        out=str(out),
        steps=200,
        batch_size=32,
        lr=3e-3,
        warmup_steps=15,
        n_train_problems=3000,
        n_val_problems=8,
        max_new_tokens=MAX_NEW_TOKENS,
        log_every=50,
        task=EASY,
    )
    return run_sft(cfg, progress=False)["model"]


def pool_reward(trainer: GRPOTrainer, n_samples: int = 8) -> float:
    """Mean solo reward at temperature 1 on the training pool, with fixed sampling keys."""
    problems = trainer.train_problems
    prompts = prompt_ids_batch(trainer.tokenizer, problems)
    rows = [(i, j) for i in range(len(problems)) for j in range(n_samples)]
    keys = [request_key(f"learn/{problems[i].id}", j) for i, j in rows]
    trainer.senior.eval()
    engine = TandemEngine(trainer.senior, None, trainer.tokenizer)
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=MAX_NEW_TOKENS, seed=7)
    rollouts = engine.generate([prompts[i] for i, _ in rows], sampling, keys, solo=True)
    return sum(reward(r.text, problems[i].answer) for r, (i, _) in zip(rollouts, rows)) / len(rows)


@pytest.mark.parametrize("method", ["grpo", "tandem"])
def test_training_raises_the_reward(method, easy_base, tmp_path):
    cfg = TrainConfig(
        method=method,
        model=easy_base,
        out=str(tmp_path / method),
        steps=12,
        prompts_per_step=POOL,
        group_size=8,
        ppo_mini_batches=1,
        lr=3e-4,
        sampling=SamplingConfig(max_new_tokens=MAX_NEW_TOKENS),
        val_every=0,
        n_val_problems=4,
        n_train_problems=POOL,
        task=EASY,
    )
    trainer = GRPOTrainer(cfg, progress=False)
    before = pool_reward(trainer)
    trainer.train()
    after = pool_reward(trainer)
    print(f"\n{method}: reward on the training pool {before:.3f} -> {after:.3f}")
    assert 0.0 < before < 0.8, f"the base leaves no room to learn: {before}"
    assert after >= before + MARGIN, (before, after)
