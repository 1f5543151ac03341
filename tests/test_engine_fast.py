"""The engine's fast paths in float64 on CPU: each must give exactly what lockstep gives.

Pins the paired decoder (senior and junior in one stacked forward), finished rows
leaving the batch, the decoder's attention layouts for row subsets and catch-up chunks,
the weight snapshot taken at every `generate`, and the decoder on every supported
architecture against Hugging Face's own forward.
"""

import pytest
import torch

from tandem.process.config import TandemConfig
from tandem.reference.decoder import CachedDecoder
from tandem.reference.engine import TandemEngine
from tandem.models.loading import load_model, load_tokenizer
from tandem.rollout.sampling import SamplingConfig


SAMPLE = SamplingConfig(temperature=1.0, max_new_tokens=40, seed=5)
# One id in 16 ends a response: rows of random tiny models stop at scattered steps.
EARLY_EOS = SamplingConfig(temperature=1.0, max_new_tokens=40, seed=5, eos_token_ids=tuple(range(0, 512, 16)))


def tiny_model(model_type: str, seed: int = 0, **overrides):
    """A random float64 model of `model_type` with the zoo's vocabulary size."""
    from transformers import AutoConfig, AutoModelForCausalLM

    cfg = dict(vocab_size=512, hidden_size=64, intermediate_size=96, num_hidden_layers=2, num_attention_heads=4,
               num_key_value_heads=2, max_position_embeddings=256)
    cfg.update(overrides)
    torch.manual_seed(seed)
    model = AutoModelForCausalLM.from_config(AutoConfig.for_model(model_type, **cfg), dtype=torch.float64)
    return model.eval().requires_grad_(False)


def assert_same_rollouts(a, b):
    assert [r.token_ids for r in a] == [r.token_ids for r in b]
    assert [r.authorship_mask for r in a] == [r.authorship_mask for r in b]
    assert [r.finish_reason for r in a] == [r.finish_reason for r in b]
    for x, y in zip(a, b):
        got, want = x.senior_logprobs + x.junior_logprobs, y.senior_logprobs + y.junior_logprobs
        assert max(abs(p - q) for p, q in zip(got, want)) < 1e-9


def test_paired_decoding_equals_lockstep(senior, junior, tok, prompts):
    cfg = TandemConfig(selection_strategy="word", seed=3)
    paired = TandemEngine(senior, junior, tok, cfg, mode="paired")
    assert paired.mode == "paired"
    assert_same_rollouts(paired.generate(prompts, SAMPLE, junior_logprobs=True),
                         TandemEngine(senior, junior, tok, cfg, mode="lockstep").generate(prompts, SAMPLE,
                                                                                         junior_logprobs=True))


def test_paired_decoding_runs_one_forward_per_step(senior, junior, tok, prompts):
    engine = TandemEngine(senior, junior, tok, mode="paired")
    engine.generate(prompts, SamplingConfig(max_new_tokens=12, eos_token_ids=()))
    assert engine.last_forward_calls == 12  # the prompt forward, then one per token but the last


def test_auto_mode_decodes_one_prompt_lazily_and_a_batch_paired(senior, junior, tok, prompts):
    cfg = TandemConfig(selection_strategy="word", seed=3)
    auto = TandemEngine(senior, junior, tok, cfg)
    assert auto.mode == "auto"
    for batch, picked in ((prompts[:1], "lazy"), (prompts, "paired")):
        out = auto.generate(batch, SAMPLE, junior_logprobs=True)
        assert auto.last_mode == picked
        lockstep = TandemEngine(senior, junior, tok, cfg, mode="lockstep")
        assert_same_rollouts(out, lockstep.generate(batch, SAMPLE, junior_logprobs=True))


def test_auto_mode_runs_lockstep_for_a_batch_when_the_junior_has_another_shape(senior, tok, prompts):
    other = tiny_model("qwen3", hidden_size=32, head_dim=8, intermediate_size=48)
    engine = TandemEngine(senior, other, tok)
    engine.generate(prompts, SAMPLE)
    assert engine.last_mode == "lockstep" and engine.decoding_mode(1) == "lazy"


def test_lazy_decoding_of_one_prompt_runs_one_forward_per_token(senior, junior, tok, prompts):
    # The author's forward carries the tokens it missed; only the final catch-up is extra.
    engine = TandemEngine(senior, junior, tok, TandemConfig(selection_strategy="word", seed=3), mode="lazy")
    out = engine.generate(prompts[:1], SamplingConfig(max_new_tokens=30, eos_token_ids=()))
    assert 30 <= engine.last_forward_calls <= 31 and 0 < out[0].senior_token_fraction < 1


