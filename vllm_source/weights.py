"""Routing a checkpoint stream to the senior and junior halves of the wrapper model.

vLLM's default loader streams the senior's checkpoint (names as in the HF files) and then
each `secondary_weights` source with its prefix; the wrapper declares the junior's
checkpoint as one with prefix `junior.`. Weight syncs from verl carry senior names only.
`split_stream` splits one ordered stream into the two parts without buffering it.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

import torch

from tandem.errors import TandemError

JUNIOR_PREFIX = "junior."

Weights = Iterable[tuple[str, torch.Tensor]]


def split_stream(weights: Weights) -> tuple[Iterator[tuple[str, torch.Tensor]], Iterator[tuple[str, torch.Tensor]]]:
    """(senior part, junior part with the prefix stripped) of a senior-then-junior stream.

    Consume the senior part fully before the junior part. A senior name after the first
    junior name means the stream is not ordered as vLLM's loader orders it: an error.
    """
    stream = iter(weights)
    first_junior: list[tuple[str, torch.Tensor]] = []

    def senior_part():
        for name, tensor in stream:
            if name.startswith(JUNIOR_PREFIX):
                first_junior.append((name[len(JUNIOR_PREFIX) :], tensor))
                return
            yield name, tensor

    def junior_part():
        yield from first_junior
        for name, tensor in stream:
            if not name.startswith(JUNIOR_PREFIX):
                raise TandemError(f"senior weight {name!r} arrived after junior weights; cannot route it")
            yield name[len(JUNIOR_PREFIX) :], tensor

    return senior_part(), junior_part()


def fingerprint(tensors: Iterable[torch.Tensor]) -> float:
    """A cheap checksum of a few tensors: detects junior weights wiped by a deep vLLM sleep."""
    return float(sum(t.detach().float().sum().item() for t in tensors))
