"""The authorship gate: junior tokens weigh `junior_token_loss_weight`, and tandem batches fail closed."""

from __future__ import annotations

import pytest
import torch

from tandem.loss import grpo, loss_config, senior_gate
from tandem.errors import TandemError
from tandem.models.loading import load_model
from tandem.loss.logprobs import join_prompt_response, response_logprobs


def test_token_weights_are_one_for_senior_junior_weight_for_junior_zero_for_padding():
    authorship = torch.tensor([[1, 0, 1, 0], [0, 0, 1, 1]])
    response_mask = torch.tensor([[1, 1, 1, 0], [1, 1, 1, 1]])
    w = senior_gate.token_weights(authorship, response_mask, 0.25)
    assert w.dtype == torch.float32
    assert w.tolist() == [[1.0, 0.25, 1.0, 0.0], [0.25, 0.25, 1.0, 1.0]]
    assert senior_gate.token_weights(None, response_mask).tolist() == response_mask.float().tolist()


def test_tandem_batch_without_authorship_mask_is_an_error():
    batch = {"responses": torch.zeros(2, 3, dtype=torch.long), "response_mask": torch.ones(2, 3)}
    with pytest.raises(TandemError, match="authorship_mask"):
        senior_gate.require_authorship_mask(batch, tandem=True)
    with pytest.raises(TandemError, match="authorship_mask"):
        senior_gate.require_authorship_mask(None, tandem=True)
    assert senior_gate.require_authorship_mask(batch, tandem=False) is None


def test_authorship_mask_of_the_wrong_shape_is_an_error():
    batch = {"responses": torch.zeros(2, 3, dtype=torch.long), "authorship_mask": torch.ones(2, 4)}
    with pytest.raises(TandemError, match="shape"):
        senior_gate.require_authorship_mask(batch, tandem=True)
    batch["authorship_mask"] = torch.ones(2, 3)
    assert senior_gate.require_authorship_mask(batch, tandem=True).shape == (2, 3)


def test_response_written_entirely_by_the_junior_contributes_nothing():
    log_prob = torch.zeros(2, 3, requires_grad=True)
    adv = torch.tensor([[1.0] * 3, [-1.0] * 3])
    weights = senior_gate.token_weights(torch.tensor([[0, 0, 0], [0, 0, 0]]), torch.ones(2, 3))
    loss, _ = grpo.compute_policy_loss_vanilla(log_prob.detach(), log_prob, adv, weights)
    loss.backward()
    assert loss.item() == 0.0 and torch.isfinite(loss)
    assert log_prob.grad.abs().max() == 0


def _tiny_batch(tiny_dir):
    model = load_model(tiny_dir)
    model.requires_grad_(True)
    g = torch.Generator().manual_seed(0)
    prompts = [torch.randint(3, 300, (n,), generator=g).tolist() for n in (5, 7, 6, 4)]
    responses = [torch.randint(3, 300, (n,), generator=g).tolist() for n in (9, 6, 8, 9)]
    inputs = join_prompt_response(prompts, responses, pad_id=0)
    response_mask = torch.zeros(4, 9)
    for i, r in enumerate(responses):
        response_mask[i, : len(r)] = 1
    authorship = torch.randint(0, 2, (4, 9), generator=g) * response_mask.long()
    adv = torch.tensor([1.0, -0.5, 0.7, -1.2])[:, None] * response_mask
    return model, inputs, response_mask, authorship, adv


def _param_grads(model, inputs, response_mask, authorship, adv, junior_weight):
    model.zero_grad(set_to_none=True)
    logp, _ = response_logprobs(model, *inputs)
    logp.retain_grad()
    weights = senior_gate.token_weights(authorship, response_mask, junior_weight)
    loss, _ = grpo.actor_loss(loss_config.PolicyLossConfig(), logp, logp.detach(), adv, weights)
    loss.backward()
    return logp.grad.clone(), [p.grad.clone() for p in model.parameters() if p.grad is not None]


def test_junior_tokens_get_zero_gradient_at_weight_zero(tiny_dir):
    model, inputs, response_mask, authorship, adv = _tiny_batch(tiny_dir)
    junior = (authorship == 0) & (response_mask > 0)
    senior = authorship == 1
    logp_grad, grads = _param_grads(model, inputs, response_mask, authorship, adv, 0.0)
    assert logp_grad[junior].abs().max() == 0
    assert logp_grad[senior].abs().min() > 0
    # The model's gradient does not depend on what the junior's tokens were rewarded with.
    adv_scrambled = torch.where(junior, torch.randn(adv.shape) * 5, adv)
    _, grads_scrambled = _param_grads(model, inputs, response_mask, authorship, adv_scrambled, 0.0)
    assert all(torch.equal(a, b) for a, b in zip(grads, grads_scrambled))
    assert sum(g.abs().sum() for g in grads) > 0