@pytest.mark.parametrize("mode", ["paired", "lazy"])
def test_rows_finishing_at_different_steps_decode_as_in_lockstep(senior, junior, tok, prompts, mode):
    cfg = TandemConfig(seed=1)
    ref = TandemEngine(senior, junior, tok, cfg, mode="lockstep").generate(prompts * 2, EARLY_EOS, junior_logprobs=True)
    assert len({len(r.token_ids) for r in ref}) > 2, "rows should stop at different steps"
    got = TandemEngine(senior, junior, tok, cfg, mode=mode).generate(prompts * 2, EARLY_EOS, junior_logprobs=True)
    assert_same_rollouts(got, ref)


def test_paired_mode_falls_back_to_lockstep_for_a_junior_of_another_shape(senior, tok, prompts):
    other = tiny_model("qwen3", hidden_size=128, intermediate_size=256, num_hidden_layers=3, head_dim=32)
    engine = TandemEngine(senior, other, tok, mode="paired")
    assert engine.mode == "lockstep" and engine.paired is None
    assert_same_rollouts(engine.generate(prompts, SAMPLE, junior_logprobs=True),
                         TandemEngine(senior, other, tok, mode="lockstep").generate(prompts, SAMPLE,
                                                                                     junior_logprobs=True))


def test_paired_decoder_gives_each_model_its_own_hidden_states(senior, junior):
    pair, alone = CachedDecoder(senior, junior), [CachedDecoder(senior), CachedDecoder(junior)]
    tokens = torch.randint(0, 512, (3, 7))
    n_new = torch.tensor([7, 2, 5])
    out = pair.forward(pair.begin(3, 16), None, tokens, n_new)
    for m, dec in enumerate(alone):
        assert torch.allclose(out[m], dec.forward(dec.begin(3, 16), None, tokens, n_new)[0], atol=1e-12)


@pytest.mark.parametrize("rows", [[1], [0, 2, 3, 5], [1, 2, 3, 4, 5]], ids=["gathered", "half", "most"])
def test_feeding_a_subset_of_rows_equals_feeding_each_row_alone(senior, rows):
    # Covers gathered K/V, attention over every row, and one-token rows mixed with catch-up chunks.
    dec, B = CachedDecoder(senior), 6
    prefix = torch.randint(0, 512, (B, 9))
    prefix_len = torch.tensor([9, 4, 6, 3, 8, 5])
    cache = dec.begin(B, 24)
    dec.forward(cache, None, prefix, prefix_len)
    rows = torch.tensor(rows)
    n_new = torch.tensor([1, 4, 1, 3, 1, 2])[: len(rows)]
    chunk = torch.randint(0, 512, (len(rows), int(n_new.max())))
    got = dec.forward(cache, rows, chunk, n_new)[0].split(n_new.tolist())
    for i, r in enumerate(rows.tolist()):
        alone = dec.begin(1, 24)
        dec.forward(alone, None, prefix[r : r + 1, : int(prefix_len[r])])
        want = dec.forward(alone, None, chunk[i : i + 1, : int(n_new[i])])[0]
        assert torch.allclose(got[i], want, atol=1e-12)


def test_generate_decodes_with_the_weights_the_senior_has_now(senior, junior, tok, prompts):
    # The trainer updates the senior in place between rollouts; the engine must see the update.
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=16, seed=2)
    engine = TandemEngine(senior, junior, tok, TandemConfig(prob_senior=1.0))
    before = engine.generate(prompts, sampling)
    saved = senior.lm_head.weight.clone()
    try:
        senior.lm_head.weight.mul_(3.0)
        after = engine.generate(prompts, sampling)
        fresh = TandemEngine(senior, junior, tok, TandemConfig(prob_senior=1.0)).generate(prompts, sampling)
    finally:
        senior.lm_head.weight.copy_(saved)
    assert [r.token_ids for r in after] == [r.token_ids for r in fresh] != [r.token_ids for r in before]


@pytest.mark.parametrize("model_type", ["qwen3", "qwen2", "llama", "mistral"])
def test_decoder_logits_match_hugging_face_on_every_supported_architecture(model_type):
    extra = dict(attention_bias=True, mlp_bias=True) if model_type == "llama" else {}  # every bias the decoder packs
    model = tiny_model(model_type, **extra)
    ids = torch.randint(0, 512, (2, 12))
    ref = model(ids).logits
    dec = CachedDecoder(model)
    cache = dec.begin(2, 12)
    got = [dec.logits(dec.forward(cache, None, ids[:, :8]))[0].view(2, 8, -1)]
    for t in range(8, 12):  # then one token at a time
        got.append(dec.logits(dec.forward(cache, None, ids[:, t : t + 1]))[0][:, None])
    assert torch.allclose(torch.cat(got, dim=1), ref, atol=1e-10)
