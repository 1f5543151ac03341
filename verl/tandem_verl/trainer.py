"""The tandem trainer and task runner for verl 0.9.1 (v1 trainer, sync mode).

`apply_tandem` sets `trainer.v1.trainer_mode=tandem_sync`; verl then builds
`TandemPPOTrainer`, which is verl's sync trainer with two substitutions:
- the hybrid actor/rollout worker becomes `TandemActorRolloutRefWorker` (senior gate);
- verl's "vllm" rollout replica becomes `TandemvLLMReplica` (sleep level 2; the junior comes back from a host copy);
and one ordering fix: checkpoints are crash-safe (`tandem_verl.checkpoint_tracker`).
With `tandem.junior_update` other than `frozen` the trainer also drives the junior in the
rollout engines after each sync, saves it with each checkpoint and restores it at resume
(`tandem_verl.junior_driver`); with `partner_reward.weight > 0` it adds the partner score to
each response's reward before verl's advantages (`RewardStep`, `tandem_verl.partner_score`).
Registries are per process, so `TandemTaskRunner` (the Ray actor that builds the
trainer) imports this module on the remote side before verl looks the names up.
"""

from __future__ import annotations

import os
from pathlib import Path

import ray
from verl.trainer.main_ppo import TaskRunnerV1
from verl.trainer.ppo.utils import Role
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync
from verl.utils.debug import marked_timer
from verl.utils.transferqueue_utils import tq
from verl.workers.rollout.replica import RolloutReplicaRegistry

from tandem.errors import TandemError
from tandem.process.junior_update import steps_per_sync_error
from tandem.io.metric_log import JUNIOR_RESUMED_PREFIX, PARTNER_SCORE, TRANSFER_PREFIX
from tandem_verl.checkpoint_tracker import (
    keep_count,
    remove_checkpoint,
    repair_tracker,
    retention_off,
    tracker_names,
    write_tracker,
)
from tandem_verl.junior_driver import JuniorUpdater, checkpoint_state, saved_junior
from tandem_verl.names import PARTNER_TRAINER_MODE, SCORER_KEY, TRAINER_MODE
from tandem_verl.padding_rows import clear_padding_authorship
from tandem_verl.partner_score import PartnerScorer, scorer_context
from tandem_verl.refusals import optimizer_steps_per_step
from tandem_verl.reward import health_metrics
from tandem_verl.hydra_settings import RunSettings, run_settings
from tandem_verl.transfer_reward import TransferRewarder


def _load_tandem_vllm_replica():
    from tandem_verl.replica import TandemvLLMReplica

    return TandemvLLMReplica


