"""The loss settings: the paper's actor loss (verl's field names) and the two that tandem adds.

`loss_denominator` is the token-mean's denominator:
- `senior_tokens`: the senior gate's weights (`tandem.loss.senior_gate.token_weights`), so junior
  tokens neither contribute nor dilute and a response written entirely by the junior
  contributes nothing (our default);
- `all_response_tokens`: every response token, junior ones included, as the paper's runs
  did (the release's verl sets `loss_mask = response_mask` and computes the denominator
  from it before its gate zeroes junior tokens in the numerator). The gradient is then
  about the senior fraction (~0.5) times the `senior_tokens` one.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from tandem.io import legacy
from tandem.errors import TandemError

AGG_MODES = ("token-mean", "token-sum", "seq-mean-token-sum", "seq-mean-token-mean", "seq-mean-token-sum-norm")
KL_TYPES = ("k1", "kl", "abs", "k2", "mse", "k3", "low_var_kl")
# The token-mean's denominator: the gated weights (ours) or every response token (the release's).
LOSS_DENOMINATORS = ("senior_tokens", "all_response_tokens")


@dataclass
class TandemLossConfig:
    """The loss settings tandem adds: how junior-written tokens count (embedded trainer and verl).

    `junior_token_loss_weight` (legacy spelling: `tandem.io.legacy.LOSS_KEYS`): the numerator weight of a
    junior token (0 = the paper's: no gradient). `loss_denominator`: `senior_tokens` (the
    token-mean divides by the weights: our default) or `all_response_tokens` (divides by
    every response token, as the release's runs did).
    """

    junior_token_loss_weight: float = 0.0
    loss_denominator: str = "senior_tokens"

    ALIASES: ClassVar[dict[str, str]] = legacy.LOSS_KEYS

    def __post_init__(self):
        w = self.junior_token_loss_weight
        if isinstance(w, bool) or not isinstance(w, (int, float)) or w < 0:
            raise TandemError(f"junior_token_loss_weight must be a number >= 0, got {w!r}")
        self.junior_token_loss_weight = float(w)
        if self.loss_denominator not in LOSS_DENOMINATORS:
            raise TandemError(
                f"loss_denominator must be one of {', '.join(LOSS_DENOMINATORS)}, got {self.loss_denominator!r}"
            )

    def tandem_settings(self) -> dict:
        """The two settings by name (logged at train start)."""
        return {"junior_token_loss_weight": self.junior_token_loss_weight, "loss_denominator": self.loss_denominator}


@dataclass
class PolicyLossConfig(TandemLossConfig):
    """The actor loss of the paper's configuration (verl ActorConfig field names) plus tandem's two."""

    policy_loss: str = "vanilla"
    clip_ratio: float = 0.2
    clip_ratio_low: float | None = None  # None = clip_ratio
    clip_ratio_high: float | None = None  # None = clip_ratio
    clip_ratio_c: float | None = 3.0  # dual-clip lower bound for A < 0 (verl's default); None = off
    loss_agg_mode: str = "token-mean"
    entropy_coeff: float = 0.0
    use_kl_loss: bool = False
    kl_loss_coef: float = 0.001
    kl_loss_type: str = "low_var_kl"

    def __post_init__(self):
        super().__post_init__()
        if self.loss_agg_mode not in AGG_MODES:
            raise TandemError(f"unknown loss_agg_mode {self.loss_agg_mode!r}; choose one of {', '.join(AGG_MODES)}")
        if self.clip_ratio_c is not None and self.clip_ratio_c <= 1.0:
            raise TandemError(
                f"clip_ratio_c (dual-clip bound) must be > 1, got {self.clip_ratio_c}; or null to disable"
            )
        if self.kl_loss_type not in KL_TYPES:
            raise TandemError(f"unknown kl_loss_type {self.kl_loss_type!r}; choose one of {', '.join(KL_TYPES)}")
