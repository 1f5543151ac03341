"""The inverse-CDF sampler: its empirical distribution, top-k, top-p, greedy."""

import pytest
import torch

from tandem.errors import TandemError
from tandem.rollout.sampling import SamplingConfig, filtered_probs, sample_tokens


def draw(logits_row, cfg, n=20000, seed=0):
    u = torch.rand(n, generator=torch.Generator().manual_seed(seed), dtype=torch.float64)
    return sample_tokens(logits_row.expand(n, -1), cfg, u)


def test_samples_follow_the_softmax_distribution():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    counts = torch.bincount(draw(logits, SamplingConfig(temperature=1.0)), minlength=4).double() / 20000
    # each frequency has sd <= sqrt(0.25 / 20000) = 0.0035; allow 5 sd
    assert torch.allclose(counts, torch.tensor([0.5, 0.3, 0.15, 0.05], dtype=torch.float64), atol=0.018)


def test_temperature_sharpens_the_distribution():
    logits = torch.log(torch.tensor([[0.6, 0.4]]))
    p = filtered_probs(logits, SamplingConfig(temperature=0.5))[0]
    assert torch.allclose(p, torch.tensor([0.36, 0.16]) / 0.52, atol=1e-6)


def test_top_k_restricts_samples_to_the_k_most_likely_ids():
    logits = torch.tensor([[0.1, 2.0, 0.3, 1.5, -1.0]])
    assert set(draw(logits, SamplingConfig(top_k=2)).tolist()) == {1, 3}


def test_top_p_keeps_the_smallest_prefix_reaching_the_mass():
    logits = torch.log(torch.tensor([[0.5, 0.3, 0.15, 0.05]]))
    assert set(draw(logits, SamplingConfig(top_p=0.75)).tolist()) == {0, 1}


def test_greedy_takes_the_argmax():
    logits = torch.tensor([[0.1, 2.0, 0.3], [5.0, 1.0, 0.0]])
    assert sample_tokens(logits, SamplingConfig(temperature=0.0), torch.zeros(2)).tolist() == [1, 0]


@pytest.mark.parametrize("kwargs, message", [
    ({"temperature": -1}, r"^temperature must be >= 0, got -1$"),
    ({"top_p": 0}, r"^top_p must be in \(0, 1\], got 0$"),
    ({"top_k": -1}, r"^top_k must be >= 0 \(0 = off\), got -1$"),
    ({"max_new_tokens": 0}, r"^max_new_tokens must be >= 1, got 0$"),
])
def test_invalid_sampling_values_are_refused(kwargs, message):
    with pytest.raises(TandemError, match=message):
        SamplingConfig(**kwargs)
