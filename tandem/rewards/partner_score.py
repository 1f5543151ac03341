"""The partner score: how well the junior follows the senior, as RLT rewards a teacher by its student.

RLT (arXiv 2506.08388; SakanaAI/RLT `trainers/teacher_rewards.py`) scores a teacher's
explanation by a frozen student: the student's log-probs of the known solution written
after the explanation (reduced by mean and min), minus the per-token KL of teacher against
student over the explanation (reduced by mean and max). In a tandem run the junior is the
student already in memory, and the explanation is the team's response:

    partner_score = c_lp_mean * mean_t lp_t + c_lp_min * min_t lp_t
                    - c_kl_mean * mean_s kl_s - c_kl_max * max_s kl_s

    lp_t = log p_junior(target_t | prompt, explanation, target_<t)   over the target tokens
    kl_s = log p_senior(y_s | ...) - log p_junior(y_s | ...)         over the SENIOR-written tokens

The target is read inside the student's own turn, as RLT's student reads the solution after
the explanation in its reasoning (`target_sequences`): the plain prompt, the response without
the token that ends its turn, then the target, with nothing between that the student does not
write itself (`solution`: a step break; `answer`: right after the response's own `\\boxed{`).
Before issue 44 the student read the response's `<|im_end|>` and a cue it never saw, and the
score then barely depended on the explanation (`scripts/partner_score_validity.py` measures this).

and the reward the trainer uses is `verifier_weight * verifier + weight * partner_score`
(`PartnerRewardConfig.weight`, 0 = off; `verifier_weight` 1 unless set, RLT's teacher 0).
Where the writer saw the solution (RLT's format, `tandem.rewards.solution_prompt`), the explanation
is the response before RLT's closing explanation tag, the KL terms run over it only (RLT's
thought tokens), and an explanation left unclosed adds `format_penalty` to the score
(RLT's `not_matched_penalty`, -1). Preset `rlt` holds RLT's coefficients
(`cfgs/run_cfg/teacher_rlt.yaml`: answer_log_prob_coeff [1, 0.01], kl_penalty_reward_coeff
[3, 0.03]). The reductions are masked as RLT's (`trainers/teacher_base.py`,
`_make_reduction_fn`); where ours differs (a response with no senior-written token, the
target) model_spec/SPEC.md §13 says so.

`partner_rewards` scores a batch of rollouts with the scorer model in memory (embedded trainer,
HF TRL): the run's junior (TRL) or, for a GRPO run, its pre-RL base (a solo writer scored by the
base, the RLT setting). Where the scorer co-wrote, its log-probs of the response come from the
reference engine (`junior_logprobs=True`); otherwise one batched forward reads prompt + response.

Shapes: B = responses, T = padded target length, S = padded response length.
"""

from __future__ import annotations

from dataclasses import replace

import torch

from tandem.errors import TandemError
from tandem.loss.logprobs import join_prompt_response, pad_right, response_logprobs
from tandem.io.metric_log import PARTNER_SCORE
from tandem.models.loading import context_length
from tandem.rewards.partner_config import TARGETS, PartnerRewardConfig
from tandem.rewards.solution_prompt import EXPLANATION_TAGS, split_explanation

ANSWER_MARK = "\\boxed{"  # the student's own answer opener: the `answer` target is read right after it
STEP_BREAK = "\n\n"  # the student's own step boundary: the `solution` target starts a step after the explanation
END_OF_TURN = "<|im_end|>"  # ChatML's end of turn; the tokenizer's eos token counts too


def end_of_turn_ids(tokenizer) -> list[int]:
    """The ids that end a turn: ChatML's `<|im_end|>` where the tokenizer has it (first), and its eos token."""
    ids = []
    im_end = tokenizer.convert_tokens_to_ids(END_OF_TURN)
    if im_end is not None and im_end != tokenizer.unk_token_id:
        ids.append(im_end)
    if tokenizer.eos_token_id is not None and tokenizer.eos_token_id not in ids:
        ids.append(tokenizer.eos_token_id)
    return ids


def explanation_text(tokenizer, response_ids: list[int]) -> str:
    """The response as the student reads it inside its own turn: decoded, its closing end-of-turn tokens dropped.

    The student's turn goes on after the explanation, so a token that closes the turn
    (the writer's `<|im_end|>` or eos) is not part of it (issue 44).
    """
    ends = set(end_of_turn_ids(tokenizer)) | {tokenizer.pad_token_id}
    ids = list(response_ids)
    while ids and ids[-1] in ends:
        ids.pop()
    text = tokenizer.decode(ids)
    # RLT's format: what follows the writer's closing explanation tag is not explanation.
    return split_explanation(text)[0] if EXPLANATION_TAGS[1] in text else text


