"""The senior gate in verl 0.9.1's real loss (`verl.workers.utils.losses.ppo_loss`), on CPU tensors.

A fake actor batch is laid out as verl's TransferQueue hands it to the training worker
(jagged nested tensors); the gate is applied, the denominator is computed from
`loss_mask` as verl's FSDP engine does, and verl's own `ppo_loss` runs. On-policy
(old = new log-probs) the clipped PPO loss is exactly -sum(A * w) / D, with D = sum(w)
for `loss_denominator=senior_tokens` (ours) and D = every response token for
`all_response_tokens` (the release's), so the expected loss and gradient are known in
closed form.
"""

from __future__ import annotations

import pytest
import torch
from tensordict import TensorDict

pytest.importorskip("verl.workers.utils.losses", reason="verl 0.9.1 is not installed")

from verl.utils import tensordict_utils as tu  # noqa: E402
from verl.workers.config import FSDPActorConfig  # noqa: E402
from verl.workers.utils.losses import ppo_loss  # noqa: E402

from tandem.errors import TandemError  # noqa: E402
from tandem_verl.gate import apply_senior_gate, senior_rollout_probs_diff_max  # noqa: E402

PROMPT_LENS = [2, 3, 2]
RESPONSE_LENS = [4, 2, 5]
AUTHORSHIP = [[1, 0, 0, 1], [0, 0], [1, 1, 0, 1, 0]]  # second response: junior only


def nested(rows, dtype):
    return torch.nested.nested_tensor([torch.tensor(r, dtype=dtype) for r in rows], layout=torch.jagged)


def actor_batch(with_mask: bool = True) -> tuple[TensorDict, torch.Tensor, list[torch.Tensor]]:
    """(data, full-sequence log-prob leaf, per-response advantages) shaped like verl's actor input."""
    torch.manual_seed(0)
    adv = [torch.randn(n) for n in RESPONSE_LENS]
    fields = {
        "prompts": nested([[1] * p for p in PROMPT_LENS], torch.int64),
        "responses": nested([[2] * r for r in RESPONSE_LENS], torch.int64),
        "response_mask": nested([[1] * r for r in RESPONSE_LENS], torch.int64),
        "loss_mask": nested([[1] * r for r in RESPONSE_LENS], torch.int64),
        "advantages": torch.nested.nested_tensor(adv, layout=torch.jagged),
    }
    if with_mask:
        fields["authorship_mask"] = nested(AUTHORSHIP, torch.int64)
    seq_logp = torch.randn(sum(PROMPT_LENS) + sum(RESPONSE_LENS), requires_grad=True)
    data = TensorDict(fields, batch_size=[len(PROMPT_LENS)])
    return data, seq_logp, adv


def run_verl_loss(data: TensorDict, seq_logp: torch.Tensor) -> torch.Tensor:
    """verl's ppo_loss, on-policy, with the engine's token-mean denominator from loss_mask."""
    offsets = torch.tensor([0] + list(torch.tensor(PROMPT_LENS) + torch.tensor(RESPONSE_LENS))).cumsum(0)
    log_probs = torch.nested.nested_tensor_from_jagged(seq_logp, offsets)
    # old log-probs = current ones (on-policy): slice the response part like verl does.
    starts = [int(o) + p - 1 for o, p in zip(offsets[:-1], PROMPT_LENS, strict=True)]
    old = [seq_logp[s : s + r].detach() for s, r in zip(starts, RESPONSE_LENS, strict=True)]
    data["old_log_probs"] = torch.nested.nested_tensor(old, layout=torch.jagged)
    tu.assign_non_tensor(data, dp_size=1, batch_num_tokens=data["loss_mask"].sum().item(), global_batch_size=None)
    cfg = FSDPActorConfig(strategy="fsdp", ppo_mini_batch_size=4, ppo_micro_batch_size_per_gpu=2, rollout_n=1)
    loss, _ = ppo_loss(cfg, {"log_probs": log_probs}, data)
    return loss


def expected_loss(adv, weights) -> torch.Tensor:
    num = sum((-a * torch.tensor(w, dtype=torch.float32)).sum() for a, w in zip(adv, weights, strict=True))
    return num / sum(sum(w) for w in weights)


def expected_grads(seq_logp: torch.Tensor, adv, divide_by: float):
    """(got, want) per response: d loss / d logp = -A * [senior] / D on the response positions."""
    start = 0
    for p, r, mask, a in zip(PROMPT_LENS, RESPONSE_LENS, AUTHORSHIP, adv, strict=True):
        grad = seq_logp.grad[start + p - 1 : start + p - 1 + r]
        yield grad, torch.tensor([-a_t / divide_by if m else 0.0 for a_t, m in zip(a.tolist(), mask, strict=True)])
        start += p + r


def test_gated_verl_loss_is_senior_token_mean():
    data, seq_logp, adv = actor_batch()
    apply_senior_gate(data, 0.0, "senior_tokens")
    loss = run_verl_loss(data, seq_logp)
    torch.testing.assert_close(loss, expected_loss(adv, AUTHORSHIP))


def test_gated_verl_loss_gives_junior_tokens_zero_gradient():
    data, seq_logp, adv = actor_batch()
    apply_senior_gate(data, 0.0, "senior_tokens")
    run_verl_loss(data, seq_logp).backward()
    for got, want in expected_grads(seq_logp, adv, sum(map(sum, AUTHORSHIP))):
        torch.testing.assert_close(got, want)


