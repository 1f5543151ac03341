"""The `partner_reward` section on verl (read by `tandem_verl.hydra_settings`): verl's reference worker set up to score.

The partner score scores with verl's reference worker, loaded with the junior
(`tandem_verl.partner_score` computes the score, `tandem_verl.workers` loads the junior). verl
builds that worker only for a KL term: a run without one gets `use_kl_loss` with
coefficient 0 (no gradient). A GRPO run (`tandem.enable=false`) is scored by its base,
verl's usual reference (RLT's setting), through `PARTNER_TRAINER_MODE`.

`writer_sees_solution=true` (RLT's teacher input) needs the partner score on (it is what
scores the solution shown) and a worked solution in every training row's
`extra_info.solution`, checked here before Ray starts; a GRPO run's writer then runs in
`tandem_verl.solution_writer`'s agent loop (a tandem run's loop does it itself).

`kind=transfer` (RLTR's transfer reward) needs no scorer: the rollout engine's junior continues
each prefix (`wire_transfer`; the engine and agent loop are `tandem_verl.wiring`'s).
"""

from __future__ import annotations

import logging
from pathlib import Path

from omegaconf import DictConfig, open_dict

from tandem.errors import TandemError
from tandem.rewards.partner_config import PartnerRewardConfig
from tandem.rewards.solution_prompt import require_solution
from tandem.trainers import require, require_partner_reward
from tandem_verl.names import (
    AGENT_LOOP_MANAGER,
    PARTNER_TRAINER_MODE,
    SCORER_KEY,
    SOLUTION_AGENT_LOOP,
)
from tandem_verl.hydra_settings import RunSettings
from tandem_verl.tandem_block import TandemVerlConfig

logger = logging.getLogger(__name__)


def wire_partner_reward(config: DictConfig, settings: RunSettings) -> None:
    """Point verl's reference worker at the scorer and turn it on (see the module docstring); mutates `config`.

    Refused in one line: a junior that follows the senior (the reference worker is frozen),
    a KL term toward a junior that is not the base, and a GRPO run on another trainer mode
    than verl's sync one.
    """
    t, partner = settings.tandem, settings.partner
    require_partner_reward("verl", partner)  # what verl runs of the section (tandem.trainers), before any wiring
    if partner.transfers:
        wire_transfer(config, t, partner)
        return
    if partner.writer_sees_solution:
        wire_solution_writer(config, t, partner)
    if not partner.enabled:
        return
    actor, model = config.actor_rollout_ref.actor, config.actor_rollout_ref.model.path
    junior = (t.process.junior_model or model) if t.enable else model  # GRPO: the base scores
    mode = config.trainer.v1.trainer_mode
    if t.enable and not t.process.junior_update_rule.frozen:  # the reference worker scores, frozen
        require("verl", "scores_with_following_junior", weight=partner.weight, rule=t.process.junior_update)
    checks = [
        (t.enable or mode in ("sync", PARTNER_TRAINER_MODE),
         f"trainer.v1.trainer_mode={mode}: a GRPO run is scored on verl's sync trainer; set trainer.v1.trainer_mode=sync"),
        (junior == model or not actor.use_kl_loss or float(actor.kl_loss_coef) == 0.0,
         f"actor.kl_loss_coef={actor.kl_loss_coef}: verl's reference worker holds the junior {junior!r} to score with, "
         "so the KL term would pull toward it, not the base; set kl_loss_coef=0 or score a self-paired run"),
    ]
    for ok, why in checks:
        if not ok:
            raise TandemError(f"partner_reward.weight={partner.weight}: {why}")
    with open_dict(config):
        if not actor.use_kl_loss:  # verl builds its reference worker for a KL term only
            actor.use_kl_loss, actor.kl_loss_coef = True, 0.0
            logger.info("partner_reward: actor.use_kl_loss=True with kl_loss_coef=0 (verl's reference worker scores)")
        if junior != model:  # the reference worker loads the junior instead of the senior's base
            config.actor_rollout_ref[SCORER_KEY] = junior
        if not t.enable:
            config.trainer.v1.trainer_mode = PARTNER_TRAINER_MODE


def wire_transfer(config: DictConfig, t: TandemVerlConfig, partner: PartnerRewardConfig) -> None:
    """RLTR's transfer reward: the rollout engine's junior is the receiver (`tandem_verl.transfer_reward`); a GRPO
    run goes to verl's sync trainer plus the reward. Refused in one line: a receiver named apart from the engine's
    junior, and a GRPO run on another trainer mode."""
    if partner.transfer.receiver:
        who = "tandem.junior_model" if t.enable else "tandem.junior_model (a GRPO run's receiver, default its base)"
        raise TandemError(f"partner_reward.transfer.receiver={partner.transfer.receiver!r}: on verl the receiver is "
                          f"the rollout engine's junior; name it with {who} and leave transfer.receiver empty")
    mode = config.trainer.v1.trainer_mode
    if not t.enable and mode not in ("sync", PARTNER_TRAINER_MODE):
        raise TandemError(f"partner_reward.kind=transfer: trainer.v1.trainer_mode={mode}: a GRPO run gets the transfer "
                          "reward on verl's sync trainer; set trainer.v1.trainer_mode=sync")
    if not t.enable:
        with open_dict(config):
            config.trainer.v1.trainer_mode = PARTNER_TRAINER_MODE


def require_row_solutions(files) -> None:
    """Every training row has `extra_info.solution`; the first without one is one error naming its file and row."""
    import pyarrow.parquet as pq

    for path in [files] if isinstance(files, str) else list(files or []):
        if not str(path).endswith(".parquet") or not Path(path).expanduser().is_file():
            continue  # verl reports a missing file itself
        extra = pq.read_table(Path(path).expanduser(), columns=["extra_info"]).column("extra_info").to_pylist()
        for i, info in enumerate(extra):
            info = info or {}
            require_solution(info.get("solution"), f"{path}: row {i} (id {info.get('id', '?')})")


def wire_solution_writer(config: DictConfig, t: TandemVerlConfig, partner: PartnerRewardConfig) -> None:
    """Check what `writer_sees_solution` needs and point a GRPO run at the solution writer's agent loop."""
    agent = config.actor_rollout_ref.rollout.agent
    if not t.enable and agent.default_agent_loop not in ("single_turn_agent", SOLUTION_AGENT_LOOP):
        raise TandemError(f"rollout.agent.default_agent_loop={agent.default_agent_loop}: only verl's single-turn loop "
                          "can show the writer the solution; drop that override or set writer_sees_solution=false")
    require_row_solutions(config.data.train_files)
    if not t.enable:  # a tandem run's agent loop builds the writer's prompt itself (apply_tandem points verl at it)
        with open_dict(config):
            agent.default_agent_loop = SOLUTION_AGENT_LOOP
            agent.agent_loop_manager_class = AGENT_LOOP_MANAGER
