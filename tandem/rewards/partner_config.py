"""The `partner_reward` section of a trainer's config: weight, preset, target and coefficients.

Apart from the partner score's math (`tandem/rewards/partner_score.py`) so that reading a config, or
a command's `--help`, imports no torch. RLT's coefficients and what the score reads are
explained there.

The reward a rollout gets is `verifier_weight * verifier + weight * (score + penalty)`, where
`penalty` is `format_penalty` for a writer who saw the solution and did not close its
explanation. The defaults keep the verifier (weight 1) and charge nothing; RLT's teacher
reward (`RLT_TEACHER_REWARD`: the student score alone, -1 without the closing tag) is
`verifier_weight=0 format_penalty=-1`, which `tandem-rlvr demo --partner rlt` sets.

`kind` chooses the partner reward: `likelihood` (the default, the score above) or `transfer`
(RLTR's transfer reward, `tandem.rewards.transfer_reward`: a receiver continues a prefix of the
response and the verifier grades it; its settings are `transfer`,
`tandem.rewards.transfer_config.TransferConfig`). The embedded trainer, HF TRL (over the reference
engine) and verl (the rollout engine's junior continues, `tandem_verl.transfer_reward`) run
`transfer`; what each trainer runs of this section is declared in `tandem.trainers` and refused
there in one line (`require_partner_reward`).

`preset` follows `kind` when left out (`preset_name`): `rlt` (RLT's coefficients, `PRESETS`) for `likelihood`,
`rltr` for `transfer`, whose `transfer` section's defaults are RLTR's definition (a uniform cut
per response, no rule about where the answer appears, no skipped response, the writer's whole
budget for the receiver: `tandem.rewards.transfer_config`). A preset of the other kind is refused in
one line (fail closed). The project's earlier transfer variant is the `rltr` preset with
`transfer=TransferConfig(**PROJECT_VARIANT)` (cut_rule=before_answer, skip_undetermined=true,
skip_no_room=true, receiver_budget=rest).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tandem.errors import TandemError
from tandem.rewards.transfer_config import PROJECT_VARIANT, TransferConfig

# RLT's coefficients (teacher_rlt.yaml), named by the term they scale.
PRESETS: dict[str, dict[str, float]] = {
    "rlt": {"logprob_mean": 1.0, "logprob_min": 0.01, "kl_mean": 3.0, "kl_max": 0.03},
}
# RLT's teacher reward (teacher_rlt.yaml, trainers/teacher_rewards.py): no verifier, and
# `not_matched_penalty` -1 when the explanation's closing tag is missing.
RLT_TEACHER_REWARD: dict[str, float] = {"verifier_weight": 0.0, "format_penalty": -1.0}
TARGETS = ("answer", "solution")  # the gold answer inside the student's \\boxed{}, or the row's worked solution
TERMS = ("logprob_mean", "logprob_min", "kl_mean", "kl_max")  # the logged terms, in the formula's order
LIKELIHOOD, TRANSFER = "likelihood", "transfer"
KINDS = (LIKELIHOOD, TRANSFER)  # RLT's partner score | RLTR's transfer reward
RLTR = "rltr"  # kind=transfer's preset: the `transfer` section's defaults, RLTR's definition
PRESET_OF_KIND = {LIKELIHOOD: "rlt", TRANSFER: RLTR}  # the preset a kind takes when none is given


@dataclass(frozen=True)
class PartnerRewardConfig:
    """The `partner_reward` section: weight (0 = off), preset, target and each coefficient (None = the preset's)."""

    weight: float = 0.0
    preset: str = ""  # empty = the kind's (PRESET_OF_KIND): rlt for likelihood, rltr for transfer
    target: str = "answer"
    logprob_mean: float | None = None
    logprob_min: float | None = None
    kl_mean: float | None = None
    kl_max: float | None = None
    # RLT's teacher input: the writer's prompt holds the reference solution (`tandem.rewards.solution_prompt`).
    writer_sees_solution: bool = False
    verifier_weight: float = 1.0  # the verifier's reward beside the score; RLT's teacher: 0
    format_penalty: float = 0.0  # added to the score of an explanation left unclosed (writer_sees_solution); RLT: -1
    student: str = ""  # the model dir that scores (RLT's student); empty = the junior, or a GRPO run's base
    kind: str = LIKELIHOOD  # likelihood (RLT's partner score) | transfer (RLTR's transfer reward)
    transfer: TransferConfig = field(default_factory=TransferConfig)  # kind=transfer's section (RLTR's by default)

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise TandemError(f"partner_reward.kind={self.kind!r} is unknown; choose likelihood or transfer")
        self._check_preset()
        if self.kind == TRANSFER:
            self._check_transfer()
        elif self.transfer != TransferConfig():
            raise TandemError("partner_reward.transfer is read by kind=transfer only; set partner_reward.kind=transfer "
                              "or leave the transfer section out")
        if self.target not in TARGETS:
            raise TandemError(f"partner_reward.target={self.target!r}: choose answer or solution")
        if not (isinstance(self.weight, (int, float)) and self.weight >= 0.0):
            raise TandemError(f"partner_reward.weight must be a number >= 0 (0 = off), got {self.weight!r}")
        if self.writer_sees_solution and self.target != "solution":
            raise TandemError("partner_reward.writer_sees_solution=true scores the solution the writer saw; set "
                              "partner_reward.target=solution")
        if self.writer_sees_solution and not self.enabled:
            raise TandemError("partner_reward.writer_sees_solution=true shows the writer the solution the partner score "
                              "scores; set partner_reward.weight > 0 (or writer_sees_solution=false)")
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

    def _check_preset(self) -> None:
        """An unknown preset, or one of the other kind, refused in one line (left out: the kind's, `preset_name`).

        Kept as given, not filled in: a config written back and read with another kind stays valid."""
        if self.preset not in ("", *PRESETS, RLTR):
            raise TandemError(f"partner_reward.preset={self.preset!r} is unknown; choose one of "
                              f"{', '.join((*PRESETS, RLTR))} (or leave it out: the kind's)")
        if self.preset_name == RLTR and self.kind != TRANSFER:
            raise TandemError("partner_reward.preset=rltr is RLTR's transfer reward; set partner_reward.kind=transfer, "
                              "or leave the preset out (rlt) for the likelihood score")
        if self.kind == TRANSFER and self.preset_name != RLTR:
            variant = " ".join(f"partner_reward.transfer.{k}={str(v).lower()}" for k, v in PROJECT_VARIANT.items())
            raise TandemError(f"partner_reward.preset={self.preset} names the likelihood score's coefficients, which "
                              f"kind=transfer does not read; leave the preset out or set rltr (the earlier transfer "
                              f"variant: {variant})")

    def _check_transfer(self) -> None:
        """kind=transfer reads none of the likelihood score's keys; one set is refused, not ignored."""
        if not self.enabled:
            raise TandemError("partner_reward.kind=transfer with weight=0 adds nothing; set partner_reward.weight > 0 "
                              "(RLTR's transfer weight w)")
        stray = [name for name in TERMS if getattr(self, name) is not None]
        stray += [name for name, off in (("target", "answer"), ("writer_sees_solution", False), ("format_penalty", 0.0),
                                         ("student", "")) if getattr(self, name) != off]
        if stray:
            raise TandemError(f"partner_reward.kind=transfer does not read {', '.join(stray)} (the likelihood score's "
                              "keys); leave them unset, and name the receiver with partner_reward.transfer.receiver")

    @property
    def preset_name(self) -> str:
        """The preset in force: the one given, else the kind's (`PRESET_OF_KIND`)."""
        return self.preset or PRESET_OF_KIND[self.kind]

    @property
    def transfers(self) -> bool:
        """RLTR's transfer reward is on."""
        return self.kind == TRANSFER and self.enabled

    @property
    def enabled(self) -> bool:
        return self.weight > 0.0

    def coefficients(self) -> dict[str, float]:
        """Each term's coefficient: the one set here, else the preset's (kind=likelihood's: kind=transfer has none)."""
        if self.kind != LIKELIHOOD:
            raise TandemError("partner_reward.kind=transfer has no likelihood-score coefficients; read "
                              "partner_reward.transfer instead")
        preset = PRESETS[self.preset_name]
        return {name: float(preset[name] if getattr(self, name) is None else getattr(self, name)) for name in TERMS}
