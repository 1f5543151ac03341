"""RLTR's transfer reward: a receiver continues a prefix of the response alone, and is graded.

For each training response and each cut (`TransferConfig.cuts`, or RLTR's one uniform draw),
the prefix is `tandem.rewards.transfer_cut.rule_cut`'s under the section's rules (RLTR's by
default, `partner_reward.preset=rltr`: floor(f * n) tokens wherever the answer is, nothing
skipped; the project's variant: moved back before the answer, `cut_rule=before_answer`); the
receiver continues it alone (`solo` through the `tandem.rollout.contract.RolloutBackend`
protocol), `samples` times, and the verifier grades prefix + continuation. Then

    R_transfer = mean of the verifier's scores over the response's continuations
    reward     = verifier_weight * verifier + weight * R_transfer

(RLTR: a * R_answer + R_format + w * R_transfer; `verifier_weight` is RLTR's a, and this
project's verifier has no format term.) The receiver's tokens are only read for their grade:
they never enter the writer's batch, so never its loss.

Where a rule skips a cut (`skip_no_room`: the cut keeps no token; `skip_undetermined`: the gold
is too short to locate, a whole GRPO group sharing it so its advantages are unchanged), the
response gets R_transfer = 0 and no receiver call, counted in the step's metrics rather than
refusing the batch (one degenerate response must not stop a run). Under RLTR's rules nothing is
skipped: a cut of 0 tokens is continued from the question alone.

**One receiver call per step.** A continuation may write `TransferConfig.receiver_cap`: the
writer's whole budget (`receiver_budget=full`, RLTR's) or what the prefix left of it
(`rest`, `budget - cut.tokens`), so under `rest` each cut has its own cap. Every continuation
is written in one batched call at the largest cap and then cut to its own (`within_cap`): the
reference engine's keyed sampling gives a request the same tokens whatever else is in its batch
and whatever its `max_new_tokens` (up to that cap; `tests/test_transfer_reward.py` pins both), so
the cut continuation is exactly the one a call at its own cap writes, finish reason included.
Only where the receiver reports a `context_length` that a long prefix would overrun at the
shared cap does that prefix wait for a further call at a cap it fits. `receiver_tokens` counts
the tokens kept; `receiver_tokens_decoded` what the calls decoded (the shared cap's price),
`receiver_calls` the calls.

Pure Python: no torch; `reward_fn(text, gold)` is the verifier, `tokenizer` only decodes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from tandem.process.coins import request_key as coin_key
from tandem.io.metric_log import (
    TRANSFER_CONTINUATIONS,
    TRANSFER_CUT_FRACTION_ASKED,
    TRANSFER_CUT_FRACTION_USED,
    TRANSFER_MOVED_BACK_FRACTION,
    TRANSFER_NO_ROOM_FRACTION,
    TRANSFER_RECEIVER_ACCURACY,
    TRANSFER_RECEIVER_CALLS,
    TRANSFER_RECEIVER_TOKENS,
    TRANSFER_RECEIVER_TOKENS_DECODED,
    TRANSFER_REWARD_MEAN,
    TRANSFER_UNDETERMINED_FRACTION,
)
from tandem.rewards.transfer_config import BEFORE_ANSWER, TransferConfig
from tandem.rewards.transfer_cut import NO_ROOM, UNDETERMINED, Cut, rule_cut

if TYPE_CHECKING:  # the type only: this module stays torch-free
    from tandem.rollout.contract import Rollout

def transfer_score(receiver_scores: Sequence[float]) -> float:
    """R_transfer of one response: the mean of its receiver continuations' verifier scores; 0 with none."""
    return sum(receiver_scores) / len(receiver_scores) if receiver_scores else 0.0


def combined(verifier: float, r_transfer: float, weight: float, verifier_weight: float = 1.0) -> float:
    """The reward the advantages see: verifier_weight * verifier + weight * R_transfer."""
    return verifier_weight * verifier + weight * r_transfer


def transfer_reward(verifier: float, receiver_scores: Sequence[float], weight: float,
                    verifier_weight: float = 1.0) -> float:
    """`combined` with R_transfer the mean of one response's receiver scores."""
    return combined(verifier, transfer_score(receiver_scores), weight, verifier_weight)


def drawn_fraction(request_key: int) -> float:
    """RLTR's cut fraction for one response: uniform in (0, 1), a pure function of its request key."""
    rng = random.Random(request_key)
    u = rng.random()
    while u == 0.0:  # [0, 1) -> (0, 1): a cut at 0 shows nothing
        u = rng.random()
    return u


def fractions_for(cfg: TransferConfig, request_key: int) -> tuple[float, ...]:
    return (drawn_fraction(request_key),) if cfg.draws else cfg.cuts


def cut_for(cfg: TransferConfig, ids: list[int], gold, fraction: float, tokenizer) -> Cut:
    """One response's cut at `fraction` under the section's rules (`rule_cut`)."""
    return rule_cut(ids, gold, fraction, tokenizer, before_answer=cfg.cut_rule == BEFORE_ANSWER,
                    skip_undetermined=cfg.skip_undetermined, skip_no_room=cfg.skip_no_room)


