"""The `partner_reward` section of a trainer's config: weight, preset, target and coefficients.

Apart from the partner score's math (`tandem/partner_score.py`) so that reading a config, or
a command's `--help`, imports no torch. RLT's coefficients and what the score reads are
explained there.

The reward a rollout gets is `verifier_weight * verifier + weight * (score + penalty)`, where
`penalty` is `format_penalty` for a writer who saw the solution and did not close its
explanation. The defaults keep the verifier (weight 1) and charge nothing; RLT's teacher
reward (`RLT_TEACHER_REWARD`: the student score alone, -1 without the closing tag) is
`verifier_weight=0 format_penalty=-1`, which `tandem-rlvr demo --partner rlt` sets.
"""

from __future__ import annotations

from dataclasses import dataclass

from tandem.errors import TandemError

# RLT's coefficients (teacher_rlt.yaml), named by the term they scale.
PRESETS: dict[str, dict[str, float]] = {
    "rlt": {"logprob_mean": 1.0, "logprob_min": 0.01, "kl_mean": 3.0, "kl_max": 0.03},
}
# RLT's teacher reward (teacher_rlt.yaml, trainers/teacher_rewards.py): no verifier, and
# `not_matched_penalty` -1 when the explanation's closing tag is missing.
RLT_TEACHER_REWARD: dict[str, float] = {"verifier_weight": 0.0, "format_penalty": -1.0}
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
    verifier_weight: float = 1.0  # the verifier's reward beside the score; RLT's teacher: 0
    format_penalty: float = 0.0  # added to the score of an explanation left unclosed (writer_sees_solution); RLT: -1
    student: str = ""  # the model dir that scores (RLT's student); empty = the junior, or a GRPO run's base

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
        if not (isinstance(self.verifier_weight, (int, float)) and self.verifier_weight >= 0.0):
            raise TandemError(f"partner_reward.verifier_weight must be a number >= 0 (RLT's teacher: 0), got "
                              f"{self.verifier_weight!r}")
        if not (isinstance(self.format_penalty, (int, float)) and self.format_penalty <= 0.0):
            raise TandemError(f"partner_reward.format_penalty must be a number <= 0 (RLT's: -1), got "
                              f"{self.format_penalty!r}")
        if self.format_penalty and not self.writer_sees_solution:
            raise TandemError("partner_reward.format_penalty charges a writer who leaves RLT's explanation unclosed, "
                              "which only a writer who sees the solution writes; set writer_sees_solution=true or "
                              "format_penalty=0")
        if self.verifier_weight == 0.0 and not self.enabled:
            raise TandemError("partner_reward.verifier_weight=0 with weight=0 leaves no reward; set partner_reward."
                              "weight > 0 or keep the verifier")

    @property
    def enabled(self) -> bool:
        return self.weight > 0.0

    def coefficients(self) -> dict[str, float]:
        """Each term's coefficient: the one set here, else the preset's."""
        preset = PRESETS[self.preset]
        return {name: float(preset[name] if getattr(self, name) is None else getattr(self, name)) for name in TERMS}

    def require_verifier_reward(self, trainer: str) -> None:
        """Refuse, in one line, the keys only the embedded trainer honours (`trainer`: the backend's name)."""
        if self.verifier_weight != 1.0 or self.format_penalty or self.student:
            raise TandemError(f"partner_reward: verifier_weight={self.verifier_weight}, format_penalty="
                              f"{self.format_penalty}, student={self.student!r}: {trainer} adds the partner score "
                              "to the verifier's reward and scores with the junior or the base; set verifier_weight=1, "
                              "format_penalty=0, student='' (RLT's teacher reward runs on the embedded trainer)")
