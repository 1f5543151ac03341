"""The tandem process on synthetic token streams: every strategy's redraw rule, replay, statistics.

Tokens are random ids over a vocabulary of 100 in which a chosen subset are boundaries,
so the expected rates are known exactly.
"""

import math

import pytest
import torch

from tandem.process.config import TandemConfig
from tandem.process.authorship import (
    TandemState,
    advance,
    coin_author,
    replay_mask,
    response_authorship_mask,
    start_state,
    stepped_mask,
)
from tandem.process.strategies import REGISTRY

V = 100


def lookup(boundary_ids):
    t = torch.zeros(V, dtype=torch.bool)
    t[list(boundary_ids)] = True
    return t


def random_tokens(B, T, seed=0):
    return torch.randint(0, V, (B, T), generator=torch.Generator().manual_seed(seed))


def test_alternating_toggles_every_token():
    cfg = TandemConfig(selection_strategy="alternating")
    mask = replay_mask(cfg, None, random_tokens(3, 10), [1, 2, 3])
    assert mask[0].tolist() == [1, 0] * 5 and torch.equal(mask[0], mask[2])


def test_alternating_can_start_with_the_junior():
    cfg = TandemConfig(selection_strategy="alternating", first_author="junior")
    assert replay_mask(cfg, None, random_tokens(1, 4), [1])[0].tolist() == [0, 1, 0, 1]


def test_chunk_toggles_every_chunk_size_tokens():
    cfg = TandemConfig(selection_strategy="chunk", chunk_size=3)
    assert replay_mask(cfg, None, random_tokens(1, 9), [5])[0].tolist() == [1, 1, 1, 0, 0, 0, 1, 1, 1]


@pytest.mark.parametrize("strategy", [n for n, s in REGISTRY.items() if s.boundary_kind and not s.draws_coins])
def test_boundary_toggling_strategies_switch_right_after_each_boundary(strategy):
    cfg = TandemConfig(selection_strategy=strategy)
    tokens = torch.tensor([[5, 7, 99, 5, 99, 99, 6, 7]])
    mask = replay_mask(cfg, lookup([99]), tokens, [0])[0].tolist()
    assert mask == [1, 1, 1, 0, 0, 1, 0, 0]


def test_chunk_schedule_is_per_request_not_a_shared_step_counter():
    # The release counts chunks with one global counter; here each request counts its own tokens.
    cfg = TandemConfig(selection_strategy="chunk", chunk_size=2)
    state = start_state(cfg, torch.tensor([1]))
    state = advance(cfg, None, state, torch.tensor([3]))  # request 1 is one token in
    late = start_state(cfg, torch.tensor([2]))  # request 2 joins now
    joined = torch.cat([state.author, late.author]), torch.cat([state.since_redraw, late.since_redraw])
    assert joined[1].tolist() == [1, 0]


def test_word_redraws_at_boundaries_and_at_the_latest_after_max_gap():
    cfg = TandemConfig(selection_strategy="word", max_gap_tokens=4)
    tokens = torch.tensor([[1, 1, 99, 1, 1, 1, 1, 1, 1, 1]])
    state, redraws = start_state(cfg, torch.tensor([0])), []
    for t in range(tokens.shape[1]):
        before = int(state.coin_index[0])
        state = advance(cfg, lookup([99]), state, tokens[:, t])
        redraws.append(int(state.coin_index[0]) - before)
    assert redraws == [0, 0, 1, 0, 0, 0, 1, 0, 0, 0]


def test_word_never_lets_max_gap_tokens_pass_without_a_redraw():
    cfg = TandemConfig(selection_strategy="word", max_gap_tokens=7)
    tokens = random_tokens(32, 400, seed=1)
    state = start_state(cfg, torch.arange(32))
    for t in range(400):
        state = advance(cfg, lookup(range(5)), state, tokens[:, t])  # 5% boundary rate
        assert int(state.since_redraw.max()) < 7


@pytest.mark.parametrize("p", [0.2, 0.5, 0.8])
def test_word_coins_come_up_senior_with_probability_prob_senior(p):
    # Count every drawn coin: Binomial(n, p); allow 4 standard deviations.
    cfg = TandemConfig(selection_strategy="word", prob_senior=p, seed=3)
    B, T = 64, 500
    tokens, is_b = random_tokens(B, T, seed=2), lookup(range(20))
    state, senior_draws, draws = start_state(cfg, torch.arange(B)), state_authors(cfg, B), B
    for t in range(T):
        nxt = advance(cfg, is_b, state, tokens[:, t])
        drawn = nxt.coin_index > state.coin_index
        senior_draws += int((nxt.author & drawn).sum())
        draws += int(drawn.sum())
        state = nxt
    sd = math.sqrt(draws * p * (1 - p))
    assert abs(senior_draws - draws * p) < 4 * sd, (senior_draws, draws)


