"""verl's `tandem:` block, parsed strictly, and the actor worker's copy of its loss settings.

The block is flat (`tandem.enable`, `tandem.prob_senior`, `tandem.junior_token_loss_weight`,
`tandem.loss_denominator`, ...): its keys are split here into the tandem process
(`TandemConfig`) and the loss settings (`TandemLossConfig`), each parsed strictly, with the
legacy spellings `tandem.io.legacy` lists. `apply_tandem` hands the loss settings to the actor
worker under `actor_rollout_ref.tandem`, which `worker_loss_config` reads back.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from omegaconf import DictConfig, OmegaConf

from tandem.io import legacy
from tandem.process.config import TandemConfig
from tandem.errors import TandemError
from tandem.loss.loss_config import TandemLossConfig
from tandem.io.strict import build, unknown_key, valid_keys
from tandem_verl.names import WORKER_KEY

LOSS_BLOCK_KEYS = tuple(valid_keys(TandemLossConfig))  # loss settings beside the process keys in `tandem:`


@dataclass
class TandemVerlConfig:
    """The `tandem:` block of the Hydra config: an on/off switch, the tandem process and the loss settings."""

    enable: bool = False
    process: TandemConfig = field(default_factory=TandemConfig)
    loss: TandemLossConfig = field(default_factory=TandemLossConfig)

    @classmethod
    def from_dict(cls, d: dict | None) -> TandemVerlConfig:
        """Parse a block (of a full config: `tandem_verl.hydra_settings.run_settings`); the legacy switch, process and
        loss keys and the legacy placement are read via `tandem.io.legacy` (the placement by `TandemConfig.from_dict`)."""
        d = dict(d or {})
        enable = build(_Switch, {"enable": legacy.pop_switch(d, False)}, "tandem").enable
        valid = ["enable", *LOSS_BLOCK_KEYS, *valid_keys(TandemConfig), legacy.PLACEMENT_KEY]
        for key in d:
            if key not in valid:
                raise unknown_key(str(key), valid, "tandem")
        loss = build(TandemLossConfig, {k: v for k, v in d.items() if k in LOSS_BLOCK_KEYS}, "tandem")
        process = TandemConfig.from_dict({k: v for k, v in d.items() if k not in LOSS_BLOCK_KEYS}, "tandem")
        if enable and loss.junior_token_loss_weight not in (0.0, 1.0):
            raise TandemError(
                f"junior_token_loss_weight={loss.junior_token_loss_weight}: the verl path supports 0 (paper) or 1, "
                "because verl 0.9.1's ppo_loss casts the loss mask to bool"
            )
        return cls(enable=enable, process=process, loss=loss)

    @property
    def junior_token_loss_weight(self) -> float:
        return self.loss.junior_token_loss_weight


@dataclass
class _Switch:
    enable: bool = False


def worker_loss_config(actor_rollout_ref: DictConfig) -> TandemLossConfig:
    """The loss settings the actor worker applies; fail closed if the wiring is missing."""
    block = actor_rollout_ref.get(WORKER_KEY)
    if block is None or set(block) != {"junior_token_loss_weight", "loss_denominator"}:
        raise TandemError(
            f"actor_rollout_ref.{WORKER_KEY} is missing or incomplete: start tandem training through "
            "verl/main_tandem_ppo.py (apply_tandem), not verl.trainer.main_ppo"
        )
    return build(TandemLossConfig, OmegaConf.to_container(block) if isinstance(block, DictConfig) else dict(block),
                 f"actor_rollout_ref.{WORKER_KEY}")
