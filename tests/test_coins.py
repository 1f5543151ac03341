"""Counter-based coins: exact SplitMix64 arithmetic, range, uniformity, batch independence."""

import torch

from tandem.process.coins import coin_uniform, mix64, request_key, sample_uniform

M64 = (1 << 64) - 1


def splitmix_finaliser_reference(x: int) -> int:
    """The SplitMix64 finaliser in Python integers (the test oracle)."""
    x &= M64
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def test_mix64_matches_the_integer_reference():
    values = [0, 1, 2**63 - 1, 12345678901234567, -1, -(2**63)]
    got = mix64(torch.tensor(values, dtype=torch.int64)).tolist()
    assert [g & M64 for g in got] == [splitmix_finaliser_reference(v) for v in values]


def test_uniforms_lie_in_the_unit_interval():
    u = coin_uniform(7, torch.arange(1000), torch.arange(1000))
    assert u.dtype == torch.float64 and bool((u >= 0).all()) and bool((u < 1).all())


def test_uniforms_are_uniform_in_distribution():
    # 200k draws into 20 bins: each bin count is Binomial(200k, 0.05), sd ~ 97; allow 5 sd.
    u = coin_uniform(0, torch.arange(2000).repeat_interleave(100), torch.arange(100).repeat(2000))
    counts = torch.histc(u.float(), bins=20, min=0, max=1)
    assert bool(((counts - 10000).abs() < 5 * 97.5).all()), counts


def test_a_coin_depends_only_on_seed_key_and_index_not_on_the_batch():
    keys = torch.tensor([11, 22, 33, 44])
    idx = torch.tensor([0, 5, 9, 2])
    batched = coin_uniform(3, keys, idx)
    single = torch.stack([coin_uniform(3, keys[i : i + 1], idx[i : i + 1])[0] for i in range(4)])
    assert torch.equal(batched, single)


def test_coin_and_sampling_streams_are_independent():
    keys, idx = torch.arange(500), torch.zeros(500, dtype=torch.int64)
    a, b = coin_uniform(0, keys, idx), sample_uniform(0, keys, idx)
    assert not torch.equal(a, b)
    # correlation of 500 independent uniform pairs: sd ~ 0.045; allow 4 sd
    assert abs(torch.corrcoef(torch.stack([a, b]))[0, 1].item()) < 0.18


def test_seeds_change_the_coins():
    keys, idx = torch.arange(100), torch.zeros(100, dtype=torch.int64)
    assert not torch.equal(coin_uniform(0, keys, idx), coin_uniform(1, keys, idx))


# Golden values: replaying a mask in another process (vLLM worker, verl agent loop, a later
# run) needs the same key and the same uniforms; a change here breaks every stored run.
GOLDEN_KEYS = {("aime2024-I-1", 0): 395728806751436070, ("aime2024-I-1", 1): 2914729581004071345,
               (5, 3): 827800201788596680, ("train/0/17", 2): 5740376387488441175}


def test_request_key_golden_values():
    assert {k: request_key(*k) for k in GOLDEN_KEYS} == GOLDEN_KEYS


def test_uniform_golden_values():
    keys, idx = torch.tensor([395728806751436070, 11]), torch.tensor([0, 7])
    assert coin_uniform(0, keys, idx).tolist() == [0.46112441805802684, 0.5374207325850044]
    assert sample_uniform(3, keys, idx).tolist() == [0.08379565386708532, 0.5696930252073964]


def test_request_key_is_stable_and_distinguishes_samples():
    assert request_key("aime2024-I-1", 0) != request_key("aime2024-I-1", 1)
    assert 0 <= request_key(5, 3) < 2**63
