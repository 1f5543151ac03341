"""Per-token log-probabilities of responses under a causal LM (with gradient when enabled).

Matches what verl's actor computes: `log_softmax(logits / temperature)` at the token
that was emitted, from one forward pass over prompt + response. `join_prompt_response`
and `pad_right` build that forward's right-padded batch from token-id lists.
"""

from __future__ import annotations

import torch

from tandem.loss.grpo import entropy_from_logits


def pad_right(rows: list[list], value, dtype=torch.int64, length: int | None = None) -> torch.Tensor:
    """[B, L] tensor of the rows padded on the right with `value`."""
    L = length if length is not None else max((len(r) for r in rows), default=0)
    out = torch.full((len(rows), max(L, 1)), value, dtype=dtype)
    for i, r in enumerate(rows):
        if r:
            out[i, : len(r)] = torch.tensor(r, dtype=dtype)
    return out


def join_prompt_response(prompts: list[list[int]], responses: list[list[int]], pad_id: int):
    """Right-padded prompt+response sequences.

    Returns input_ids [B, L], attention_mask [B, L], and response_index [B, T]: the
    position in input_ids of each response token (padding positions point at 0),
    with T the longest response.
    """
    seqs = [p + r for p, r in zip(prompts, responses)]
    input_ids = pad_right(seqs, pad_id)
    attention_mask = pad_right([[1] * len(s) for s in seqs], 0)
    T = max(1, max(len(r) for r in responses))
    starts = torch.tensor([len(p) for p in prompts])[:, None]
    response_index = starts + torch.arange(T)[None, :]
    lengths = torch.tensor([len(r) for r in responses])[:, None]
    response_index = torch.where(torch.arange(T)[None, :] < lengths, response_index, torch.zeros_like(response_index))
    return input_ids, attention_mask, response_index


def response_logprobs(
    model,
    input_ids: torch.Tensor,
    attention_mask: torch.Tensor,
    response_index: torch.Tensor,
    temperature: float = 1.0,
    with_entropy: bool = False,
    entropy_grad: bool = True,
) -> tuple[torch.Tensor, torch.Tensor | None]:
    """Log-probs [B, T] of the response tokens (and their entropies [B, T] if asked).

    input_ids/attention_mask: [B, L] right-padded prompt+response; response_index [B, T]:
    the position of each response token in input_ids (see `data.join_prompt_response`).
    Values at padded response positions are meaningless; weight them 0. With
    `entropy_grad=False` the entropy is computed on detached logits (for logging only).
    """
    logits = model(input_ids=input_ids, attention_mask=attention_mask, use_cache=False).logits
    pred = (response_index - 1).clamp(min=0)  # the logits at position j-1 predict token j
    V = logits.shape[-1]
    logits = torch.gather(logits, 1, pred[..., None].expand(-1, -1, V)).float() / temperature
    tokens = torch.gather(input_ids, 1, response_index)
    logp = torch.log_softmax(logits, dim=-1).gather(-1, tokens[..., None]).squeeze(-1)
    entropy = entropy_from_logits(logits if entropy_grad else logits.detach()) if with_entropy else None
    return logp, entropy