@dataclass(frozen=True)
class TransferResult:
    """One batch's transfer: R_transfer per response, every cut made, and the receiver's work."""

    scores: list[float]  # R_transfer per response
    cuts: list[list[Cut]]  # per response, one per fraction
    receiver_scores: list[float]  # every continuation's verifier score
    receiver_tokens: int  # tokens of the continuations graded (each cut to its own cap)
    lengths: list[int]  # each response's length in tokens
    receiver_tokens_decoded: int = 0  # tokens the receiver's calls decoded (the shared cap included)
    receiver_calls: int = 0  # batched receiver calls (one, unless a prefix could not fit the shared cap)

    def metrics(self) -> dict[str, float]:
        """The step's `transfer/*` metrics (`tandem.io.metric_log.TRANSFER_PREFIX`): the receiver's accuracy and
        tokens, the cuts used, the responses with no cut."""
        made = [c for row in self.cuts for c in row]
        used = [c for c in made if c.usable]
        n = max(1, len(made))
        return {
            TRANSFER_REWARD_MEAN: sum(self.scores) / max(1, len(self.scores)),
            TRANSFER_RECEIVER_ACCURACY: (sum(s > 0.5 for s in self.receiver_scores) / len(self.receiver_scores)
                                         if self.receiver_scores else 0.0),
            TRANSFER_RECEIVER_TOKENS: float(self.receiver_tokens),
            TRANSFER_RECEIVER_TOKENS_DECODED: float(self.receiver_tokens_decoded),
            TRANSFER_RECEIVER_CALLS: float(self.receiver_calls),
            TRANSFER_CONTINUATIONS: float(len(self.receiver_scores)),
            TRANSFER_CUT_FRACTION_ASKED: sum(c.fraction for c in made) / n,
            # the fraction of its response each usable prefix is, after the leak rule moved it back
            TRANSFER_CUT_FRACTION_USED: (sum(c.tokens / max(1, size) for row, size in zip(self.cuts, self.lengths)
                                             for c in row if c.usable) / len(used) if used else 0.0),
            TRANSFER_MOVED_BACK_FRACTION: sum(c.moved_back for c in made) / n,
            TRANSFER_NO_ROOM_FRACTION: sum(c.why_none == NO_ROOM for c in made) / n,
            TRANSFER_UNDETERMINED_FRACTION: sum(c.why_none == UNDETERMINED for c in made) / n,
        }


def result_record(result: TransferResult) -> dict:
    """One response's result as plain JSON values: how a rollout worker hands it to the trainer
    (verl's agent loop, in the sample's `extra_fields`); `merged_result` reads a batch of them back."""
    if len(result.scores) != 1:
        raise ValueError(f"a record holds one response's transfer, got {len(result.scores)}")
    return {"score": result.scores[0], "length": result.lengths[0],
            "cuts": [[c.tokens, c.fraction, c.floor, c.why_none] for c in result.cuts[0]],
            "receiver_scores": list(result.receiver_scores), "receiver_tokens": result.receiver_tokens,
            "receiver_tokens_decoded": result.receiver_tokens_decoded, "receiver_calls": result.receiver_calls}


def merged_result(records: Sequence[dict]) -> TransferResult:
    """The batch's `TransferResult` from its responses' `result_record`s, in order."""
    return TransferResult(
        scores=[float(r["score"]) for r in records],
        cuts=[[Cut(int(t), float(f), int(fl), str(why)) for t, f, fl, why in r["cuts"]] for r in records],
        receiver_scores=[float(x) for r in records for x in r["receiver_scores"]],
        receiver_tokens=sum(int(r["receiver_tokens"]) for r in records),
        lengths=[int(r["length"]) for r in records],
        receiver_tokens_decoded=sum(int(r["receiver_tokens_decoded"]) for r in records),
        receiver_calls=sum(int(r["receiver_calls"]) for r in records))


@dataclass(frozen=True)
class TransferPlan:
    """The continuations a batch asks of the receiver: every cut, and per continuation its context, cap and key."""

    cuts: list[list[Cut]]  # per response, one per fraction
    todo: list[tuple[int, int, Cut]]  # (response, continuation index, cut) of each continuation to write
    contexts: list[list[int]]  # prompt + prefix, per continuation
    caps: list[int]  # the receiver's max_new_tokens per continuation (`TransferConfig.receiver_cap`)
    keys: list[int]  # per continuation: its own key, apart from the response's


def plan_transfer(cfg: TransferConfig, tokenizer, prompts: list[list[int]], responses: list[list[int]],
                  golds: list[str], request_keys: list[int], budget: int) -> TransferPlan:
    """Cut each response (`fractions_for` its key) and list the continuations to write (see `run_transfer`)."""
    cuts = [[cut_for(cfg, ids, gold, f, tokenizer) for f in fractions_for(cfg, key)]
            for ids, gold, key in zip(responses, golds, request_keys)]
    todo = [(i, j * cfg.samples + s, c) for i, row in enumerate(cuts) for j, c in enumerate(row) if c.usable
            for s in range(cfg.samples)]
    return TransferPlan(cuts, todo, [prompts[i] + responses[i][: c.tokens] for i, _, c in todo],
                        [cfg.receiver_cap(budget, c.tokens) for _, _, c in todo],
                        [_continuation_key(request_keys[i], k) for i, k, _ in todo])