def explanation_length(tokenizer, response_ids: list[int]) -> int:
    """How many of the response's tokens are its explanation in RLT's format: those before the first
    closing explanation tag, or, unclosed, all but the tokens that end the turn (the KL terms' span)."""
    close = tokenizer(EXPLANATION_TAGS[1], add_special_tokens=False)["input_ids"]
    ids = list(response_ids)
    for at in range(len(ids) - len(close) + 1):
        if ids[at : at + len(close)] == close:
            return at
    ends = set(end_of_turn_ids(tokenizer)) | {tokenizer.pad_token_id}
    while ids and ids[-1] in ends:
        ids.pop()
    return len(ids)


def explanation_closed(tokenizer, response_ids: list[int]) -> bool:
    """Whether the writer closed its explanation with RLT's tag (RLT's regex match)."""
    return split_explanation(tokenizer.decode(list(response_ids)))[1]


def answer_context(text: str) -> str:
    """The explanation through the `\\boxed{` that opens its last answer (the answer itself unseen); an
    explanation with none gets one, after a space where it ends in a word, as the student writes it."""
    at = text.rfind(ANSWER_MARK)
    if at >= 0:
        return text[: at + len(ANSWER_MARK)]
    return text + (" " if text and not text[-1].isspace() else "") + ANSWER_MARK


def solution_context(text: str) -> str:
    """The explanation and a step break, so the solution starts a step of the student's own turn (none when empty)."""
    return text if not text or text.endswith(STEP_BREAK) else text + STEP_BREAK


def target_sequences(tokenizer, prompt_ids: list[int], response_ids: list[int], gold: str,
                     target: str) -> tuple[list[int], list[int]]:
    """(context, target) token ids: what the student reads, and the tokens it is scored on.

    The target is scored inside the student's own turn, as RLT's student reads the solution
    after the explanation in its reasoning (issue 44): the plain prompt, the explanation
    (the response without the token that ends its turn), then the target, with nothing
    between that the student does not write itself.
    `answer`: the explanation through the `\\boxed{` of its last answer, then `gold` + "}".
    `solution`: the explanation, a step break (`\\n\\n`), then the row's worked solution `gold`.
    The explanation's text is tokenised again as one piece, so its tokens at the joint are
    those the student saw in training (a BPE tokenizer may merge the step break with the
    explanation's last token).
    """
    if target not in TARGETS:
        raise TandemError(f"partner_reward.target={target!r}: choose answer or solution")
    text = explanation_text(tokenizer, response_ids)
    context = answer_context(text) if target == "answer" else solution_context(text)
    scored = tokenizer(gold + "}" if target == "answer" else gold, add_special_tokens=False)["input_ids"]
    return [*prompt_ids, *tokenizer(context, add_special_tokens=False)["input_ids"]], list(scored)


def check_fits(row: int, context: list[int], scored: list[int], limit: int | None, target: str) -> None:
    """Refuse a row whose context + target the scorer's context cannot hold: never truncated (SPEC §13)."""
    if limit and len(context) + len(scored) > limit:
        raise TandemError(f"partner score: row {row} needs {len(context) + len(scored)} tokens (prompt, explanation "
                          f"and {target}) but the scorer's context holds {limit}; shorten max_new_tokens "
                          "or score with a model of a longer context")


def masked_reduce(values: torch.Tensor, mask: torch.Tensor, op: str) -> torch.Tensor:
    """[B, T] -> [B]: mean, min or max over the positions where `mask` is 1 (RLT's masked reductions).

    A row with no position gives NaN for the mean (0/0) and the dtype's extreme for min/max,
    as RLT's; `partner_terms` decides what an empty row scores before calling this.
    """
    mask = mask.to(values.dtype)
    if op == "mean":
        return (values * mask).sum(-1) / mask.sum(-1)
    if op == "min":
        return values.masked_fill(mask == 0, torch.finfo(values.dtype).max).min(-1).values
    if op == "max":
        return values.masked_fill(mask == 0, torch.finfo(values.dtype).min).max(-1).values
    raise TandemError(f"unknown reduction {op!r}; choose mean, min or max")


