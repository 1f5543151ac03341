"""Checkpoints and resume: an interrupted run continues bit-for-bit."""

from __future__ import annotations

import json

import pytest
import torch

from tandem.errors import TandemError
from tandem.sampling import SamplingConfig
from tandem_app.train.grpo_trainer import GRPOTrainer, TrainConfig

STEPS = 4


def _text_reward(text: str, gold: str) -> float:
    """A reward with variance on a random-init model (the task reward would be all zero)."""
    return float(len(text) % 3 == 0)


class _Crash(RuntimeError):
    pass


def _crashing_reward(after_calls: int):
    calls = {"n": 0}

    def fn(text, gold):
        calls["n"] += 1
        if calls["n"] > after_calls:
            raise _Crash("simulated crash")
        return _text_reward(text, gold)

    return fn


def _cfg(tiny_dir, out, **kw) -> TrainConfig:
    base = dict(
        method="tandem",
        model=str(tiny_dir),
        out=str(out),
        steps=STEPS,
        prompts_per_step=2,
        group_size=4,
        sampling=SamplingConfig(max_new_tokens=20),
        lr=1e-3,
        save_every=2,
        val_every=0,
        n_val_problems=2,
        n_train_problems=40,
    )
    return TrainConfig(**{**base, **kw})


def _rows(out) -> list[dict]:
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    return [{k: v for k, v in r.items() if not k.startswith("time_")} for r in rows]


def test_interrupted_run_resumes_bit_for_bit(tiny_dir, tmp_path):
    straight = GRPOTrainer(_cfg(tiny_dir, tmp_path / "straight"), reward_fn=_text_reward, progress=False)
    straight.train()

    per_step = 2 * 4  # reward calls per step
    crashed = GRPOTrainer(
        _cfg(tiny_dir, tmp_path / "resumed"), reward_fn=_crashing_reward(3 * per_step), progress=False
    )
    with pytest.raises(_Crash):
        crashed.train()  # dies during step 4, after the checkpoint of step 2
    resumed = GRPOTrainer(_cfg(tiny_dir, tmp_path / "resumed"), reward_fn=_text_reward, progress=False)
    resumed.train(resume=True)

    initial = GRPOTrainer(_cfg(tiny_dir, tmp_path / "unused"), reward_fn=_text_reward, progress=False)
    changed = [not torch.equal(a, b) for a, b in zip(straight.senior.parameters(), initial.senior.parameters())]
    assert any(changed), "training did not move the parameters; the comparison would be vacuous"
    for a, b in zip(straight.senior.parameters(), resumed.senior.parameters()):
        assert torch.equal(a, b)
    assert _rows(tmp_path / "straight") == _rows(tmp_path / "resumed")
    assert [r["step"] for r in _rows(tmp_path / "resumed")] == list(range(STEPS + 1))


def test_checkpoint_is_written_atomically(tiny_dir, tmp_path):
    GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", steps=2), reward_fn=_text_reward, progress=False).train()
    names = sorted(p.name for p in (tmp_path / "run").iterdir())
    assert "checkpoint.pt" in names and (tmp_path / "run" / "model" / "config.json").is_file()
    assert not [n for n in names if n.endswith(".tmp")]
    state = torch.load(tmp_path / "run" / "checkpoint.pt", weights_only=False)
    assert state["step"] == 2 and {"model", "optimizer", "rng"} <= set(state)
    loss = state["extra"]["config"]["loss"]  # the loss settings travel with every checkpoint
    assert (loss["junior_token_loss_weight"], loss["loss_denominator"]) == (0.0, "senior_tokens")


def test_resume_under_another_loss_denominator_is_an_error(tiny_dir, tmp_path):
    GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", steps=1), reward_fn=_text_reward, progress=False).train()
    cfg = _cfg(tiny_dir, tmp_path / "run", steps=2)
    cfg.loss.loss_denominator = "all_response_tokens"
    with pytest.raises(TandemError, match="loss.loss_denominator"):
        GRPOTrainer(cfg, progress=False).train(resume=True)


def test_resume_with_a_changed_config_is_an_error(tiny_dir, tmp_path):
    GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", steps=2), reward_fn=_text_reward, progress=False).train()
    with pytest.raises(TandemError, match="lr"):
        GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", lr=5e-4), progress=False).train(resume=True)


def test_existing_run_directory_without_resume_is_an_error(tiny_dir, tmp_path):
    GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", steps=1), reward_fn=_text_reward, progress=False).train()
    with pytest.raises(TandemError, match="--resume"):
        GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", steps=1), progress=False).train()