def score_transfer(cfg: TransferConfig, plan: TransferPlan, tokenizer, responses: list[list[int]], golds: list[str],
                   written: Sequence, reward_fn: Callable[[str, str], float], decoded: int = 0,
                   calls: int = 0) -> TransferResult:
    """Grade each written continuation (anything with `token_ids`, one per `plan.todo`, within its cap)
    after its prefix, and average a response's grades into its R_transfer."""
    per_response: list[list[float]] = [[] for _ in responses]
    every = []
    for (i, _, c), r in zip(plan.todo, written, strict=True):
        text = tokenizer.decode(responses[i][: c.tokens] + list(r.token_ids), skip_special_tokens=True)
        score = float(reward_fn(text, golds[i]))
        per_response[i].append(score)
        every.append(score)
    # a response with a cut that has no room still averages in as 0: the reward does not credit an untested cut
    scores = [transfer_score(s + [0.0] * sum(not c.usable for c in row) * cfg.samples) if row else 0.0
              for s, row in zip(per_response, plan.cuts)]
    return TransferResult(scores, plan.cuts, every, sum(len(r.token_ids) for r in written),
                          [len(r) for r in responses], decoded, calls)


def run_transfer(cfg: TransferConfig, receiver, tokenizer, prompts: list[list[int]], responses: list[list[int]],
                 golds: list[str], request_keys: list[int], sampling, budget: int,
                 reward_fn: Callable[[str, str], float]) -> TransferResult:
    """R_transfer for each response (see the module docstring).

    `receiver` is a `RolloutBackend` generating solo; `sampling` the rollouts' `SamplingConfig`;
    `budget` the writer's response budget (its `max_new_tokens`), which `cfg.receiver_budget`
    gives the receiver whole (`full`) or less the prefix (`rest`). Continuation j of response i is keyed by `request_keys[i]` and j, so a
    run replays, and its tokens do not depend on which other continuations share its call.
    """
    plan = plan_transfer(cfg, tokenizer, prompts, responses, golds, request_keys, budget)
    written: list = [None] * len(plan.todo)
    decoded = calls = 0
    for cap, rows in shared_calls(plan.caps, [len(x) for x in plan.contexts],
                                  getattr(receiver, "context_length", None)):
        got = receiver.generate([plan.contexts[k] for k in rows], replace(sampling, max_new_tokens=cap),
                                [plan.keys[k] for k in rows], solo=True)
        calls += 1
        for k, r in zip(rows, got):
            decoded += len(r.token_ids)
            written[k] = within_cap(r, plan.caps[k], tokenizer)
    return score_transfer(cfg, plan, tokenizer, responses, golds, written, reward_fn, decoded, calls)


def shared_calls(caps: list[int], context_lengths: list[int], limit: int | None) -> list[tuple[int, list[int]]]:
    """(cap, rows) of each receiver call: one call at the largest cap, unless a row's context plus that
    cap would overrun the receiver's context `limit`; such rows wait for a further call at the
    largest cap among them (the row that sets a call's cap always joins it: at its own cap it fits
    as the writer's own rollout did, or the engine refuses it in one line as before)."""
    left = sorted(range(len(caps)), key=lambda k: -caps[k])
    out = []
    while left:
        cap = caps[left[0]]
        rows = [k for k in left if k == left[0] or limit is None or context_lengths[k] + cap <= limit]
        out.append((cap, sorted(rows)))
        joined = set(rows)
        left = [k for k in left if k not in joined]
    return out


def within_cap(rollout: Rollout, cap: int, tokenizer) -> Rollout:
    """The rollout a call at `max_new_tokens=cap` would have returned, from one at a larger cap.

    With keyed sampling the first `cap` tokens are the same. A rollout that stopped (EOS, stop
    token or stop string) within them is unchanged: the smaller call stops at the same token.
    One longer was still writing at token `cap`, so the smaller call ends it there with
    `finish_reason="length"` and its text uncut by any stop string, as the engine does.
    """
    if len(rollout.token_ids) <= cap:
        return rollout
    ids = rollout.token_ids[:cap]

    def head(xs):
        return None if xs is None else xs[:cap]

    return replace(rollout, token_ids=ids, authorship_mask=rollout.authorship_mask[:cap],
                   text=tokenizer.decode(ids, skip_special_tokens=True), finish_reason="length",
                   senior_logprobs=head(rollout.senior_logprobs), junior_logprobs=head(rollout.junior_logprobs))


def _continuation_key(request_key: int, k: int) -> int:
    """A key for continuation k of a response, apart from the response's own (its coins and sampling)."""
    return coin_key(f"transfer/{request_key}", k)