def partner_terms(target_logprobs: torch.Tensor, target_mask: torch.Tensor, senior_logprobs: torch.Tensor,
                  junior_logprobs: torch.Tensor, senior_mask: torch.Tensor) -> dict[str, torch.Tensor]:
    """The four terms, each [B].

    target_logprobs, target_mask: [B, T] the junior's log-prob of each target token; 1 = a target token.
    senior_logprobs, junior_logprobs: [B, S] each model's log-prob of each response token.
    senior_mask: [B, S] 1 where the senior wrote the token (the authorship mask times the response mask).
    Every row must hold a target token. A row with no senior-written token has KL terms 0:
    the senior wrote nothing there for the junior to follow.
    """
    if bool((target_mask.sum(-1) == 0).any()):
        row = int((target_mask.sum(-1) == 0).nonzero()[0])
        raise TandemError(f"partner score: row {row} has no target token to score the junior on")
    kl = senior_logprobs - junior_logprobs
    wrote = senior_mask.sum(-1) > 0
    zero = torch.zeros_like(kl[:, 0])
    return {
        "logprob_mean": masked_reduce(target_logprobs, target_mask, "mean"),
        "logprob_min": masked_reduce(target_logprobs, target_mask, "min"),
        "kl_mean": torch.where(wrote, masked_reduce(kl, senior_mask, "mean"), zero),
        "kl_max": torch.where(wrote, masked_reduce(kl, senior_mask, "max"), zero),
    }


def partner_score(terms: dict[str, torch.Tensor], coefficients: dict[str, float]) -> torch.Tensor:
    """[B]: the weighted terms, log-prob terms added and KL terms subtracted; a non-finite score is an error."""
    score = (coefficients["logprob_mean"] * terms["logprob_mean"] + coefficients["logprob_min"] * terms["logprob_min"]
             - coefficients["kl_mean"] * terms["kl_mean"] - coefficients["kl_max"] * terms["kl_max"])
    bad = ~torch.isfinite(score)
    if bool(bad.any()):
        row = int(bad.nonzero()[0])
        raise TandemError(f"partner score of row {row} is {float(score[row])} (terms: "
                          + ", ".join(f"{k}={float(v[row]):.4g}" for k, v in terms.items())
                          + "); a -inf log-prob means the junior gives the target zero probability")
    return score


def combined_reward(verifier: torch.Tensor, score: torch.Tensor, weight: float,
                    verifier_weight: float = 1.0) -> torch.Tensor:
    """[B]: `verifier_weight` times the verifier's reward plus `weight` times the partner score."""
    return verifier_weight * verifier + weight * score


def step_metrics(terms: dict[str, torch.Tensor], score: torch.Tensor) -> dict[str, float]:
    """The logged means over the batch: `partner_score` and `partner_score/<term>` for each term."""
    return {PARTNER_SCORE: float(score.mean()), **{f"{PARTNER_SCORE}/{k}": float(v.mean()) for k, v in terms.items()}}

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
    if cfg.writer_sees_solution:  # RLT's KL runs over the explanation only, not the tag or what follows it
        spans = pad_right([[1] * explanation_length(tokenizer, r) for r in responses], 0, length=T).double()
        wrote = wrote * spans
    terms = partner_terms(target_lp, target_mask, senior_lp, junior_lp, wrote)
    score = partner_score(terms, cfg.coefficients())
    if cfg.writer_sees_solution:
        closed = torch.tensor([float(explanation_closed(tokenizer, r)) for r in responses], dtype=score.dtype)
        score = score + cfg.format_penalty * (1.0 - closed)  # RLT's not_matched_penalty
        terms = {**terms, "closed": closed}
    return score, terms


def read_after(scorer, prompts: list[list[int]], rollouts: list, pad_id: int, temperature: float) -> list:
    """The rollouts with the scorer's log-probs of each response read after `prompts` (the plain ones).

    Where the writer saw the solution (`writer_sees_solution`), a co-writing junior's engine
    log-probs were read after the writer's prompt, which the scorer, as RLT's student, never
    sees; the KL terms compare the senior with the student in the student's own context.
    """
    logprobs = scored_logprobs(scorer, prompts, [r.token_ids for r in rollouts], pad_id, temperature)[0]
    return [replace(r, junior_logprobs=logprobs[i, : len(r.token_ids)].tolist()) for i, r in enumerate(rollouts)]
