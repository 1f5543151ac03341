"""Per-token log-probabilities of responses under a causal LM (with gradient when enabled).

Matches what verl's actor computes: `log_softmax(logits / temperature)` at the token
that was emitted, from one forward pass over prompt + response.
"""

from __future__ import annotations

import torch

from tandem.grpo import entropy_from_logits


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
