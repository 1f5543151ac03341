"""`tandem.junior_update`: a junior that stays frozen, is synced every K optimizer steps, or follows by EMA.

The rule's arithmetic on hand-built modules, its parsing and refusals, and the embedded
trainer honouring it: the junior changes exactly on its schedule, lives in every
checkpoint, and a killed run resumes bit for bit.
"""

from __future__ import annotations

import pytest
import torch

from tandem.process.config import TandemConfig
from tandem.errors import TandemError
from tandem.process.junior_update import (
    JuniorUpdate,
    after_optimizer_step,
    check_self_paired,
    parse_junior_update,
    steps_per_sync_error,
)
from tandem_app.train.grpo_trainer import GRPOTrainer

from test_train_resume import STEPS, _Crash, _cfg, _crashing_reward, _rows, _text_reward  # noqa: E402


def pair(junior_value: float, senior_value: float, tied: bool = False):
    def model(value):
        m = torch.nn.Sequential(torch.nn.Embedding(3, 2), torch.nn.Linear(2, 3, bias=False))
        torch.nn.init.constant_(m[0].weight, value)
        if tied:
            m[1].weight = m[0].weight  # as a model with tied embeddings
        else:
            torch.nn.init.constant_(m[1].weight, value)
        return m

    return model(junior_value), model(senior_value)


@pytest.mark.parametrize(("text", "rule"), [
    ("frozen", JuniorUpdate()), ("sync:4", JuniorUpdate("sync", every=4)), (" ema:0.99", JuniorUpdate("ema", beta=0.99)),
    ("ema:0", JuniorUpdate("ema", beta=0.0)),
])
def test_the_three_forms_parse(text, rule):
    assert parse_junior_update(text) == rule and parse_junior_update(rule.text) == rule


def test_the_rules_text_keeps_every_digit_of_beta_so_a_resume_tells_two_betas_apart():
    assert parse_junior_update("ema:0.90").text == "ema:0.9" and parse_junior_update("ema:0").text == "ema:0"
    assert parse_junior_update("ema:0.99999912").text == "ema:0.99999912"  # :g alone would say 0.999999


@pytest.mark.parametrize("text", ["sync", "sync:0", "sync:2.5", "ema:1", "ema:-0.1", "ema:x", "frozen:1", "copy", 3])
def test_anything_else_is_one_line_naming_the_forms(text):
    with pytest.raises(TandemError, match=r"^junior_update must be frozen, sync:K .* or ema:BETA .*, got"):
        parse_junior_update(text)


def test_the_tandem_config_holds_the_rule_under_its_public_key():
    assert TandemConfig().junior_update == "frozen"
    assert TandemConfig.from_dict({"junior_update": "ema:0.900"}).junior_update == "ema:0.9"
    with pytest.raises(TandemError, match="junior_update must be"):
        TandemConfig.from_dict({"junior_update": "sometimes"})


def test_sync_copies_the_senior_on_multiples_of_k_only():
    rule = parse_junior_update("sync:3")
    junior, senior = pair(0.0, 1.0)
    assert [after_optimizer_step(rule, junior, senior, s) for s in (1, 2)] == [False, False]
    assert all(float(p.detach().sum()) == 0.0 for p in junior.parameters())
    assert after_optimizer_step(rule, junior, senior, 3)
    assert all(torch.equal(j, s) for j, s in zip(junior.parameters(), senior.parameters()))


@pytest.mark.parametrize(("rule", "steps", "honoured"), [
    ("frozen", 4, True), ("sync:4", 1, True), ("sync:4", 2, True), ("sync:4", 4, True), ("sync:2", 4, False),
    ("sync:3", 2, False), ("ema:0.9", 1, True), ("ema:0.9", 2, False),
])
def test_a_sync_every_m_optimizer_steps_honours_copies_on_its_steps_and_blends_only_at_m_1(rule, steps, honoured):
    """Where the rollout engine sees the senior once every `steps` optimizer steps (verl's weight sync)."""
    why = steps_per_sync_error(parse_junior_update(rule), steps)
    assert (why is None) == honoured
    if not honoured:
        assert why.startswith(f"junior_update={rule} ") and f"multiple of {steps}" in why


def test_ema_blends_every_step_and_a_tied_tensor_once():
    rule = parse_junior_update("ema:0.75")
    junior, senior = pair(0.0, 1.0, tied=True)
    for step in (1, 2):
        assert after_optimizer_step(rule, junior, senior, step)
    expected = 1.0 - 0.75 ** 2  # 0 -> 0.25 -> 0.4375
    assert all(torch.allclose(p, torch.full_like(p, expected)) for p in junior.parameters())


def test_frozen_never_changes_the_junior():
    junior, senior = pair(0.0, 1.0)
    assert not any(after_optimizer_step(JuniorUpdate(), junior, senior, s) for s in range(1, 10))
    assert all(float(p.detach().abs().sum()) == 0.0 for p in junior.parameters())


