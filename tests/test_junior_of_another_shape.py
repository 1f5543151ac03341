"""A weaker junior of another shape (the zoo's `SMALL_SHAPE`: other depth, width, query and KV heads; one
vocabulary) on the reference engine, the embedded trainer and HF TRL.

The reference engine cannot stack two shapes into one forward (`paired`), so it decodes
such a pair `lockstep` (both models every token) or `lazy` (the author every token, the
other caught up in chunks); both give the same tokens, and each author's log-probs equal
a recompute of that model's full forward.
"""

from __future__ import annotations

import pytest
import torch

from tandem.process.config import TandemConfig
from tandem.reference.engine import TandemEngine
from tandem.models.loading import check_same_vocab, load_model, load_tokenizer
from tandem.rollout.sampling import SamplingConfig
from tandem.process.strategies import REGISTRY
from tandem_app.zoo import SMALL_SHAPE, TinyModelConfig

GREEDY = SamplingConfig(temperature=0.0, max_new_tokens=32)


@pytest.fixture(scope="module")
def small(tiny_dir_small):
    return load_model(tiny_dir_small, dtype="float64")


def test_the_small_shape_differs_in_everything_but_the_vocabulary(tiny_dir, tiny_dir_small, small, senior):
    default = TinyModelConfig()
    differs = [k for k in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                           "num_key_value_heads")
               if getattr(SMALL_SHAPE, k) == getattr(default, k)]
    assert not differs and SMALL_SHAPE.vocab_size == default.vocab_size
    check_same_vocab(load_tokenizer(tiny_dir), load_tokenizer(tiny_dir_small))  # one tokenizer: no error
    assert sum(p.numel() for p in small.parameters()) < sum(p.numel() for p in senior.parameters()) / 3


def test_auto_and_paired_decode_such_a_pair_lockstep(senior, small, tok, prompts):
    for mode in ("auto", "paired"):
        engine = TandemEngine(senior, small, tok, TandemConfig(seed=1), mode=mode)
        assert engine.paired is None
        engine.generate(prompts, GREEDY)
        assert engine.last_mode in ("lockstep", "lazy")


@pytest.mark.parametrize("strategy", sorted(REGISTRY))
def test_lazy_equals_lockstep_and_each_authors_logprobs_equal_its_own_forward(senior, small, tok, prompts, strategy):
    cfg = TandemConfig(selection_strategy=strategy, seed=4)
    sample = SamplingConfig(temperature=1.0, max_new_tokens=32, seed=2)
    lockstep = TandemEngine(senior, small, tok, cfg, mode="lockstep").generate(prompts, sample, junior_logprobs=True)
    lazy = TandemEngine(senior, small, tok, cfg, mode="lazy").generate(prompts, sample, junior_logprobs=True)
    for a, b in zip(lockstep, lazy):
        assert (a.token_ids, a.authorship_mask) == (b.token_ids, b.authorship_mask)
    for r in lockstep:
        ids, p = torch.tensor([r.prompt_ids + r.token_ids]), len(r.prompt_ids)
        emitted = torch.tensor(r.token_ids)[:, None]
        for model, got in ((senior, r.senior_logprobs), (small, r.junior_logprobs)):
            ref = torch.log_softmax(model(ids).logits[0, p - 1 : -1], dim=-1).gather(-1, emitted).squeeze(-1)
            assert torch.allclose(ref, torch.tensor(got, dtype=torch.float64), atol=1e-10)
    if REGISTRY[strategy].draws_coins:
        assert any(0 < sum(r.authorship_mask) < len(r.token_ids) for r in lockstep)  # both models wrote


def test_the_embedded_trainer_trains_beside_a_smaller_junior(tiny_dir, tiny_dir_small, tmp_path):
    from tandem_app.train.grpo_trainer import GRPOTrainer

    from test_train_resume import _cfg, _rows, _text_reward

    cfg = _cfg(tiny_dir, tmp_path / "run", steps=2, tandem=TandemConfig(junior_model=str(tiny_dir_small)))
    trainer = GRPOTrainer(cfg, reward_fn=_text_reward, progress=False)
    assert trainer.engine.paired is None and trainer.junior.config.num_hidden_layers == SMALL_SHAPE.num_hidden_layers
    trainer.train()
    rows = _rows(tmp_path / "run")[1:]
    assert len(rows) == 2 and all(0.0 < r["senior_token_fraction"] < 1.0 for r in rows)