class RewardStep:
    """What both trainers do to a step's rewards before verl's advantages: log the grader's health
    and, with partner_reward.weight > 0, add the partner score (`PartnerScorer`) or, with
    kind=transfer, RLTR's transfer reward (`TransferRewarder`)."""

    SOLO = False  # True where the senior writes every token (a GRPO run scored by its base)

    @property
    def settings(self) -> RunSettings:
        """The run's settings (`tandem_verl.hydra_settings`: read once in this Ray actor's process)."""
        return run_settings(self.config)

    @property
    def partner_scorer(self) -> PartnerScorer | None:
        """The partner score's driver when partner_reward.weight > 0 (built on first use)."""
        if not hasattr(self, "_partner_scorer"):
            cfg = self.settings.partner
            self._partner_scorer = None
            if cfg.enabled and not cfg.transfers:
                arr = self.config.actor_rollout_ref
                scorer = arr.get(SCORER_KEY) or arr.model.path  # what verl's reference worker loaded
                context = scorer_context(scorer, bool(arr.model.get("trust_remote_code", False)))
                self._partner_scorer = PartnerScorer(cfg, self.tokenizer, float(arr.rollout.temperature), context,
                                                     self.SOLO)
        return self._partner_scorer

    @property
    def transfer_rewarder(self) -> TransferRewarder | None:
        """RLTR's transfer reward's step when partner_reward.kind=transfer (the agent loops ran the receiver)."""
        if not hasattr(self, "_transfer_rewarder"):
            cfg = self.settings.partner
            self._transfer_rewarder = TransferRewarder(cfg) if cfg.transfers else None
        return self._transfer_rewarder

    def _compute_advantage(self, batch, metrics: dict):
        metrics.update(self._reward_health(batch))
        if self.partner_scorer is not None:  # after verl's old and reference log-probs, before its advantages
            with marked_timer(PARTNER_SCORE, self.timing_raw, color="yellow"):
                self.partner_scorer.apply(self, batch, metrics)
        if self.transfer_rewarder is not None:
            with marked_timer(TRANSFER_PREFIX.rstrip("/"), self.timing_raw, color="yellow"):
                self.transfer_rewarder.apply(self, batch, metrics)
        return super()._compute_advantage(batch, metrics)

    @staticmethod
    def _reward_health(batch) -> dict[str, float]:
        """The grader calls of this step's real samples cut short (`tandem_verl.reward.health_metrics`)."""
        real = [key for key, tag in zip(batch.keys, batch.tags) if not tag.get("is_padding")]
        if not real:
            return {}
        data = tq.kv_batch_get(keys=real, partition_id=batch.partition_id, select_fields=["extra_fields"])
        return health_metrics(list(data["extra_fields"]))


@register_trainer(PARTNER_TRAINER_MODE)
class PartnerPPOTrainer(RewardStep, PPOTrainerSync):
    """verl's sync PPO trainer for a GRPO run scored by its base (RLT's setting): verl's own
    workers and replica; the reference worker is the base and scores every response token."""

    SOLO = True


