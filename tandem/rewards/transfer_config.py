"""The `partner_reward.transfer` section: RLTR's transfer reward's cuts, rules, receiver budget and receiver.

RLTR (Lee, Abbasloo, Tack, Shin, "Beyond Correctness: Learning Robust Reasoning via Transfer",
arXiv 2602.08489), as read here (paraphrased; the stored copies of the paper that could be read
open with its abstract and introduction, and the method is read from public summaries of it):

- reward (RLTR's method section): RLVR's `a * R_ans + R_fmt`, plus `w * R_transfer`; R_ans is 1
  when the final answer equals the gold, R_fmt a format reward, w the transfer weight.
- the cut: a truncation ratio tau drawn uniformly in (0, 1] for each response, the prefix its
  first floor(tau * |y|) tokens. No rule moves the cut relative to where the answer appears, and
  no response is left out; the random cut is meant to keep the reasoning robust to an
  interruption anywhere.
- the receiver: a separate frozen model, given the question and the prefix, continues it;
  R_transfer is the verifier's 1/0 on its final answer.
- not established from what could be read: the receiver's token budget (read here as the
  generator's own response budget, RLTR being built on verl, whose rollouts share one
  response length), the number of receiver continuations per prefix (read as one), and the
  values of w (only that a larger w gave larger consistency gains).

This section's defaults are that definition (`partner_reward.preset=rltr`, which `kind=transfer`
takes by default). The project's earlier variant stays reachable through the named options:

- `cuts`: the fractions each response is cut at, each in (0, 1); empty (default) = RLTR's draw,
  one fraction per response, uniform, keyed by the response's request key so a run replays (the
  draw is in (0, 1); RLTR's (0, 1] differs from it on a set of probability 0).
- `cut_rule`: `uniform` (RLTR, default): the cut is floor(f * n) tokens, wherever the answer is;
  `before_answer` (the project's variant): moved back before the gold's first appearance
  (`tandem.rewards.transfer_cut.cut_point`, the rule the eval's prefix transfer uses).
- `skip_undetermined`: false (RLTR, default); true: a response whose gold is too short to locate
  (`tandem.rewards.answer_text.gold_key` None, e.g. a single digit) gets R_transfer = 0 and no
  receiver call. With `before_answer` and false, such a cut stays at floor(f * n).
- `skip_no_room`: false (RLTR, default): a cut of 0 tokens is continued from the question alone;
  true: R_transfer = 0 and no receiver call.
- `receiver_budget`: `full` (RLTR as read here, default): the receiver may write the writer's whole
  budget (`sampling.max_new_tokens`; verl's `response_length`), e.g. 82 tokens on the toy
  demo whatever the prefix; `rest`: what the prefix left of it, `max(1, budget - cut tokens)`.
- `samples`: receiver continuations per cut (>= 1); R_transfer is the verifier's mean over all of
  a response's continuations.
- `receiver`: a model dir of the senior's vocabulary; empty = the run's junior (TRL) or, for a
  GRPO run, its base (the initial model).

`PROJECT_VARIANT` holds the four options that give the earlier behaviour bit for bit:
`TransferConfig(**PROJECT_VARIANT)`.

Apart from `tandem.rewards.partner_config` so the section reads without torch. Bad values are refused
in one line here, before any model loads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tandem.errors import TandemError

RLTR_DRAW = ()  # `cuts` empty: RLTR's per-response uniform draw of the fraction
UNIFORM, BEFORE_ANSWER = "uniform", "before_answer"
CUT_RULES = (UNIFORM, BEFORE_ANSWER)  # RLTR's floor(f * n) | the project's leak-free cut
FULL, REST = "full", "rest"
RECEIVER_BUDGETS = (FULL, REST)  # the writer's whole budget | what the prefix left of it
# The project's variant before `partner_reward.preset=rltr` (issue 63): the same cuts, plans and rewards.
PROJECT_VARIANT = {"cut_rule": BEFORE_ANSWER, "skip_undetermined": True, "skip_no_room": True, "receiver_budget": REST}


@dataclass(frozen=True)
class TransferConfig:
    """Cuts (empty = RLTR's uniform draw), the cut's rules, the receiver's budget, samples per cut and receiver."""

    cuts: tuple[float, ...] = RLTR_DRAW
    samples: int = 1
    receiver: str = ""  # empty = the junior (TRL) or the GRPO run's base
    cut_rule: str = UNIFORM  # uniform (RLTR) | before_answer (moved back before the gold's first appearance)
    skip_undetermined: bool = False  # true: a gold too short to locate gets R_transfer 0 and no receiver call
    skip_no_room: bool = False  # true: a cut of 0 tokens gets R_transfer 0 and no receiver call
    receiver_budget: str = FULL  # full (the writer's budget) | rest (the budget less the prefix)

    def __post_init__(self) -> None:
        cuts = tuple(self.cuts)
        for c in cuts:
            # bool is an int; nan and inf fail the interval test (nan compares false)
            if isinstance(c, bool) or not isinstance(c, (int, float)) or not 0.0 < c < 1.0 or math.isnan(c):
                raise TandemError(f"partner_reward.transfer.cuts: {c!r} is outside (0, 1); give fractions of the "
                                  "response such as [0.3, 0.5, 0.7], or [] for RLTR's uniform draw")
        object.__setattr__(self, "cuts", tuple(sorted({float(c) for c in cuts})))  # a cut asked twice is one cut
        if isinstance(self.samples, bool) or not isinstance(self.samples, int) or self.samples < 1:
            raise TandemError(f"partner_reward.transfer.samples must be an integer >= 1 (receiver continuations per "
                              f"cut), got {self.samples!r}")
        if not isinstance(self.receiver, str):
            raise TandemError(f"partner_reward.transfer.receiver must be a model dir or '', got {self.receiver!r}")
        self._check_rules()

    def _check_rules(self) -> None:
        if self.cut_rule not in CUT_RULES:
            raise TandemError(f"partner_reward.transfer.cut_rule={self.cut_rule!r} is unknown; choose uniform (RLTR) "
                              "or before_answer (moved back before the answer)")
        for name in ("skip_undetermined", "skip_no_room"):
            if not isinstance(getattr(self, name), bool):
                raise TandemError(f"partner_reward.transfer.{name} must be true or false, got {getattr(self, name)!r}")
        if self.receiver_budget not in RECEIVER_BUDGETS:
            raise TandemError(f"partner_reward.transfer.receiver_budget={self.receiver_budget!r} is unknown; choose "
                              "full (the writer's budget, RLTR) or rest (the budget less the prefix)")

    @property
    def draws(self) -> bool:
        """RLTR's draw: one uniform fraction per response instead of fixed cuts."""
        return not self.cuts

    @property
    def is_rltr(self) -> bool:
        """The cut and budget are RLTR's (cuts, samples and receiver aside)."""
        return (self.cut_rule, self.skip_undetermined, self.skip_no_room, self.receiver_budget) == (
            UNIFORM, False, False, FULL)

    def receiver_cap(self, budget: int, prefix_tokens: int) -> int:
        """The receiver's `max_new_tokens` after a prefix of `prefix_tokens`, the writer's budget being `budget`."""
        return budget if self.receiver_budget == FULL else max(1, budget - prefix_tokens)

    def continuations_per_response(self) -> int:
        return max(1, len(self.cuts)) * self.samples