def test_a_junior_of_another_shape_cannot_follow():
    junior = torch.nn.Linear(2, 3)
    with pytest.raises(TandemError, match="only the senior's own base .* can follow"):
        after_optimizer_step(parse_junior_update("sync:1"), junior, torch.nn.Linear(2, 4), 1)
    with pytest.raises(TandemError, match=r"junior_update=sync:2 .* tandem.junior_model='small' names another model"):
        check_self_paired(parse_junior_update("sync:2"), "base", "small")
    check_self_paired(parse_junior_update("sync:2"), "base", "base")  # the base named explicitly is self-paired
    check_self_paired(JuniorUpdate(), "base", "small")  # a frozen junior may be any model


def _params(model) -> list[torch.Tensor]:
    return [p.detach().clone() for p in model.parameters()]


def test_the_embedded_trainer_syncs_the_junior_on_schedule_and_keeps_the_base_as_reference(tiny_dir, tmp_path):
    # 2 mini-batches per step: optimizer steps 1..4 over 2 training steps; sync:4 copies after the 4th only
    cfg = _cfg(tiny_dir, tmp_path / "sync", steps=1, tandem=TandemConfig(junior_update="sync:4"))
    trainer = GRPOTrainer(cfg, reward_fn=_text_reward, progress=False)
    assert trainer.junior is not trainer.base and trainer.engine.junior.models[0] is trainer.junior
    base = _params(trainer.base)
    trainer.train()
    assert all(torch.equal(j, b) for j, b in zip(trainer.junior.parameters(), base))  # 2 optimizer steps: not yet
    trainer.cfg.steps = 2
    trainer.train(resume=True)
    assert all(torch.equal(j, s) for j, s in zip(trainer.junior.parameters(), trainer.senior.parameters()))
    assert all(torch.equal(b, b0) for b, b0 in zip(trainer.base.parameters(), base))  # the reference stays the base
    assert [r.get("junior_updates") for r in _rows(tmp_path / "sync")[1:]] == [0.0, 1.0]


def test_a_killed_ema_run_resumes_bit_for_bit_junior_included(tiny_dir, tmp_path):
    ema = TandemConfig(junior_update="ema:0.5")
    straight = GRPOTrainer(_cfg(tiny_dir, tmp_path / "straight", tandem=ema), reward_fn=_text_reward, progress=False)
    straight.train()
    crashed = GRPOTrainer(_cfg(tiny_dir, tmp_path / "resumed", tandem=ema), reward_fn=_crashing_reward(3 * 2 * 4),
                          progress=False)
    with pytest.raises(_Crash):
        crashed.train()  # dies during step 4, after the checkpoint of step 2
    resumed = GRPOTrainer(_cfg(tiny_dir, tmp_path / "resumed", tandem=ema), reward_fn=_text_reward, progress=False)
    resumed.train(resume=True)
    assert any(not torch.equal(j, b) for j, b in zip(straight.junior.parameters(), straight.base.parameters()))
    for a, b in zip([*straight.senior.parameters(), *straight.junior.parameters()],
                    [*resumed.senior.parameters(), *resumed.junior.parameters()]):
        assert torch.equal(a, b)
    assert _rows(tmp_path / "straight") == _rows(tmp_path / "resumed")
    assert len(_rows(tmp_path / "resumed")) == STEPS + 1


def test_a_resume_from_a_checkpoint_without_the_junior_is_refused(tiny_dir, tmp_path):
    GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", steps=2), reward_fn=_text_reward, progress=False).train()
    (tmp_path / "run" / "config.json").unlink()  # the config the checkpoint carries still refuses it
    moving = GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", steps=3, tandem=TandemConfig(junior_update="sync:1")),
                         reward_fn=_text_reward, progress=False)
    with pytest.raises(TandemError, match=r"different config than the checkpoint's config .*\(tandem.junior_update\)"):
        moving.train(resume=True)


def test_a_junior_named_by_another_model_cannot_follow_the_senior(tiny_dir, tiny_dir_seed1, tmp_path):
    cfg = _cfg(tiny_dir, tmp_path / "run", tandem=TandemConfig(junior_update="ema:0.9", junior_model=str(tiny_dir_seed1)))
    with pytest.raises(TandemError, match="names another model; drop junior_model or set junior_update=frozen"):
        GRPOTrainer(cfg, reward_fn=_text_reward, progress=False)


def test_ema_is_refused_on_a_junior_narrower_than_float32_and_sync_copies_exactly():
    """In bfloat16 the blend's (1 - BETA) * (senior - junior) falls below the dtype's resolution."""
    senior, junior = torch.nn.Linear(4, 4).bfloat16(), torch.nn.Linear(4, 4).bfloat16()
    with pytest.raises(TandemError, match="ema:0.9 on a junior in bfloat16: .* keep the junior in float32, or use sync:K"):
        after_optimizer_step(parse_junior_update("ema:0.9"), junior, senior, 1)
    assert after_optimizer_step(parse_junior_update("sync:1"), junior, senior, 1)
    assert torch.equal(junior.weight, senior.weight)
