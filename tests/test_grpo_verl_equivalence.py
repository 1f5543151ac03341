"""`tandem.loss.grpo` computes what verl 0.9.1's core_algos computes, on the same tensors.

The authorship gate is folded into verl's `response_mask`: for junior weight 0 as a 0/1
mask, and for a non-zero junior weight as a float mask (verl's `agg_loss` and
`masked_sum` multiply by the mask, so float masks give a weighted token-mean).
verl is a required dev dependency; this test must run in CI, never skip.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

# A plain import on purpose: a missing verl fails the suite instead of skipping this test.
from verl.trainer.ppo import core_algos  # noqa: E402
from verl.workers.config import ActorConfig  # noqa: E402

from tandem.loss import grpo, loss_config, senior_gate

B, T, N = 12, 9, 4  # responses, padded length, group size


def _batch(seed: int = 0):
    g = torch.Generator().manual_seed(seed)
    lengths = torch.randint(2, T + 1, (B,), generator=g)
    response_mask = (torch.arange(T)[None] < lengths[:, None]).float()
    authorship = torch.randint(0, 2, (B, T), generator=g) * response_mask.long()
    authorship[0] = 0  # one response written entirely by the junior
    scores = torch.randint(0, 2, (B,), generator=g).float()
    scores[:N] = 1.0  # one group with zero variance
    rewards = torch.zeros(B, T)
    rewards[torch.arange(B), lengths - 1] = scores
    old = -torch.rand(B, T, generator=g) * 3
    new = old + torch.randn(B, T, generator=g) * 0.4  # ratios well outside the clip range
    index = np.array([f"p{i // N}" for i in range(B)], dtype=object)
    return rewards, response_mask, authorship, old, new, index


def _verl_actor_config(**kw) -> ActorConfig:
    return ActorConfig(strategy="fsdp", ppo_micro_batch_size_per_gpu=1, rollout_n=N, **kw)


def test_grpo_advantage_equals_verl():
    rewards, response_mask, _, _, _, index = _batch()
    ours, ours_ret = grpo.get_adv_estimator_fn("grpo")(rewards, response_mask, index)
    theirs, theirs_ret = core_algos.compute_grpo_outcome_advantage(rewards.clone(), response_mask, index)
    torch.testing.assert_close(ours, theirs, rtol=0, atol=0)
    torch.testing.assert_close(ours_ret, theirs_ret, rtol=0, atol=0)
    assert ours[:N].abs().max() == 0  # zero-variance group -> zero advantage
    assert ours.abs().max() > 0.5


def test_grpo_advantage_without_std_equals_verl_dr_grpo():
    rewards, response_mask, _, _, _, index = _batch(1)
    ours, _ = grpo.compute_grpo_outcome_advantage(rewards, response_mask, index, norm_adv_by_std_in_grpo=False)
    theirs, _ = core_algos.compute_grpo_outcome_advantage(
        rewards.clone(), response_mask, index, norm_adv_by_std_in_grpo=False
    )
    torch.testing.assert_close(ours, theirs, rtol=0, atol=0)


@pytest.mark.parametrize("junior_weight", [0.0, 0.3])
@pytest.mark.parametrize("clip_low,clip_high", [(0.2, 0.2), (0.2, 0.28)])
def test_vanilla_policy_loss_with_authorship_gate_equals_verl(junior_weight, clip_low, clip_high):
    rewards, response_mask, authorship, old, new, index = _batch(2)
    adv, _ = grpo.compute_grpo_outcome_advantage(rewards, response_mask, index)
    weights = senior_gate.token_weights(authorship, response_mask, junior_weight)
    ours_cfg = loss_config.PolicyLossConfig(clip_ratio=0.2, clip_ratio_low=clip_low, clip_ratio_high=clip_high)
    verl_cfg = _verl_actor_config(clip_ratio=0.2, clip_ratio_low=clip_low, clip_ratio_high=clip_high)

    new_ours = new.clone().requires_grad_(True)
    new_verl = new.clone().requires_grad_(True)
    ours, ours_m = grpo.get_policy_loss_fn("vanilla")(old, new_ours, adv, weights, "token-mean", ours_cfg)
    verl_mask = weights if junior_weight else weights.bool()
    theirs, theirs_m = core_algos.get_policy_loss_fn("vanilla")(
        old_log_prob=old, log_prob=new_verl, advantages=adv, response_mask=verl_mask,
        loss_agg_mode="token-mean", config=verl_cfg,
    )  # fmt: skip
    torch.testing.assert_close(ours, theirs, rtol=1e-6, atol=1e-7)
    ours.backward()
    theirs.backward()
    torch.testing.assert_close(new_ours.grad, new_verl.grad, rtol=1e-6, atol=1e-8)
    for key in ("pg_clipfrac", "ppo_kl", "pg_clipfrac_lower"):
        assert ours_m[key].item() == pytest.approx(theirs_m[f"actor/{key}"], rel=1e-6, abs=1e-7), key
    assert ours_m["pg_clipfrac"] > 0  # the clip is exercised, not vacuous
    if junior_weight == 0:
        junior = (authorship == 0) & (response_mask > 0)
        assert new_ours.grad[junior].abs().max() == 0


@pytest.mark.parametrize("mode", loss_config.AGG_MODES)
def test_agg_loss_with_float_weights_equals_verl(mode):
    _, response_mask, authorship, _, new, _ = _batch(3)
    weights = senior_gate.token_weights(authorship, response_mask, 0.25)
    weights[0] = 0.0  # a fully masked response is excluded from the seq-mean modes
    loss_mat = new.clone()
    loss_mat[weights == 0] = 1e6  # padding and junior values must never leak in
    ours = grpo.agg_loss(loss_mat, weights, mode)
    torch.testing.assert_close(ours, core_algos.agg_loss(loss_mat, weights, mode), rtol=1e-6, atol=1e-7)
    assert ours.abs() < 1e4  # a leaked 1e6 would show
    # Stricter than verl's seq-mean modes: NaN at weight-0 positions (e.g. junior logits) stays out.
    loss_mat[weights == 0] = float("nan")
    torch.testing.assert_close(grpo.agg_loss(loss_mat, weights, mode), ours, rtol=0, atol=0)


def test_release_denominator_equals_verl_with_the_engines_token_count():
    """`all_response_tokens`: verl's token-mean with batch_num_tokens counted from the ungated loss_mask."""
    _, response_mask, authorship, _, new, _ = _batch(5)
    weights = senior_gate.token_weights(authorship, response_mask, 0.0)
    ours = grpo.agg_loss(new, weights, "token-mean", denominator=response_mask)
    verl = core_algos.agg_loss(new, weights, "token-mean", batch_num_tokens=response_mask.sum())
    torch.testing.assert_close(ours, verl, rtol=1e-6, atol=1e-7)
    assert not torch.allclose(ours, grpo.agg_loss(new, weights, "token-mean"))  # the two settings differ here


@pytest.mark.parametrize("kind", ["k1", "abs", "k2", "low_var_kl"])
def test_kl_penalty_equals_verl(kind):
    _, _, _, old, new, _ = _batch(4)
    torch.testing.assert_close(grpo.kl_penalty(new, old, kind), core_algos.kl_penalty(new, old, kind), rtol=0, atol=0)


def test_entropy_from_logits_equals_verl():
    from verl.utils.torch_functional import entropy_from_logits

    logits = torch.randn(3, 5, 17, generator=torch.Generator().manual_seed(5)) * 4
    torch.testing.assert_close(grpo.entropy_from_logits(logits), entropy_from_logits(logits), rtol=1e-6, atol=1e-6)
