"""The senior gate: where the authorship mask enters the loss, and fails closed.

The per-token loss **weights** (`token_weights`): a senior-written token weighs 1, a
junior-written token `junior_token_loss_weight` (default 0), padding 0. Every trainer
(embedded and verl) multiplies its loss terms by them (`tandem.loss.grpo`), so with weight 0
junior tokens get exactly zero gradient. A tandem batch without an authorship mask is an
error (`require_authorship_mask`), never a silent fall-back to plain GRPO (the released
code trained plain GRPO there).

Shapes: B = responses in the batch, T = padded response length.
"""

from __future__ import annotations

import torch

from tandem.errors import TandemError


def _get(batch, key):
    try:
        return batch[key] if key in batch else None
    except TypeError:
        return None


def require_authorship_mask(batch, tandem: bool) -> torch.Tensor | None:
    """The batch's `authorship_mask` (IntTensor[B, T], 1 = senior); fail closed for tandem.

    `batch` is a dict-like holding `responses` and/or `response_mask` of shape [B, T].
    A tandem batch must carry an `authorship_mask` of the same shape, else `TandemError`
    (the released code silently trained plain GRPO here). A solo batch may omit it (None).
    """
    mask = None if batch is None else _get(batch, "authorship_mask")
    if mask is None:
        if tandem:
            raise TandemError(
                "tandem batch has no 'authorship_mask'; the rollout backend must return one per response "
                "(1 = senior token) — refusing to train plain GRPO on tandem rollouts"
            )
        return None
    mask = torch.as_tensor(mask)
    ref = _get(batch, "responses")
    ref = _get(batch, "response_mask") if ref is None else ref
    if ref is not None and tuple(mask.shape) != tuple(torch.as_tensor(ref).shape):
        raise TandemError(
            f"authorship_mask has shape {tuple(mask.shape)} but the responses have "
            f"{tuple(torch.as_tensor(ref).shape)}; "
            "the mask needs one entry per response token (pad it like the responses)"
        )
    return mask


def token_weights(
    authorship_mask: torch.Tensor | None, response_mask: torch.Tensor, junior_token_loss_weight: float = 0.0
) -> torch.FloatTensor:
    """Per-token loss weights, FloatTensor[B, T]: 1 senior, `junior_token_loss_weight` junior, 0 padding.

    `authorship_mask` (0/1, [B, T]) is None for solo rollouts (every token is the senior's).
    """
    response_mask = torch.as_tensor(response_mask).float()
    if junior_token_loss_weight < 0:
        raise TandemError(f"junior_token_loss_weight must be >= 0, got {junior_token_loss_weight}")
    if authorship_mask is None:
        return response_mask
    authorship_mask = torch.as_tensor(authorship_mask, device=response_mask.device)
    if authorship_mask.shape != response_mask.shape:
        raise TandemError(
            f"authorship_mask shape {tuple(authorship_mask.shape)} != response_mask shape {tuple(response_mask.shape)}"
        )
    senior = authorship_mask.bool()
    junior_weight = torch.full_like(response_mask, float(junior_token_loss_weight))
    return response_mask * torch.where(senior, torch.ones_like(response_mask), junior_weight)