def state_authors(cfg, B):
    return int(start_state(cfg, torch.arange(B)).author.sum())


def test_word_senior_token_share_is_close_to_prob_senior():
    # 64 x 2000 tokens, boundary rate 0.2 -> ~25k author runs of mean ~5 tokens; the share's
    # sd is ~0.005, and 0.03 is ~6 sd.
    cfg = TandemConfig(selection_strategy="word", prob_senior=0.5, seed=11)
    mask = replay_mask(cfg, lookup(range(20)), random_tokens(64, 2000, seed=4), torch.arange(64))
    assert abs(mask.float().mean().item() - 0.5) < 0.03


def test_word_gaps_between_redraws_follow_the_truncated_geometric_law():
    # Boundary rate q = 0.1, max gap 8: E[gap] = sum_{g<8} g q (1-q)^(g-1) + 8 (1-q)^7.
    q, G = 0.1, 8
    expected = sum(g * q * (1 - q) ** (g - 1) for g in range(1, G)) + G * (1 - q) ** (G - 1)
    cfg = TandemConfig(selection_strategy="word", max_gap_tokens=G)
    B, T = 64, 1000
    tokens = random_tokens(B, T, seed=5)
    state, gaps = start_state(cfg, torch.arange(B)), []
    for t in range(T):
        prev = state.since_redraw
        state = advance(cfg, lookup(range(10)), state, tokens[:, t])
        gaps += (prev + 1)[state.coin_index > 0][state.since_redraw[state.coin_index > 0] == 0].tolist()
    mean = sum(gaps) / len(gaps)
    # ~13k gaps with sd ~2.4 each: the mean's sd is ~0.02; allow 0.1.
    assert abs(mean - expected) < 0.1, (mean, expected)
    assert max(gaps) == G


def test_bernoulli_draws_a_coin_for_every_token():
    cfg = TandemConfig(selection_strategy="bernoulli", prob_senior=0.5)
    state = start_state(cfg, torch.arange(4))
    for t in range(10):
        state = advance(cfg, None, state, torch.zeros(4, dtype=torch.int64))
    assert state.coin_index.tolist() == [11] * 4


@pytest.mark.parametrize("p, value", [(1.0, 1), (0.0, 0)])
def test_extreme_probabilities_give_one_author(p, value):
    cfg = TandemConfig(selection_strategy="word", prob_senior=p)
    mask = replay_mask(cfg, lookup(range(30)), random_tokens(8, 200), torch.arange(8))
    assert bool((mask == value).all())


def test_one_response_mask_equals_its_row_of_the_batched_replay():
    cfg = TandemConfig(selection_strategy="word", seed=9)
    tokens, is_b = random_tokens(5, 120, seed=6), lookup(range(15))
    batched = replay_mask(cfg, is_b, tokens, [10, 20, 30, 40, 50])
    for i, key in enumerate([10, 20, 30, 40, 50]):
        assert response_authorship_mask(cfg, is_b, tokens[i].tolist(), key) == batched[i].tolist()


def test_a_solo_response_is_all_senior_and_an_empty_one_has_no_mask():
    cfg = TandemConfig(selection_strategy="word", prob_senior=0.0)
    assert response_authorship_mask(cfg, lookup(range(15)), [3, 4, 5], key=1, solo=True) == [1, 1, 1]
    assert response_authorship_mask(cfg, lookup(range(15)), [], key=1) == []


def test_the_same_request_draws_the_same_coins_in_a_batch_of_1_and_of_64():
    cfg = TandemConfig(selection_strategy="word", seed=2)
    tokens, is_b = random_tokens(64, 300, seed=7), lookup(range(15))
    big = replay_mask(cfg, is_b, tokens, torch.arange(1000, 1064))
    alone = response_authorship_mask(cfg, is_b, tokens[17].tolist(), 1017)
    assert alone == big[17].tolist()


def test_replay_zeroes_positions_past_each_length():
    cfg = TandemConfig(selection_strategy="alternating")
    mask = replay_mask(cfg, None, random_tokens(2, 6), [1, 2], lengths=[6, 3])
    assert mask[1].tolist() == [1, 0, 1, 0, 0, 0]


