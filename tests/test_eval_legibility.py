"""Legibility (teacher-forced cross-entropy) and drift (Jensen-Shannon divergence in bits)."""

from __future__ import annotations

import math
from collections import Counter

import pytest
import torch

from tandem.errors import TandemError
from tandem.metrics import js_divergence, junior_cross_entropy, top_shifts
from tandem_eval.analysis.legibility import drift


def test_js_divergence_is_zero_for_identical_and_one_bit_for_disjoint_distributions():
    assert js_divergence(Counter({1: 2, 2: 6}), Counter({1: 1, 2: 3})) == pytest.approx(0.0, abs=1e-15)
    assert js_divergence(Counter({1: 5}), Counter({2: 7})) == pytest.approx(1.0)


def test_js_divergence_matches_its_definition_in_bits():
    p, q = {0: 0.5, 1: 0.5}, {1: 0.25, 2: 0.75}
    m = {t: (p.get(t, 0) + q.get(t, 0)) / 2 for t in (0, 1, 2)}

    def kl(a):
        return sum(v * math.log2(v / m[t]) for t, v in a.items())

    expected = 0.5 * kl(p) + 0.5 * kl(q)
    assert js_divergence(Counter({0: 2, 1: 2}), Counter({1: 1, 2: 3})) == pytest.approx(expected)


def test_js_divergence_needs_tokens_on_both_sides():
    with pytest.raises(TandemError):
        js_divergence(Counter(), Counter({1: 1}))


def test_top_shifts_orders_tokens_by_frequency_change():
    shifts = top_shifts(Counter({1: 3, 2: 1}), Counter({2: 4}), k=2)
    assert [(s["token_id"], s["shift"]) for s in shifts] == [(1, 0.75), (2, -0.75)]


def test_drift_counts_only_problems_answered_by_both():
    senior = [{"benchmark": "b", "problem_id": "p1", "response_ids": [1, 1]},
              {"benchmark": "b", "problem_id": "p2", "response_ids": [9, 9, 9]}]
    junior = [{"benchmark": "b", "problem_id": "p1", "response_ids": [1, 1]}]
    result = drift(senior, junior)
    assert result["n_problems"] == 1 and result["senior_tokens"] == 2 and result["js_bits"] == 0.0


def test_batched_cross_entropy_equals_one_response_at_a_time(tiny_dir):
    from tandem.models.loading import load_model

    model = load_model(tiny_dir)
    pairs = [([1, 5, 9], [20, 21, 22, 23]), ([1, 7], [30]), ([1, 2, 3, 4, 5, 6], [40, 41])]
    batched = junior_cross_entropy(model, pairs, batch_size=3, progress=False)
    for (prompt, response), scored in zip(pairs, batched):
        ids = torch.tensor([prompt + response])
        with torch.no_grad():
            logp = torch.log_softmax(model(input_ids=ids).logits[0].float(), dim=-1)
        expected = -sum(float(logp[len(prompt) - 1 + t, tok]) for t, tok in enumerate(response))
        assert scored.n_tokens == len(response)
        assert scored.nll_sum == pytest.approx(expected, rel=1e-4)


def test_responses_beyond_the_juniors_context_are_dropped(tiny_dir):
    from tandem.models.loading import load_model

    model = load_model(tiny_dir)
    too_long = model.config.max_position_embeddings
    scored = junior_cross_entropy(model, [([1] * too_long, [2]), ([1], [])], progress=False)
    assert scored == [None, None]
