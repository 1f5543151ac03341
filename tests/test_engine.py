"""The reference engine on the tiny zoo, in float64 on CPU.

Pins the design note's invariants: extreme probabilities reproduce solo generation, lazy
decoding equals lockstep, the emitted mask equals its replay, a request is independent of
its batch, and both KV caches agree with a recompute-from-scratch reference.
"""

import math

import pytest
import torch

from tandem.process.boundaries import config_boundary_lookup
from tandem.process.config import TandemConfig
from tandem.reference.engine import TandemEngine
from tandem.errors import TandemError
from tandem.models.loading import load_model, load_tokenizer
from tandem.process.authorship import replay_mask
from tandem.rollout.sampling import SamplingConfig
from tandem.process.strategies import REGISTRY


SAMPLE = SamplingConfig(temperature=1.0, max_new_tokens=48, seed=5)


def tokens_of(rollouts):
    return [r.token_ids for r in rollouts]


def test_prob_senior_one_reproduces_the_seniors_solo_generation(senior, junior, tok, prompts):
    solo = TandemEngine(senior, None, tok).generate(prompts, SAMPLE, solo=True)
    tandem = TandemEngine(senior, junior, tok, TandemConfig(prob_senior=1.0)).generate(prompts, SAMPLE)
    assert tokens_of(tandem) == tokens_of(solo)
    assert all(set(r.authorship_mask) == {1} for r in tandem)


def test_prob_senior_zero_reproduces_the_juniors_solo_generation(senior, junior, tok, prompts):
    solo = TandemEngine(junior, None, tok).generate(prompts, SAMPLE, solo=True)
    tandem = TandemEngine(senior, junior, tok, TandemConfig(prob_senior=0.0)).generate(prompts, SAMPLE)
    assert tokens_of(tandem) == tokens_of(solo)
    assert all(set(r.authorship_mask) == {0} for r in tandem)


@pytest.mark.parametrize("strategy", sorted(REGISTRY))
def test_lazy_decoding_equals_lockstep(senior, junior, tok, prompts, strategy):
    cfg = TandemConfig(selection_strategy=strategy, chunk_size=5)
    a = TandemEngine(senior, junior, tok, cfg, mode="lockstep").generate(prompts, SAMPLE, junior_logprobs=True)
    b = TandemEngine(senior, junior, tok, cfg, mode="lazy").generate(prompts, SAMPLE, junior_logprobs=True)
    assert tokens_of(a) == tokens_of(b)
    assert [r.authorship_mask for r in a] == [r.authorship_mask for r in b]
    for x, y in zip(a, b):
        assert max(abs(p - q) for p, q in zip(x.senior_logprobs + x.junior_logprobs,
                                               y.senior_logprobs + y.junior_logprobs)) < 1e-9


def test_lazy_decoding_with_a_small_lag_bound_equals_lockstep(senior, junior, tok, prompts):
    cfg = TandemConfig(prob_senior=0.8)
    a = TandemEngine(senior, junior, tok, cfg).generate(prompts, SAMPLE)
    b = TandemEngine(senior, junior, tok, cfg, mode="lazy", max_lag=3).generate(prompts, SAMPLE)
    assert tokens_of(a) == tokens_of(b)


@pytest.mark.parametrize("strategy", sorted(REGISTRY))
def test_emitted_mask_equals_its_replay_from_tokens(senior, junior, tok, prompts, strategy):
    cfg = TandemConfig(selection_strategy=strategy, seed=4, chunk_size=3)
    engine = TandemEngine(senior, junior, tok, cfg)
    out = engine.generate(prompts, SAMPLE, request_keys=[7, 8, 9, 10])
    lookup = config_boundary_lookup(cfg, tok, engine.vocab_size)
    for r in out:
        replayed = replay_mask(cfg, lookup, torch.tensor([r.token_ids]), [r.request_key])[0].tolist()
        assert replayed == r.authorship_mask


def test_a_request_gets_the_same_tokens_and_coins_in_a_batch_of_1_and_of_64(senior, junior, tok, prompts):
    engine = TandemEngine(senior, junior, tok, TandemConfig(seed=1))
    batch = [prompts[i % 4] for i in range(64)]
    keys = list(range(100, 164))
    big = engine.generate(batch, SAMPLE, request_keys=keys)
    for i in (0, 21, 63):
        alone = engine.generate([batch[i]], SAMPLE, request_keys=[keys[i]])[0]
        assert alone.token_ids == big[i].token_ids
        assert alone.authorship_mask == big[i].authorship_mask