def test_junior_tokens_get_weighted_gradient_at_positive_weight(tiny_dir):
    model, inputs, response_mask, authorship, adv = _tiny_batch(tiny_dir)
    logp_grad, _ = _param_grads(model, inputs, response_mask, authorship, adv, 0.5)
    # At ratio 1 the token-mean surrogate's gradient is -A_t * w_t / sum(w): junior tokens count half.
    weights = senior_gate.token_weights(authorship, response_mask, 0.5)
    torch.testing.assert_close(logp_grad, -adv * weights / weights.sum(), rtol=1e-5, atol=1e-8)
    junior = (authorship == 0) & (response_mask > 0)
    assert logp_grad[junior].abs().min() > 0


# --- the token-mean's denominator (`loss_denominator`) ------------------------------------------

HAND_AUTHORSHIP = torch.tensor([[1, 0, 0, 1, 0], [0, 0, 0, 0, 0], [1, 1, 0, 1, 0]])
HAND_MASK = torch.tensor([[1, 1, 1, 1, 0], [1, 1, 0, 0, 0], [1, 1, 1, 1, 1]])
HAND_ADV = torch.tensor([[0.5, -1.0, 2.0, 1.5, 9.0], [3.0, 3.0, 9.0, 9.0, 9.0], [-0.5, -0.25, 4.0, 1.0, -2.0]])


@pytest.mark.parametrize(
    "denominator, divide_by",
    [("senior_tokens", 5.0), ("all_response_tokens", 11.0)],  # 5 senior tokens, 11 response tokens
)
def test_loss_denominator_on_a_hand_built_batch(denominator, divide_by):
    """On-policy, loss = -sum(A * w) / D and d loss / d logp = -A * w / D, with D by the setting."""
    log_prob = torch.zeros(3, 5, requires_grad=True)
    weights = senior_gate.token_weights(HAND_AUTHORSHIP, HAND_MASK, 0.0)
    cfg = loss_config.PolicyLossConfig(loss_denominator=denominator)
    loss, _ = grpo.actor_loss(cfg, log_prob, log_prob.detach(), HAND_ADV, weights, response_mask=HAND_MASK)
    loss.backward()
    senior_adv = 0.5 + 1.5 - 0.5 - 0.25 + 1.0  # A over the senior tokens
    assert loss.item() == pytest.approx(-senior_adv / divide_by, abs=1e-7)
    want = -HAND_ADV * HAND_AUTHORSHIP * HAND_MASK / divide_by
    torch.testing.assert_close(log_prob.grad, want.float(), rtol=0, atol=1e-7)


def test_release_denominator_needs_the_response_mask():
    weights = senior_gate.token_weights(HAND_AUTHORSHIP, HAND_MASK, 0.0)
    cfg = loss_config.PolicyLossConfig(loss_denominator="all_response_tokens")
    with pytest.raises(TandemError, match="needs the response_mask"):
        grpo.actor_loss(cfg, torch.zeros(3, 5), torch.zeros(3, 5), HAND_ADV, weights)


def test_trainer_honours_the_loss_denominator(tiny_dir, tmp_path):
    """The trainer's update: the release's gradient is the senior fraction times ours (one on-policy step)."""
    from tandem.rollout.sampling import SamplingConfig
    from tandem_app.train.grpo_trainer import GRPOTrainer
    from tandem_app.train.train_config import TrainConfig

    norms, fracs = {}, {}
    for denominator in ("senior_tokens", "all_response_tokens"):
        cfg = TrainConfig(
            model=str(tiny_dir), out=str(tmp_path / denominator), prompts_per_step=2, group_size=2,
            sampling=SamplingConfig(max_new_tokens=8), n_train_problems=4, n_val_problems=1, ppo_mini_batches=1,
            grad_clip=1e9,
        )
        cfg.loss.loss_denominator = denominator
        trainer = GRPOTrainer(cfg, progress=False)
        batch = trainer.rollout(0)
        batch["token_level_rewards"][0, 0] += 1.0  # a non-zero advantage in every case
        weights = senior_gate.token_weights(batch["authorship_mask"], batch["response_mask"])
        fracs[denominator] = (weights.sum() / batch["response_mask"].sum()).item()
        norms[denominator] = trainer.update(batch, 0)["grad_norm"]
    assert fracs["senior_tokens"] < 1
    assert norms["all_response_tokens"] == pytest.approx(norms["senior_tokens"] * fracs["senior_tokens"], rel=1e-4)
