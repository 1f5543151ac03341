"""verl 0.9.1 actor worker with the senior gate, selected by `TandemPPOTrainer`.

`TandemActorRolloutRefWorker` is verl's hybrid actor/rollout/ref worker whose inner
training worker (`actor_worker_cls`) applies `apply_senior_gate` to every actor update
before verl's own mini-batching, loss and normalisation run, and reports the senior
token fraction (summed over data-parallel ranks) and the senior tokens' rollout-vs-trainer
probability gap (`senior_rollout_probs_diff_max`) with the actor metrics of each step.
Old/ref log-prob passes are untouched: they need every token's log-probability. With the
partner score on and a junior other than the senior's base, the reference worker is built
from the junior's checkpoint (`actor_rollout_ref.tandem_scorer`, `tandem_verl.partner_score`).
"""

from __future__ import annotations

import dataclasses

import torch
from verl.single_controller.base.decorator import Dispatch, make_nd_compute_dataproto_dispatch_fn, register
from verl.utils import tensordict_utils as tu
from verl.utils.device import get_device_id
from verl.workers.engine_workers import ActorRolloutRefWorker, TrainingWorker

from tandem.errors import TandemError
from tandem.io.metric_log import SENIOR_ROLLOUT_DRIFT, TANDEM_PREFIX, batch_metrics
from tandem_verl.gate import GateCounts, apply_senior_gate, senior_rollout_probs_diff_max
from tandem_verl.names import SCORER_KEY
from tandem_verl.tandem_block import worker_loss_config



class SeniorGatedTrainingWorker(TrainingWorker):
    """verl's TrainingWorker whose actor updates count senior-written tokens only."""

    junior_token_loss_weight: float | None = None  # set by TandemActorRolloutRefWorker.init_model
    loss_denominator: str | None = None  # likewise

    @register(dispatch_mode=make_nd_compute_dataproto_dispatch_fn(mesh_name="train"), blocking=False)
    def train_mini_batch(self, data):
        if self.junior_token_loss_weight is None or self.loss_denominator is None:
            raise TandemError(
                "SeniorGatedTrainingWorker has no junior_token_loss_weight / loss_denominator; "
                "refusing to train ungated"
            )
        drift = senior_rollout_probs_diff_max(data)
        gate = apply_senior_gate(data, self.junior_token_loss_weight, self.loss_denominator)
        counts = GateCounts.from_tensor(self._all_reduce(gate.as_tensor()))
        no_senior = self.junior_token_loss_weight == 0 and counts.senior_tokens == 0
        if no_senior and self.loss_denominator == "senior_tokens":
            # verl's token-mean would divide by a zero token count (NaN weights); stop instead.
            raise TandemError("no senior-written token in this step's batch: nothing to train (prob_senior 0?)")
        output = super().train_mini_batch(data)
        if output is not None:
            metrics = tu.get(output, "metrics")
            logged = counts.metrics(TANDEM_PREFIX)
            if drift is not None:
                worst = self._all_reduce(torch.tensor([drift]), op=torch.distributed.ReduceOp.MAX)
                logged.update(batch_metrics({SENIOR_ROLLOUT_DRIFT: worst.item()}, TANDEM_PREFIX))
            metrics.update({k: [v] for k, v in logged.items()})  # verl's workers log lists, averaged per step
            tu.assign_non_tensor(output, metrics=metrics)
        return output

    def _all_reduce(self, t: torch.Tensor, op=torch.distributed.ReduceOp.SUM) -> torch.Tensor:
        """`t` reduced over the data-parallel ranks (`t` itself in a single process)."""
        group = self.engine.get_data_parallel_group()
        if group is None or not torch.distributed.is_initialized():
            return t
        t = t.to(get_device_id())
        torch.distributed.all_reduce(t, op=op, group=group)
        return t.cpu()


class TandemActorRolloutRefWorker(ActorRolloutRefWorker):
    """verl's ActorRolloutRefWorker with the gated training worker as its actor."""

    actor_worker_cls = SeniorGatedTrainingWorker

    @register(dispatch_mode=Dispatch.ONE_TO_ALL)
    def init_model(self):
        loss = worker_loss_config(self.config) if self._is_actor else None  # fail before loading
        scorer = self.config.get(SCORER_KEY)
        if scorer and "ref" in self.role:
            self.ref_worker_cls = reference_worker_for(scorer, self.config.model)
        super().init_model()
        if self.actor is not None:
            self.actor.junior_token_loss_weight = loss.junior_token_loss_weight
            self.actor.loss_denominator = loss.loss_denominator


def reference_worker_for(path: str, model_block) -> type:
    """verl's `TrainingWorker` for the reference role, built from `path` (the junior) with the actor's model settings."""
    from omegaconf import OmegaConf
    from verl.utils.config import omega_conf_to_dataclass
    from verl.workers.config import MtpConfig

    block = OmegaConf.merge(model_block, {"path": path, "hf_config_path": None, "tokenizer_path": None})
    junior = omega_conf_to_dataclass(block)
    junior.mtp = MtpConfig(enable=False)  # as verl sets for its reference model

    class JuniorReferenceWorker(TrainingWorker):
        def __init__(self, config):
            super().__init__(config=dataclasses.replace(config, model_config=junior))  # verl's configs are frozen

    return JuniorReferenceWorker