@pytest.mark.parametrize("strategy", [n for n, s in REGISTRY.items() if s.draws_coins])
@pytest.mark.parametrize("n_tokens", [0, 1, 7, 40])
def test_a_coin_table_gives_the_same_states_as_drawing_each_coin(strategy, n_tokens):
    # 40 tokens are advanced: tables of 1 and 7 tokens run out part-way and must hand over.
    cfg = TandemConfig(selection_strategy=strategy, prob_senior=0.5, max_gap_tokens=4)
    is_boundary, tokens, keys = lookup(range(0, V, 3)), random_tokens(16, 40, seed=3), torch.arange(16) * 7919
    plain, tabled = start_state(cfg, keys), start_state(cfg, keys, n_tokens=n_tokens)
    for t in range(40):
        assert torch.equal(plain.author, tabled.author) and torch.equal(plain.coin_index, tabled.coin_index)
        plain = advance(cfg, is_boundary, plain, tokens[:, t])
        tabled = advance(cfg, is_boundary, tabled, tokens[:, t])
        if t == 20:  # rows leaving the batch keep their own coins
            plain, tabled = plain.select(torch.tensor([1, 5, 9])), tabled.select(torch.tensor([1, 5, 9]))
            tokens = tokens[[1, 5, 9]]
    assert torch.equal(plain.author, tabled.author) and torch.equal(plain.since_redraw, tabled.since_redraw)


@pytest.mark.parametrize("prob_senior", [0.0, 0.3, 1.0])
def test_a_coin_table_holds_the_authors_the_coins_name(prob_senior):
    cfg = TandemConfig(selection_strategy="word", prob_senior=prob_senior)
    state = start_state(cfg, torch.arange(64), n_tokens=5)
    assert state.next_authors.dtype == torch.bool and torch.equal(state.author, state.next_authors[:, 0])
    assert state.next_authors.float().mean().item() == pytest.approx(prob_senior, abs=0.1)  # 384 coins


@pytest.mark.parametrize("named", [True, False])
@pytest.mark.parametrize("prob_senior", [0.0, 1.0])
def test_advance_takes_the_next_author_it_is_handed_and_decides_no_coin_again(named, prob_senior):
    # A redraw is due after every token (`alternating` has no coin; `word` with gap 1 redraws each token).
    cfg = TandemConfig(selection_strategy="word", max_gap_tokens=1, prob_senior=prob_senior)
    keys = torch.arange(4)
    state = TandemState(torch.full((4,), not named), torch.zeros(4, dtype=torch.long), torch.zeros(4, dtype=torch.long),
                        keys, torch.full((4, 2), named), covered=2)
    after = advance(cfg, lookup([]), state, torch.tensor([5, 6, 7, 8]))
    assert after.author.tolist() == [named] * 4  # whatever prob_senior says of the coins' uniforms


def test_coin_author_is_the_coin_with_probability_prob_senior():
    cfg = TandemConfig(prob_senior=0.25)
    u = torch.tensor([0.0, 0.2499, 0.25, 0.9])
    assert coin_author(cfg, u).tolist() == [True, True, False, False]


@pytest.mark.parametrize("strategy", sorted(REGISTRY))
@pytest.mark.parametrize("gap", [1, 3, 32])
def test_the_vectorised_replay_equals_stepping_advance_token_by_token(strategy, gap):
    cfg = TandemConfig(selection_strategy=strategy, max_gap_tokens=gap, chunk_size=gap + 1, prob_senior=0.4)
    for seed, boundaries in enumerate([[], [7], range(0, 100, 9), range(40)]):
        tokens = random_tokens(6, 150, seed=seed)
        tokens[0, :5] = torch.tensor([7, 7, 120, -1, 7])  # repeats, ids outside the lookup
        is_b = lookup(boundaries)
        keys = torch.arange(6) * 1000 + seed
        assert torch.equal(replay_mask(cfg, is_b, tokens, keys), stepped_mask(cfg, is_b, tokens, keys))


def test_the_registry_holds_the_papers_strategies_and_each_states_what_it_reads():
    assert sorted(REGISTRY) == ["alternating", "bernoulli", "chunk", "sentence", "step", "word"]
    assert {n for n, s in REGISTRY.items() if s.draws_coins} == {"word", "bernoulli"}
    assert {n: s.boundary_kind for n, s in REGISTRY.items() if s.boundary_kind} == {
        "word": "word", "sentence": "sentence", "step": "step"}
    for name, entry in REGISTRY.items():
        cfg = TandemConfig(selection_strategy=name)
        assert cfg.uses_coins == entry.draws_coins and cfg.needs_boundaries == (entry.boundary_kind is not None)


def test_a_strategy_cannot_be_registered_twice():
    from tandem.process.strategies import register_strategy

    with pytest.raises(ValueError, match="registered twice"):
        register_strategy(REGISTRY["word"])