@pytest.mark.parametrize("mode", ["lockstep", "lazy"])
def test_kv_caches_agree_with_a_recompute_from_scratch_under_greedy_decoding(senior, junior, tok, prompts, mode):
    greedy = SamplingConfig(temperature=0.0, max_new_tokens=32)
    out = TandemEngine(senior, junior, tok, TandemConfig(seed=3), mode=mode).generate(prompts, greedy,
                                                                                      junior_logprobs=True)
    for r in out:
        ids = torch.tensor([r.prompt_ids + r.token_ids])
        p = len(r.prompt_ids)
        full = {}
        for name, model in (("senior", senior), ("junior", junior)):
            full[name] = torch.log_softmax(model(ids).logits[0, p - 1 : -1], dim=-1)
        for t, token in enumerate(r.token_ids):
            author = "senior" if r.authorship_mask[t] else "junior"
            assert int(full[author][t].argmax()) == token
        for name, got in (("senior", r.senior_logprobs), ("junior", r.junior_logprobs)):
            ref = full[name].gather(-1, torch.tensor(r.token_ids)[:, None]).squeeze(-1)
            assert torch.allclose(ref, torch.tensor(got, dtype=torch.float64), atol=1e-10)


def test_logprobs_are_reported_for_the_token_actually_emitted_at_junior_positions(senior, junior, tok, prompts):
    # The release reported the senior's log-prob of its own candidate where the junior wrote.
    out = TandemEngine(senior, junior, tok, TandemConfig(seed=2)).generate(prompts, SAMPLE)
    r = next(r for r in out if 0 in r.authorship_mask)
    ids = torch.tensor([r.prompt_ids + r.token_ids])
    lp = torch.log_softmax(senior(ids).logits[0, len(r.prompt_ids) - 1 : -1], -1)
    ref = lp.gather(-1, torch.tensor(r.token_ids)[:, None]).squeeze(-1)
    assert torch.allclose(ref, torch.tensor(r.senior_logprobs, dtype=torch.float64), atol=1e-10)


def test_generation_is_deterministic_for_a_seed_and_changes_with_it(senior, junior, tok, prompts):
    engine = TandemEngine(senior, junior, tok)
    a, b = engine.generate(prompts, SAMPLE), engine.generate(prompts, SAMPLE)
    c = engine.generate(prompts, SamplingConfig(temperature=1.0, max_new_tokens=48, seed=6))
    assert tokens_of(a) == tokens_of(b) and tokens_of(a) != tokens_of(c)


def test_token_budget_ends_responses_with_finish_reason_length(senior, tok, prompts):
    out = TandemEngine(senior, None, tok).generate(prompts, SamplingConfig(max_new_tokens=5), solo=True)
    assert all(len(r.token_ids) <= 5 for r in out)
    assert all(r.finish_reason == "length" for r in out if len(r.token_ids) == 5)


def test_eos_stops_a_response_and_is_kept_as_its_last_token(senior, tok, prompts):
    eos = 42  # treat a frequent id as EOS to force early stops
    out = TandemEngine(senior, None, tok).generate(
        prompts * 4, SamplingConfig(max_new_tokens=64, eos_token_ids=(eos,), seed=1), solo=True)
    stopped = [r for r in out if r.finish_reason == "stop"]
    assert stopped, "no response hit the forced EOS id"
    assert all(r.token_ids[-1] == eos and eos not in r.token_ids[:-1] for r in stopped)


def test_stop_strings_end_a_response_and_are_cut_from_its_text(senior, junior, tok, prompts):
    free = TandemEngine(senior, junior, tok).generate(prompts, SAMPLE)
    stop = next(tok.decode([t]) for r in free for t in r.token_ids if len(tok.decode([t]).strip()) >= 2)
    out = TandemEngine(senior, junior, tok).generate(
        prompts, SamplingConfig(temperature=1.0, max_new_tokens=48, seed=5, stop_strings=(stop,)))
    hits = [r for r in out if r.finish_reason == "stop"]
    assert hits and all(stop not in r.text for r in hits)


