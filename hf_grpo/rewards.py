"""TRL reward functions: the project's grader, and the partner score of a tandem rollout.

TRL calls each reward function with the completions and every dataset column (and each extra
key the rollout returned) as keyword arguments, one value per row, plus `log_metric` for
metrics logged beside the reward; it sums the functions' rewards. `grader_reward` is the
verifier (`tandem.grading.reward` against the `answer` column). `partner_reward_function`
builds the partner score's (`tandem.rewards.partner_score`) from a bound `TandemRolloutFunc`, whose
scorer, tokenizer and sampling it reads when TRL calls it. With
`partner_reward.writer_sees_solution` the scorer reads each row's plain prompt (the rollout's
`plain_prompt_ids`), never the writer's, and a co-writing junior's log-probs of the response,
read by the engine after the writer's prompt, are read again after the plain one.

Under `partner_reward.kind=transfer` the bound rollout's function is RLTR's transfer reward
instead (`transfer_reward_function`): `tandem.rewards.transfer_reward.run_transfer` with the rollout's
receiver engine, its sampling and budget, the rows' request keys and the verifier, so TRL's sum
`verifier + weight * R_transfer` is the embedded trainer's reward, and the same `transfer/*`
metrics are logged through `log_metric`. The section's rules (`partner_reward.transfer`: RLTR's
uniform cut by default, or `cut_rule`, `skip_undetermined`, `skip_no_room`, `receiver_budget`) are
honoured there, the budget handed over being the writer's `max_new_tokens`.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from tandem.errors import TandemError
from tandem.grading import reward as grade_reward
from tandem.grading.grader import reward_health
from tandem.grading.grader import stats as grader_stats
from tandem.io.metric_log import PARTNER_SCORE, TIME_PARTNER, TRL_TRANSFER_REWARD
from tandem.rewards.partner_score import partner_rewards, read_after, step_metrics
from tandem.rewards.transfer_reward import run_transfer



def completion_text(completion) -> str:
    """The text of a TRL completion: a string, or a conversation whose last message is the assistant's."""
    if isinstance(completion, str):
        return completion
    return completion[-1]["content"]


def grader_reward(completions, answer, log_metric=None, **kwargs) -> list[float]:
    """TRL reward function: the project's grader (`tandem.grading.reward`) against the dataset's `answer` column.

    Through TRL's `log_metric` it logs the reward's health beside it each step
    (`grader_timeouts`, `grader_too_long`, `grader_errors`, `grader_unparsed`, `grader_hedged`:
    `tandem.grading.grader.reward_health`).
    """
    before = grader_stats(this_thread=True)
    rewards = [grade_reward(completion_text(c), a) for c, a in zip(completions, answer)]
    if log_metric is not None:
        for name, value in reward_health(before).items():
            log_metric(name, value)
    return rewards


def partner_reward_function(rollout):
    """The reward function `rollout.partner_reward_func()` returns (see its docstring)."""
    cfg = rollout.partner_reward
    if not cfg.enabled:
        raise TandemError("partner_reward.weight is 0 (off); build the rollout with a PartnerRewardConfig of "
                          "weight > 0 to get its reward function")

    def partner_score(completions, tandem_rollout, log_metric=None, plain_prompt_ids=None, **columns) -> list[float]:
        t0 = time.perf_counter()
        golds = columns.get(cfg.target)
        if golds is None:
            raise TandemError(f"partner_reward.target={cfg.target} needs a '{cfg.target}' column in the dataset; "
                              f"add it or set partner_reward.target={'answer' if cfg.target == 'solution' else 'solution'}")
        rollouts = list(tandem_rollout)
        co_wrote = all(r.junior_logprobs is not None for r in rollouts)
        tokenizer, temperature = rollout.engine.tokenizer, rollout.sampling.logprob_temperature
        prompts = [r.prompt_ids for r in rollouts] if plain_prompt_ids is None else [list(p) for p in plain_prompt_ids]
        if co_wrote and any(p != r.prompt_ids for p, r in zip(prompts, rollouts)):  # the writer read another prompt
            rollouts = read_after(rollout.scorer, prompts, rollouts, tokenizer.pad_token_id, temperature)
        score, terms = partner_rewards(cfg, rollout.scorer, tokenizer, prompts, rollouts, [str(g) for g in golds],
                                       temperature, scorer_wrote_with_engine=co_wrote)
        if log_metric is not None:
            for name, value in {**step_metrics(terms, score), TIME_PARTNER: time.perf_counter() - t0}.items():
                log_metric(name, value)
        return (cfg.weight * score).tolist()

    partner_score.__name__ = PARTNER_SCORE  # TRL logs rewards/<name>/mean
    return partner_score


def transfer_reward_function(rollout, verifier: Callable[[str, str], float] = grade_reward):
    """The reward function `rollout.partner_reward_func()` returns under `kind=transfer`: weight * R_transfer.

    `verifier(text, gold)` grades each receiver continuation (prefix + continuation) against the
    `answer` column: the project's grader unless the run grades with another.
    """
    cfg = rollout.partner_reward

    def transfer_reward(completions, tandem_rollout, answer, log_metric=None, plain_prompt_ids=None,
                        **columns) -> list[float]:
        t0 = time.perf_counter()
        rollouts = list(tandem_rollout)
        # the receiver reads the plain question, never a writer's prompt
        prompts = [r.prompt_ids for r in rollouts] if plain_prompt_ids is None else [list(p) for p in plain_prompt_ids]
        done = run_transfer(cfg.transfer, rollout.receiver, rollout.engine.tokenizer, prompts,
                            [r.token_ids for r in rollouts], [str(a) for a in answer],
                            [r.request_key for r in rollouts], rollout.sampling, rollout.sampling.max_new_tokens,
                            verifier)
        if log_metric is not None:
            for name, value in {**done.metrics(), TIME_PARTNER: time.perf_counter() - t0}.items():
                log_metric(name, value)
        return [cfg.weight * s for s in done.scores]

    transfer_reward.__name__ = TRL_TRANSFER_REWARD
    return transfer_reward
