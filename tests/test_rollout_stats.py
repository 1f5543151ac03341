"""The one home of rollout statistics (`tandem.rollout.contract.rollout_stats`) and its metric names."""

from __future__ import annotations

import torch

from tandem.rollout.contract import (
    JUNIOR_ONLY_RESPONSE_FRACTION,
    MEAN_HANDOFFS,
    SENIOR_TOKEN_FRACTION,
    RolloutStats,
    rollout_stats,
    stats_of_masks,
)

MASKS = [[1, 0, 0, 1], [0, 0], [1, 1, 0, 1, 0], []]  # handoffs 2, 0, 3, 0; the second is junior-only


def test_counts_of_hand_built_masks():
    s = stats_of_masks(MASKS)
    assert s == RolloutStats(responses=4, response_tokens=11, senior_tokens=5, handoffs=5, junior_only_responses=1)
    assert s.metrics() == {SENIOR_TOKEN_FRACTION: 5 / 11, MEAN_HANDOFFS: 5 / 4, JUNIOR_ONLY_RESPONSE_FRACTION: 1 / 4}


def test_padding_never_counts_whatever_the_mask_holds_there():
    authorship = torch.tensor([[1, 0, 1, 1], [0, 1, 0, 0]])  # past each response: junk
    valid = torch.tensor([[1, 1, 0, 0], [1, 1, 1, 0]])
    s = rollout_stats(authorship, valid)
    assert (s.response_tokens, s.senior_tokens, s.handoffs) == (5, 2, 3)


def test_a_solo_batch_is_all_senior_without_handoffs():
    valid = torch.tensor([[1, 1, 1], [1, 1, 0]])
    assert rollout_stats(valid, valid).metrics() == {SENIOR_TOKEN_FRACTION: 1.0, MEAN_HANDOFFS: 0.0,
                                                     JUNIOR_ONLY_RESPONSE_FRACTION: 0.0}


def test_stats_add_up_across_batches_or_ranks_as_tensors():
    a, b = stats_of_masks(MASKS[:2]), stats_of_masks(MASKS[2:])
    assert RolloutStats.from_tensor(a.as_tensor() + b.as_tensor()) == stats_of_masks(MASKS)
    assert stats_of_masks([]).metrics(prefix="tandem/")["tandem/" + SENIOR_TOKEN_FRACTION] == 0.0