def test_top_k_of_one_equals_greedy(senior, tok, prompts):
    engine = TandemEngine(senior, None, tok)
    greedy = engine.generate(prompts, SamplingConfig(temperature=0.0, max_new_tokens=16), solo=True)
    top1 = engine.generate(prompts, SamplingConfig(temperature=0.7, top_k=1, max_new_tokens=16), solo=True)
    assert tokens_of(greedy) == tokens_of(top1)


def test_prompts_of_different_lengths_decode_as_if_alone(senior, tok, prompts):
    engine = TandemEngine(senior, None, tok)
    together = engine.generate(prompts, SAMPLE, request_keys=[1, 2, 3, 4], solo=True)
    alone = [engine.generate([p], SAMPLE, request_keys=[k], solo=True)[0] for p, k in zip(prompts, [1, 2, 3, 4])]
    assert tokens_of(together) == tokens_of(alone)


def test_every_logprob_is_filled_and_finite(senior, junior, tok, prompts):
    for mode in ("lockstep", "lazy"):
        for r in TandemEngine(senior, junior, tok, mode=mode).generate(prompts, SAMPLE, junior_logprobs=True):
            assert all(math.isfinite(v) for v in r.senior_logprobs + r.junior_logprobs)


@pytest.mark.parametrize("mode", ["lockstep", "lazy", "paired"])
def test_junior_logprobs_are_reported_only_when_asked_and_change_nothing_else(senior, junior, tok, prompts, mode):
    engine = TandemEngine(senior, junior, tok, mode=mode)
    plain, asked = engine.generate(prompts, SAMPLE), engine.generate(prompts, SAMPLE, junior_logprobs=True)
    assert all(r.junior_logprobs is None for r in plain)
    assert all(r.junior_logprobs is not None and len(r.junior_logprobs) == len(r.token_ids) for r in asked)
    assert tokens_of(plain) == tokens_of(asked) and [r.senior_logprobs for r in plain] == [r.senior_logprobs for r in asked]


def test_lazy_mode_catches_the_junior_up_at_the_end_only_for_its_logprobs(senior, junior, tok, prompts):
    engine = TandemEngine(senior, junior, tok, TandemConfig(prob_senior=1.0), mode="lazy")  # the junior never writes
    engine.generate(prompts[:1], SAMPLE)
    plain = engine.last_forward_calls
    out = engine.generate(prompts[:1], SAMPLE, junior_logprobs=True)
    assert engine.last_forward_calls == plain + 1  # one forward of the junior over the whole response
    assert all(math.isfinite(v) for v in out[0].junior_logprobs)


def test_junior_with_another_vocabulary_is_refused(senior, tok, tmp_path):
    from tandem_app.zoo import TinyModelConfig, build_tiny

    other = build_tiny(tmp_path / "other", seed=0, cfg=TinyModelConfig(vocab_size=600))
    with pytest.raises(TandemError, match="vocab|logits"):
        TandemEngine(senior, load_model(other, dtype="float64"), tok)


def test_tokenizers_with_different_vocabularies_are_refused(senior, junior, tok, shared_data):
    from transformers import AutoTokenizer

    qwen = AutoTokenizer.from_pretrained(str(shared_data / "tokenizers" / "qwen3"))
    with pytest.raises(TandemError, match="vocabularies differ"):
        TandemEngine(senior, junior, tok, junior_tokenizer=qwen)


def test_prompt_longer_than_the_context_is_refused(senior, tok):
    with pytest.raises(TandemError, match="context"):
        TandemEngine(senior, None, tok).generate([[5] * 1020], SamplingConfig(max_new_tokens=8), solo=True)


def test_tandem_generation_without_a_junior_is_refused(senior, tok, prompts):
    with pytest.raises(TandemError, match="junior"):
        TandemEngine(senior, None, tok).generate(prompts, SAMPLE)


def test_out_of_vocabulary_prompt_ids_are_refused(senior, tok):
    with pytest.raises(TandemError, match="vocabulary"):
        TandemEngine(senior, None, tok).generate([[1, 99999]], SAMPLE, solo=True)
