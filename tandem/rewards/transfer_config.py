"""The `partner_reward.transfer` section: RLTR's transfer reward's cuts, receiver samples and receiver.

RLTR (Lee, Abbasloo, Tack, Shin, arXiv 2602.08489) cuts each training response at a fraction
tau drawn uniformly per response, lets a frozen receiver continue from the prefix, and adds the
verifier's score of the continuation to the generator's reward. Here:

- `cuts`: the fractions each response is cut at, each in (0, 1); empty (the default) = RLTR's
  draw, one fraction per response uniform in (0, 1), keyed by the response's request key so a
  run replays. Every cut is moved back before the answer's first appearance
  (`tandem.rewards.transfer_cut`), the rule the eval's prefix transfer uses.
- `samples`: receiver continuations per cut (>= 1); R_transfer is the verifier's mean over all of
  a response's continuations.
- `receiver`: a model dir of the senior's vocabulary; empty = the run's junior (TRL) or, for a
  GRPO run, its base (the initial model).

Apart from `tandem.rewards.partner_config` so the section reads without torch. Bad values are refused
in one line here, before any model loads.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from tandem.errors import TandemError

RLTR_DRAW = ()  # `cuts` empty: RLTR's per-response uniform draw of the fraction


@dataclass(frozen=True)
class TransferConfig:
    """Cuts (empty = RLTR's uniform draw), receiver continuations per cut, and the receiver's model dir."""

    cuts: tuple[float, ...] = RLTR_DRAW
    samples: int = 1
    receiver: str = ""  # empty = the junior (TRL) or the GRPO run's base

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

    @property
    def draws(self) -> bool:
        """RLTR's draw: one uniform fraction per response instead of fixed cuts."""
        return not self.cuts

    def continuations_per_response(self) -> int:
        return max(1, len(self.cuts)) * self.samples
