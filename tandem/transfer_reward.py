"""RLTR's transfer reward: a receiver continues the response's leak-free prefix alone, and is graded.

For each training response and each cut (`TransferConfig.cuts`, or RLTR's one uniform draw),
the prefix is `tandem.transfer_cut.transfer_cut`'s; the receiver continues it alone (`solo`
through the `tandem.rollout.RolloutBackend` protocol, every continuation of a step in one
batched call per remaining budget), `samples` times, and the verifier grades prefix +
continuation. Then

    R_transfer = mean of the verifier's scores over the response's continuations
    reward     = verifier_weight * verifier + weight * R_transfer

(RLTR: a * R_answer + R_format + w * R_transfer; `verifier_weight` is RLTR's a, and this
project's verifier has no format term.) The receiver's tokens are only read for their grade:
they never enter the writer's batch, so never its loss.

A response with no cut to continue from gets R_transfer = 0 and no receiver call, counted in
the step's metrics rather than refusing the batch (one degenerate response must not stop a run):
`no_room` where the leak-free cut keeps no token (the response shows the answer at once, or is
too short for the fraction), and `undetermined` where the gold is too short to locate (a whole
GRPO group shares its gold, so such a group gets the same 0 and its advantages are unchanged).

Pure Python: no torch; `reward_fn(text, gold)` is the verifier, `tokenizer` only decodes.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from tandem.coins import request_key as coin_key
from tandem.transfer_config import TransferConfig
from tandem.transfer_cut import NO_ROOM, UNDETERMINED, Cut, transfer_cut

METRIC_PREFIX = "transfer/"  # every metric of the transfer reward is logged under it


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


@dataclass(frozen=True)
class TransferResult:
    """One batch's transfer: R_transfer per response, every cut made, and the receiver's work."""

    scores: list[float]  # R_transfer per response
    cuts: list[list[Cut]]  # per response, one per fraction
    receiver_scores: list[float]  # every continuation's verifier score
    receiver_tokens: int  # tokens the receiver wrote
    lengths: list[int]  # each response's length in tokens

    def metrics(self) -> dict[str, float]:
        """The step's `transfer/*` metrics: the receiver's accuracy and tokens, the cuts used, the responses
        with no cut."""
        made = [c for row in self.cuts for c in row]
        used = [c for c in made if c.usable]
        n = max(1, len(made))
        p = METRIC_PREFIX
        return {
            f"{p}reward_mean": sum(self.scores) / max(1, len(self.scores)),
            f"{p}receiver_acc": (sum(s > 0.5 for s in self.receiver_scores) / len(self.receiver_scores)
                                 if self.receiver_scores else 0.0),
            f"{p}receiver_tokens": float(self.receiver_tokens),
            f"{p}continuations": float(len(self.receiver_scores)),
            f"{p}cut_fraction_asked": sum(c.fraction for c in made) / n,
            # the fraction of its response each usable prefix is, after the leak rule moved it back
            f"{p}cut_fraction_used": (sum(c.tokens / max(1, n_tokens) for row, n_tokens in zip(self.cuts, self.lengths)
                                          for c in row if c.usable) / len(used) if used else 0.0),
            f"{p}moved_back_frac": sum(c.moved_back for c in made) / n,
            f"{p}no_room_frac": sum(c.why_none == NO_ROOM for c in made) / n,
            f"{p}undetermined_frac": sum(c.why_none == UNDETERMINED for c in made) / n,
        }


def run_transfer(cfg: TransferConfig, receiver, tokenizer, prompts: list[list[int]], responses: list[list[int]],
                 golds: list[str], request_keys: list[int], sampling, budget: int,
                 reward_fn: Callable[[str, str], float]) -> TransferResult:
    """R_transfer for each response (see the module docstring).

    `receiver` is a `RolloutBackend` generating solo; `sampling` the rollouts' `SamplingConfig`;
    `budget` the response budget the prefix and its continuation share (the writer's
    `max_new_tokens`). Continuation j of response i is keyed by `request_keys[i]` and j, so a
    run replays.
    """
    cuts = [[transfer_cut(ids, gold, f, tokenizer) for f in fractions_for(cfg, key)]
            for ids, gold, key in zip(responses, golds, request_keys)]
    # (response, continuation index, cut) of every continuation to write
    todo = [(i, j * cfg.samples + s, c) for i, row in enumerate(cuts) for j, c in enumerate(row) if c.usable
            for s in range(cfg.samples)]
    groups: dict[int, list[tuple[int, int, Cut]]] = {}
    for item in todo:  # one batched call per remaining budget
        groups.setdefault(max(1, budget - item[2].tokens), []).append(item)
    per_response: list[list[float]] = [[] for _ in responses]
    every, tokens = [], 0
    for cap, items in sorted(groups.items()):
        got = receiver.generate([prompts[i] + responses[i][: c.tokens] for i, _, c in items],
                                replace(sampling, max_new_tokens=cap),
                                [_continuation_key(request_keys[i], k) for i, k, _ in items], solo=True)
        for (i, _, c), r in zip(items, got):
            text = tokenizer.decode(responses[i][: c.tokens] + list(r.token_ids), skip_special_tokens=True)
            score = float(reward_fn(text, golds[i]))
            per_response[i].append(score)
            every.append(score)
            tokens += len(r.token_ids)
    # a response with a cut that has no room still averages in as 0: the reward does not credit an untested cut
    scores = [transfer_score(s + [0.0] * sum(not c.usable for c in row) * cfg.samples) if row else 0.0
              for s, row in zip(per_response, cuts)]
    return TransferResult(scores, cuts, every, tokens, [len(r) for r in responses])


def _continuation_key(request_key: int, k: int) -> int:
    """A key for continuation k of a response, apart from the response's own (its coins and sampling)."""
    return coin_key(f"transfer/{request_key}", k)
