"""`TrainConfig`: the typed settings of one embedded GRPO/TRL run, and the checks that refuse a bad one.

Every field is a config key (`--config` file or `key=value`, see `tandem-rlvr train --help`);
the nested sections are the core's own settings, and the device and logging keys
`RunSettings`' (`tandem_app/train/run_settings.py`), flat like the rest. Legacy key
spellings are translated by `tandem.io.legacy` (`MOVED`), never here.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import ClassVar

from tandem.io import legacy
from tandem.process.config import ENGINE_MODES, TandemConfig
from tandem.errors import TandemError
from tandem.loss.loss_config import PolicyLossConfig
from tandem.rewards.partner_config import PartnerRewardConfig
from tandem.rollout.sampling import SamplingConfig
from tandem.trainers import require, require_partner_reward
from tandem_app.task import TaskConfig
from tandem_app.train.finite import check_finite_numbers, check_lr, check_non_negative, check_positive
from tandem_app.train.run_settings import RunSettings, check_run_settings

METHODS = ("tandem", "grpo")
POSITIVE_COUNTS = ("steps", "prompts_per_step", "group_size", "ppo_epochs", "ppo_mini_batches", "n_train_problems",
                   "n_val_problems", "save_every")


@dataclass
class _TrainSteps:
    """TrainConfig's own keys that come before the run settings (a base, so the keys keep their order)."""

    method: str = "tandem"  # tandem (alias trl: rollouts co-written with the frozen base) | grpo (solo rollouts)
    model: str = ""  # the pre-RL base: senior initialisation and, for trl, the junior (see tandem.junior_model)
    out: str = ""  # run directory
    seed: int = 0
    steps: int = 80
    prompts_per_step: int = 32
    group_size: int = 4  # responses per prompt (GRPO's n)
    lr: float = 5e-5
    warmup_steps: int = 0
    weight_decay: float = 0.0
    grad_clip: float = 1.0
    ppo_epochs: int = 1
    ppo_mini_batches: int = 2  # optimizer steps per epoch
    adv_estimator: str = "grpo"
    adv_epsilon: float = 1e-6
    norm_adv_by_std: bool = True
    n_train_problems: int = 5000
    n_val_problems: int = 128
    val_every: int = 10  # 0 = only at the end
    save_every: int = 10
    engine_mode: str = "auto"  # reference engine decoding: auto | paired | lockstep | lazy (same tokens)


# The bases' fields come first, the last base's first: the keys read as before (`train --help`, config.json).
@dataclass
class TrainConfig(RunSettings, _TrainSteps):
    """GRPO / TRL training of a senior initialised from the pre-RL base."""

    sampling: SamplingConfig = field(default_factory=lambda: SamplingConfig(max_new_tokens=160))  # rollouts
    tandem: TandemConfig = field(default_factory=TandemConfig)
    loss: PolicyLossConfig = field(default_factory=PolicyLossConfig)
    task: TaskConfig = field(default_factory=TaskConfig)
    partner_reward: PartnerRewardConfig = field(default_factory=PartnerRewardConfig)  # weight 0 = off

    MOVED: ClassVar[dict[str, str]] = legacy.TRAIN_MOVED

    def __post_init__(self):
        self._one_seed()
        self.method = legacy.METHOD_NAMES.get(self.method, self.method)
        if self.method not in METHODS:
            raise TandemError(f"unknown method {self.method!r}; choose tandem (alias trl) or grpo")
        check_finite_numbers(self, "train")
        for name in POSITIVE_COUNTS:
            if getattr(self, name) < 1:
                raise TandemError(f"train: {name} must be >= 1, got {getattr(self, name)}")
        check_positive(self, "train", ("lr", "grad_clip"))
        check_lr(self.lr, "train")
        check_run_settings(self, "train")
        self._check_advantages()
        check_non_negative(self, "train", ("warmup_steps", "weight_decay", "adv_epsilon", "val_every"))
        if self.engine_mode not in ENGINE_MODES:
            raise TandemError(f"unknown engine_mode {self.engine_mode!r}; choose one of {', '.join(ENGINE_MODES)}")
        if self.prompts_per_step * self.group_size < self.ppo_mini_batches:
            raise TandemError("train: ppo_mini_batches exceeds the number of responses per step")
        require_partner_reward("embedded", self.partner_reward)  # what this trainer runs: tandem.trainers
        require("embedded", "junior_update_kinds", self.tandem.junior_update_rule.kind)

    def _check_advantages(self) -> None:
        """A known estimator, and groups that can differ: GRPO's advantage is a reward minus its group's mean."""
        from tandem.loss.grpo import get_adv_estimator_fn

        get_adv_estimator_fn(self.adv_estimator)  # an unknown name: one line now, not at the first update
        if self.group_size == 1:  # every registered estimator is group-normalised (tandem.loss.grpo)
            raise TandemError(f"train: group_size={self.group_size} gives every response a zero advantage (GRPO "
                              "subtracts the mean reward of each prompt's group, here the response itself); set "
                              "group_size >= 2")

    def _one_seed(self) -> None:
        """A run has one seed: the sections take `seed`, and a section seed that disagrees is refused."""
        for section in ("tandem", "sampling"):
            if getattr(self, section).seed not in (0, self.seed):
                raise TandemError(f"{section}.seed={getattr(self, section).seed} but seed={self.seed}: a run has one "
                                  "seed; set seed only")
        self.tandem = replace(self.tandem, seed=self.seed)
        self.sampling = replace(self.sampling, seed=self.seed)

    @property
    def is_tandem(self) -> bool:
        return self.method == "tandem"