def test_release_denominator_divides_by_all_response_tokens():
    data, seq_logp, adv = actor_batch()
    apply_senior_gate(data, 0.0, "all_response_tokens")
    loss = run_verl_loss(data, seq_logp)
    n_all = sum(RESPONSE_LENS)
    num = sum((-a * torch.tensor(w, dtype=torch.float32)).sum() for a, w in zip(adv, AUTHORSHIP, strict=True))
    torch.testing.assert_close(loss, num / n_all)
    loss.backward()
    for got, want in expected_grads(seq_logp, adv, n_all):
        torch.testing.assert_close(got, want)


@pytest.mark.parametrize("denominator", ["senior_tokens", "all_response_tokens"])
def test_verl_gate_matches_the_embedded_loss(denominator):
    """verl's ppo_loss behind the gate == tandem.loss.grpo.actor_loss on the padded batch, for both settings."""
    from tandem.loss.grpo import actor_loss
    from tandem.loss.senior_gate import token_weights
    from tandem.loss.loss_config import PolicyLossConfig

    data, seq_logp, adv = actor_batch()
    apply_senior_gate(data, 0.0, denominator)
    verl_loss = run_verl_loss(data, seq_logp)
    T = max(RESPONSE_LENS)
    pad = lambda rows: torch.stack([torch.nn.functional.pad(torch.as_tensor(r, dtype=torch.float32), (0, T - len(r)))
                                    for r in rows])  # noqa: E731
    mask = pad([[1] * r for r in RESPONSE_LENS])
    logp = pad([[0.0] * r for r in RESPONSE_LENS])
    cfg = PolicyLossConfig(loss_denominator=denominator)
    weights = token_weights(pad(AUTHORSHIP), mask, 0.0)
    ours, _ = actor_loss(cfg, logp, logp, pad([a.tolist() for a in adv]), weights, response_mask=mask)
    torch.testing.assert_close(verl_loss, ours)


def test_release_denominator_without_a_loss_mask_counts_the_response_mask():
    data, _, _ = actor_batch()
    del data["loss_mask"]
    apply_senior_gate(data, 0.0, "all_response_tokens")
    assert data["loss_mask"].values().sum().item() == sum(RESPONSE_LENS)


def test_gate_refuses_an_unknown_denominator():
    data, _, _ = actor_batch()
    with pytest.raises(TandemError, match="loss_denominator must be one of"):
        apply_senior_gate(data, 0.0, "senior")


def test_junior_weight_one_equals_ungated_verl_loss():
    data, seq_logp, adv = actor_batch()
    plain = run_verl_loss(data.clone(), seq_logp)
    apply_senior_gate(data, 1.0, "senior_tokens")
    torch.testing.assert_close(run_verl_loss(data, seq_logp), plain)


def test_gate_fails_closed_without_authorship_mask():
    data, _, _ = actor_batch(with_mask=False)
    with pytest.raises(TandemError, match="authorship_mask"):
        apply_senior_gate(data, 0.0, "senior_tokens")


def test_gate_refuses_mask_with_other_lengths():
    data, _, _ = actor_batch()
    data["authorship_mask"] = nested([[1, 0, 0], [0, 0, 1], [1, 1, 0, 1, 0]], torch.int64)
    with pytest.raises(TandemError, match="lengths"):
        apply_senior_gate(data, 0.0, "senior_tokens")


def test_gate_counts_senior_fraction_and_junior_only_responses():
    data, _, _ = actor_batch()
    counts = apply_senior_gate(data, 0.0, "senior_tokens")
    m = counts.metrics()
    assert m["tandem/senior_token_fraction"] == pytest.approx(5 / 11)
    assert m["tandem/junior_only_response_fraction"] == pytest.approx(1 / 3)
    assert m["tandem/mean_handoffs"] == pytest.approx((2 + 0 + 3) / 3)  # tandem.rollout.contract's names, verl's prefix


def test_gate_handles_padded_layout():
    mask = torch.tensor([[1, 1, 1, 0], [1, 1, 0, 0]])
    data = TensorDict(
        {"response_mask": mask, "authorship_mask": torch.tensor([[1, 0, 1, 1], [0, 1, 1, 1]])}, batch_size=[2]
    )
    counts = apply_senior_gate(data, 0.0, "senior_tokens")
    assert data["response_mask"].tolist() == [[1, 0, 1, 0], [0, 1, 0, 0]]
    assert counts.senior_tokens == 3 and counts.response_tokens == 5


@pytest.mark.parametrize("weight, gated", [(0.0, 11 - 5), (1.0, 0)])
def test_gate_counts_the_junior_tokens_it_gives_weight_zero(weight, gated):
    data, _, _ = actor_batch()
    counts = apply_senior_gate(data, weight, "senior_tokens")
    assert counts.metrics()["tandem/gated_junior_tokens"] == gated


def test_senior_rollout_gap_reads_senior_tokens_only():
    """A stale junior-token log-prob (the author's, not the trainer's senior) does not count; a senior one does."""
    data, _, _ = actor_batch()
    old = [[-1.0] * r for r in RESPONSE_LENS]
    rollout = [row[:] for row in old]
    rollout[0][1] = -3.0  # a junior token (AUTHORSHIP[0][1] == 0): the junior's log-prob, ignored
    rollout[2][3] = -1.5  # a senior token: the rollout's senior was 0.145 away in probability
    data["old_log_probs"] = nested(old, torch.float32)
    data["rollout_log_probs"] = nested(rollout, torch.float32)
    gap = senior_rollout_probs_diff_max(data)
    assert gap == pytest.approx(torch.tensor(-1.0).exp().item() - torch.tensor(-1.5).exp().item(), abs=1e-6)
    rollout[2][3] = -1.0
    data["rollout_log_probs"] = nested(rollout, torch.float32)
    assert senior_rollout_probs_diff_max(data) == 0.0


def test_senior_rollout_gap_is_absent_without_rollout_log_probs():
    data, _, _ = actor_batch()
    assert senior_rollout_probs_diff_max(data) is None
