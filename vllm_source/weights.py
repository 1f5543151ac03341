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


FINGERPRINT_CHUNK = 1 << 20  # elements summed per step: at most 4 MiB of float32 temporaries


def tensor_sums(tensors: Iterable[torch.Tensor]) -> torch.Tensor:
    """FloatTensor[n]: each tensor's float32 sum, the junior's fingerprint (`junior_guard.py`); no host sync.

    Every element counts, summed in chunks of `FINGERPRINT_CHUNK` elements, so it never
    makes a float32 copy of a whole tensor (a Qwen3-4B embedding in float32 is 1.5 GB).
    Strength: a level-2 sleep frees and re-allocates the weights, so every element changes
    and the sums change; an edit of a few elements that keeps a sum is not detected.
    """
    sums = []
    for t in tensors:
        if t.is_meta:
            raise TandemError(
                "the junior's weights are on the meta device (vLLM's layerwise reload, used by verl's non-naive "
                "checkpoint engines, moved them); use actor_rollout_ref.rollout.checkpoint_engine.backend=naive"
            )
        flat = t.detach().reshape(-1)
        acc = torch.zeros((), dtype=torch.float32, device=flat.device)
        for start in range(0, flat.numel(), FINGERPRINT_CHUNK):
            acc += flat[start : start + FINGERPRINT_CHUNK].sum(dtype=torch.float32)
        sums.append(acc)
    if not sums:
        return torch.zeros(0)
    return torch.stack([s.to(sums[0].device) for s in sums])
