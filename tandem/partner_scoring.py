"""The partner score of a batch of rollouts, with the scorer model in memory (embedded trainer, HF TRL).

The scorer is the run's junior (TRL) or, for a GRPO run, its pre-RL base (the RLT setting:
a solo writer scored by the base). The senior's and a tandem junior's log-probs of the
response come from the reference engine (`junior_logprobs=True`); where the scorer did not
co-write (GRPO, a solo evaluation batch) it reads prompt + response in one batched forward.
The target costs one more batched forward of the scorer. The formula is
`tandem.partner_score`'s.
"""

from __future__ import annotations

import torch

from tandem.models import context_length
from tandem.partner_score import PartnerRewardConfig, check_fits, partner_score, partner_terms, target_sequences
from tandem.logprobs import join_prompt_response, pad_right
from tandem.logprobs import response_logprobs


@torch.no_grad()
def scored_logprobs(model, contexts: list[list[int]], scored: list[list[int]], pad_id: int,
                    temperature: float) -> tuple[torch.Tensor, torch.Tensor]:
    """([B, T] log-probs of each scored sequence after its context, [B, T] mask of its tokens)."""
    device = next(model.parameters()).device
    input_ids, attention, index = join_prompt_response(contexts, scored, pad_id)
    logp = response_logprobs(model, input_ids.to(device), attention.to(device), index.to(device),
                             temperature=temperature)[0].cpu().double()
    mask = pad_right([[1] * len(s) for s in scored], 0, length=logp.shape[1]).double()
    return logp, mask


def partner_rewards(cfg: PartnerRewardConfig, scorer, tokenizer, prompts: list[list[int]], rollouts, golds: list[str],
                    temperature: float, scorer_wrote_with_engine: bool) -> tuple[torch.Tensor, dict]:
    """([B] partner scores, {term: [B]}) for one batch of rollouts and their gold answers or solutions."""
    sequences = [target_sequences(tokenizer, p, r.token_ids, g, cfg.target) for p, r, g in zip(prompts, rollouts, golds)]
    for row, (context, scored) in enumerate(sequences):
        check_fits(row, context, scored, context_length(scorer), cfg.target)
    pad = tokenizer.pad_token_id
    target_lp, target_mask = scored_logprobs(scorer, [c for c, _ in sequences], [s for _, s in sequences], pad,
                                             temperature)
    responses = [r.token_ids for r in rollouts]
    T = max(1, max(len(r) for r in responses))
    senior_lp = pad_right([r.senior_logprobs for r in rollouts], 0.0, torch.float64, length=T)
    if scorer_wrote_with_engine:
        junior_lp = pad_right([r.junior_logprobs for r in rollouts], 0.0, torch.float64, length=T)
        wrote = pad_right([r.authorship_mask for r in rollouts], 0, length=T).double()
    else:
        junior_lp = scored_logprobs(scorer, prompts, responses, pad, temperature)[0]
        wrote = pad_right([[1] * len(r) for r in responses], 0, length=T).double()
    terms = partner_terms(target_lp, target_mask, senior_lp, junior_lp, wrote)
    return partner_score(terms, cfg.coefficients()), terms
