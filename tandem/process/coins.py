"""Counter-based random numbers: the replayable coins of the tandem process.

A coin is a pure function of `(seed, request key, stream, counter)`, not a draw from a
shared stateful RNG. So the authorship mask can be recomputed after the fact, a
preempted request resumes its schedule exactly, and the schedule does not depend on
which other requests share the batch. The mixer is SplitMix64's finaliser, computed in
int64 tensor arithmetic (multiplication wraps modulo 2**64 on CPU and CUDA).
"""

from __future__ import annotations

import hashlib

import torch

# Streams keep the authorship coins and token sampling independent of each other.
STREAM_COIN = 0x5EC0
STREAM_SAMPLE = 0x5A3B

_GOLDEN = 0x9E3779B97F4A7C15
_M1 = 0xBF58476D1CE4E5B9
_M2 = 0x94D049BB133111EB


def _signed(x: int) -> int:
    """A 64-bit pattern as the int64 value torch stores."""
    x &= (1 << 64) - 1
    return x - (1 << 64) if x >= 1 << 63 else x


def _shr(x: torch.Tensor, s: int) -> torch.Tensor:
    """Logical right shift of int64 bit patterns (torch's >> is arithmetic)."""
    return (x >> s) & ((1 << (64 - s)) - 1)


def mix64(x: torch.Tensor) -> torch.Tensor:
    """SplitMix64 finaliser on int64 tensors: a bijective avalanche of 64-bit patterns."""
    x = x ^ _shr(x, 30)
    x = x * _signed(_M1)
    x = x ^ _shr(x, 27)
    x = x * _signed(_M2)
    return x ^ _shr(x, 31)


def uniform(seed: int, keys: torch.Tensor, counters: torch.Tensor, stream: int) -> torch.Tensor:
    """U[0, 1) in float64, one per element of `keys`/`counters` (broadcast, int64 tensors)."""
    keys = torch.as_tensor(keys, dtype=torch.int64)
    counters = torch.as_tensor(counters, dtype=torch.int64, device=keys.device)
    base = mix64(torch.tensor(_signed(seed * _GOLDEN + stream), dtype=torch.int64, device=keys.device))
    h = mix64(keys ^ base)
    h = mix64(h + (counters + 1) * _signed(_GOLDEN))
    return _shr(h, 11).to(torch.float64) * (1.0 / (1 << 53))


def coin_uniform(seed: int, keys: torch.Tensor, coin_index: torch.Tensor) -> torch.Tensor:
    """The uniform behind coin `k` of each request; the coin says senior when it is < prob_senior."""
    return uniform(seed, keys, coin_index, STREAM_COIN)


def sample_uniform(seed: int, keys: torch.Tensor, position: torch.Tensor) -> torch.Tensor:
    """The uniform used to sample response token `position` of each request."""
    return uniform(seed, keys, position, STREAM_SAMPLE)


def request_key(prompt_id: str | int, sample: int) -> int:
    """A stable 63-bit key for sample `sample` of prompt `prompt_id` (seeds coins and sampling)."""
    digest = hashlib.blake2b(f"{prompt_id}\x1f{sample}".encode(), digest_size=8).digest()
    return int.from_bytes(digest, "little") & ((1 << 63) - 1)