@register_trainer(TRAINER_MODE)
class TandemPPOTrainer(RewardStep, PPOTrainerSync):
    """verl's sync PPO trainer with the senior-gated actor worker and the tandem replica."""

    def _init_resource_pool_mgr(self):
        super()._init_resource_pool_mgr()
        roles = [r for r in (Role.ActorRollout, Role.ActorRolloutRef) if r in self.role_worker_mapping]
        if not roles:
            raise TandemError("tandem training needs verl's hybrid actor-rollout worker (hybrid_engine=True)")
        from tandem_verl.workers import TandemActorRolloutRefWorker

        for role in roles:
            self.role_worker_mapping[role] = ray.remote(TandemActorRolloutRefWorker)

    @property
    def junior_updater(self) -> JuniorUpdater | None:
        """The junior's driver when tandem.junior_update is not `frozen` (built on first use: the replicas exist then)."""
        if not hasattr(self, "_junior_updater"):
            rule = self.settings.tandem.process.junior_update_rule
            self._junior_updater = None
            if not rule.frozen:
                steps = optimizer_steps_per_step(self.config, self._batch_multiple())
                why = steps_per_sync_error(rule, steps)
                if why:  # the wiring checked the unpadded count; verl's padding can add mini-batches
                    raise TandemError(f"tandem.{why} (verl pads each batch to a multiple of {self._batch_multiple()} "
                                      "samples, which adds mini-batches; choose train_batch_size x rollout.n a "
                                      "multiple of it)")
                self._junior_updater = JuniorUpdater(rule, self.llm_server_manager.get_replicas(), steps)
        return self._junior_updater

    def _batch_multiple(self) -> int:
        """The multiple verl pads each batch to (`_balance_batch`: data-parallel size and actor mini-batch)."""
        role, group = "actor", self.actor_rollout_wg
        if role not in group._dispatch_info:
            group._dispatch_info[role] = group._query_dispatch_info(role)
        return self._get_required_batch_multiple(max(group._dispatch_info[role]) + 1)

    def _balance_batch(self, batch, metrics, logging_prefix="global_seqlen", keep_minibatch=False):
        batch = super()._balance_batch(batch, metrics, logging_prefix, keep_minibatch)
        clear_padding_authorship(batch, tq)  # verl's padding samples keep sample 0's mask (padding_rows.py)
        return batch

    def on_init_end(self):
        super().on_init_end()  # the senior's weights synced (resumed or initial)
        if self.global_steps == 0:
            return
        if self.junior_updater is not None:
            self.junior_updater.restore(checkpoint_state(self._resumed_from, self.global_steps))
            # the checkpoint's own step: the killed run had applied its update (or not) after the save
            self.junior_updater.update(self.global_steps, prefix=JUNIOR_RESUMED_PREFIX)
        elif saved_junior(self._resumed_from).is_dir():
            raise TandemError(f"{self._resumed_from} holds a junior that followed the senior "
                              f"({saved_junior(self._resumed_from).name}/), but this "
                              "run sets tandem.junior_update=frozen and would go on with the base; resume with the "
                              "run's own junior_update")

    def on_step_end(self):
        super().on_step_end()  # this step's senior synced into the engines
        if self.junior_updater is not None:
            self.junior_updater.update(self.global_steps)

    def _consume_sync_metrics(self) -> dict:
        metrics = super()._consume_sync_metrics()
        if self.junior_updater is not None:
            metrics.update(self.junior_updater.pop_metrics())
        return metrics

    def _save_checkpoint(self):
        """verl's save with the old checkpoints removed only after the tracker names the new one.

        verl saves with its retention off; then the tracker is rewritten atomically and this
        process's surplus checkpoints (verl's retention is per process too) are removed whole
        (why: `tandem_verl.checkpoint_tracker`).
        """
        trainer = self.config.trainer
        root = Path(os.path.abspath(trainer.default_local_dir))
        if self.junior_updater is not None:  # before verl's files: a checkpoint with data.pt holds its junior
            self.junior_updater.save(root / f"global_step_{self.global_steps}")
        with retention_off(trainer) as retention:
            super()._save_checkpoint()
        if not tracker_names(root, self.global_steps):
            return  # async save: verl writes the tracker when the save lands; keep everything
        write_tracker(root, self.global_steps)
        keep = keep_count(retention)
        mine = getattr(self, "_tandem_saved_steps", [])
        self._tandem_saved_steps = mine = [s for s in mine if s != self.global_steps] + [self.global_steps]
        if isinstance(keep, int) and keep > 0 and len(mine) > keep:
            for step in mine[:-keep]:
                remove_checkpoint(root, step)
            self._tandem_saved_steps = mine[-keep:]

    def _load_checkpoint(self):
        """verl's resume, after a tracker torn by a kill has been pointed back at a whole checkpoint."""
        trainer = self.config.trainer
        if trainer.resume_mode == "auto":
            repair_tracker(Path(os.path.abspath(trainer.default_local_dir)))
        result = super()._load_checkpoint()
        if trainer.resume_mode == "resume_path":
            self._resumed_from = Path(os.path.abspath(trainer.resume_from_path))
        else:
            self._resumed_from = Path(os.path.abspath(trainer.default_local_dir)) / f"global_step_{self.global_steps}"
        return result


class _TandemTaskRunner(TaskRunnerV1.__ray_actor_class__):
    """verl's v1 task runner, run where this module (and its registrations) is imported."""

    def run(self, config):
        RolloutReplicaRegistry.register("vllm", _load_tandem_vllm_replica)
        return super().run(config)


TandemTaskRunner = ray.remote(_TandemTaskRunner)


class _PartnerTaskRunner(TaskRunnerV1.__ray_actor_class__):
    """verl's v1 task runner for a GRPO run with the partner score: run where `PartnerPPOTrainer` is registered.
    With kind=transfer the base rides in a tandem engine as the receiver, so the tandem replica serves it."""

    def run(self, config):
        if run_settings(config).partner.transfers:
            RolloutReplicaRegistry.register("vllm", _load_tandem_vllm_replica)
        return super().run(config)


PartnerTaskRunner = ray.remote(_PartnerTaskRunner)
