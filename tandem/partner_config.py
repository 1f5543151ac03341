"""The `partner_reward` section of a trainer's config: weight, preset, target and coefficients.

Apart from the partner score's math (`tandem/partner_score.py`) so that reading a config, or
a command's `--help`, imports no torch. RLT's coefficients and what the score reads are
explained there.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.errors import TandemError

# RLT's coefficients (teacher_rlt.yaml), named by the term they scale.
PRESETS: dict[str, dict[str, float]] = {
    "rlt": {"logprob_mean": 1.0, "logprob_min": 0.01, "kl_mean": 3.0, "kl_max": 0.03},
}
TARGETS = ("answer", "solution")  # the gold answer inside the student's \\boxed{}, or the row's worked solution
TERMS = ("logprob_mean", "logprob_min", "kl_mean", "kl_max")  # the logged terms, in the formula's order


@dataclass(frozen=True)
class PartnerRewardConfig:
    """The `partner_reward` section: weight (0 = off), preset, target and each coefficient (None = the preset's)."""

    weight: float = 0.0
    preset: str = "rlt"
    target: str = "answer"
    logprob_mean: float | None = None
    logprob_min: float | None = None
    kl_mean: float | None = None
    kl_max: float | None = None
    # RLT's teacher input: the writer's prompt holds the reference solution (`tandem.solution_prompt`).
    writer_sees_solution: bool = False

    def __post_init__(self) -> None:
        if self.preset not in PRESETS:
            raise TandemError(f"partner_reward.preset={self.preset!r} is unknown; choose one of {', '.join(PRESETS)}")
        if self.target not in TARGETS:
            raise TandemError(f"partner_reward.target={self.target!r}: choose answer or solution")
        if not (isinstance(self.weight, (int, float)) and self.weight >= 0.0):
            raise TandemError(f"partner_reward.weight must be a number >= 0 (0 = off), got {self.weight!r}")
        if self.writer_sees_solution and self.target != "solution":
            raise TandemError("partner_reward.writer_sees_solution=true scores the solution the writer saw; set "
                              "partner_reward.target=solution")

    @property
    def enabled(self) -> bool:
        return self.weight > 0.0

    def coefficients(self) -> dict[str, float]:
        """Each term's coefficient: the one set here, else the preset's."""
        preset = PRESETS[self.preset]
        return {name: float(preset[name] if getattr(self, name) is None else getattr(self, name)) for name in TERMS}
