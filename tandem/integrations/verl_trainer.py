"""The tandem trainer and task runner for verl 0.9.1 (v1 trainer, sync mode).

`apply_tandem` sets `trainer.v1.trainer_mode=tandem_sync`; verl then builds
`TandemPPOTrainer`, which is verl's sync trainer with two substitutions:
- the hybrid actor/rollout worker becomes `TandemActorRolloutRefWorker` (senior gate);
- verl's "vllm" rollout replica becomes `TandemvLLMReplica` (sleep level 1).
Registries are per process, so `TandemTaskRunner` (the Ray actor that builds the
trainer) imports this module on the remote side before verl looks the names up.
"""

from __future__ import annotations

import ray
from verl.trainer.main_ppo import TaskRunnerV1
from verl.trainer.ppo.utils import Role
from verl.trainer.ppo.v1.trainer_base import register_trainer
from verl.trainer.ppo.v1.trainer_sync import PPOTrainerSync
from verl.workers.rollout.replica import RolloutReplicaRegistry

from tandem.errors import TandemError
from tandem.integrations.verl_tandem import TRAINER_MODE


def _load_tandem_vllm_replica():
    from tandem.integrations.verl_rollout import TandemvLLMReplica

    return TandemvLLMReplica


@register_trainer(TRAINER_MODE)
class TandemPPOTrainer(PPOTrainerSync):
    """verl's sync PPO trainer with the senior-gated actor worker and the tandem replica."""

    def _init_resource_pool_mgr(self):
        super()._init_resource_pool_mgr()
        roles = [r for r in (Role.ActorRollout, Role.ActorRolloutRef) if r in self.role_worker_mapping]
        if not roles:
            raise TandemError("tandem training needs verl's hybrid actor-rollout worker (hybrid_engine=True)")
        from tandem.integrations.verl_workers import TandemActorRolloutRefWorker

        for role in roles:
            self.role_worker_mapping[role] = ray.remote(TandemActorRolloutRefWorker)


class _TandemTaskRunner(TaskRunnerV1.__ray_actor_class__):
    """verl's v1 task runner, run where this module (and its registrations) is imported."""

    def run(self, config):
        RolloutReplicaRegistry.register("vllm", _load_tandem_vllm_replica)
        return super().run(config)


TandemTaskRunner = ray.remote(_TandemTaskRunner)
