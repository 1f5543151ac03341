"""RLTR's transfer reward on verl (`partner_reward.kind=transfer`): the receiver continues in the rollout engine.

The receiver is the engine's junior. For each training response, the agent loop that wrote
it (`TransferReceiverMixin.with_transfer`) cuts it (`tandem.rewards.transfer_reward.plan_transfer`:
RLTR's draw or the configured cuts, under `partner_reward.transfer`'s rules: RLTR's uniform cut by
default, or `cut_rule=before_answer` and the skips; each continuation's `max_tokens` is
`TransferConfig.receiver_cap` of verl's `response_length`: all of it under `receiver_budget=full`,
which verl's server clamps only where prompt + prefix + it would pass `max_model_len`, by default
the model's positions), sends each continuation to the same
vLLM server as a *junior-solo* request from prompt + prefix (`vllm_source.requests`: the
junior writes every token, in the engine's own batch and the junior's KV cache; with
placement split the junior's rank computes it), grades each with the verifier
(`tandem_verl.reward.compute_score`) and stores the response's `result_record` in its
`extra_fields`. The continuations' tokens go nowhere else: they never enter the batch, so
never the actor's loss. Validation requests get no transfer.

Before verl's advantages, `TransferRewarder.apply` (from the trainers' `RewardStep`) reads
the records of the step's real samples back from TransferQueue, adds `weight * R_transfer` to
each response's reward at its last token (where verl put the verifier's) and logs the
step's `transfer/*` metrics (`TransferResult.metrics`). A real training sample without its
record stops the step (a lost transfer is an error, not a zero).

A GRPO run (`tandem.enable=false`) hosts its base as the junior of a tandem engine
(`tandem_verl.wiring`): its writer's requests are solo (the senior writes every token, and the
junior's trunk is skipped while a batch holds no receiver) in `TransferWriterAgentLoop`.
`receiver_calls` counts continuation requests here (the engine batches them continuously).
"""

from __future__ import annotations

import asyncio
from typing import Any
from uuid import uuid4

from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, register
from verl.experimental.agent_loop.single_turn_agent_loop import SingleTurnAgentLoop

from tandem.process.coins import request_key
from tandem.errors import TandemError
from tandem.io.metric_log import VERIFIER_SCORE, batch_metrics
from tandem.rewards.partner_config import PartnerRewardConfig
from tandem.rewards.transfer_reward import merged_result, plan_transfer, result_record, score_transfer
from tandem_verl.names import TRANSFER_FIELD, TRANSFER_WRITER_AGENT_LOOP, VALIDATE_KEY
from tandem_verl.partner_score import add_to_rewards, as_list
from tandem_verl.reward import compute_score
from tandem_verl.hydra_settings import run_settings
from vllm_source.requests import tandem_extra_args


def gold_answer(kwargs: dict) -> str:
    """The row's gold answer, as verl's reward function reads it (`reward_model.ground_truth`)."""
    gold = (kwargs.get("reward_model") or {}).get("ground_truth")
    if gold is None:
        extra = kwargs.get("extra_info") or {}
        raise TandemError(f"partner_reward.kind=transfer: training row {extra.get('id', '?')} has no "
                          "reward_model.ground_truth to grade the receiver by; prepare it with scripts/prepare_deepscaler.py")
    return str(gold)


class TransferReceiverMixin:
    """Adds a training response's transfer record to its output; see the module docstring."""

    async def with_transfer(self, out: AgentLoopOutput, sampling_params: dict[str, Any], kwargs: dict,
                            validate: bool) -> AgentLoopOutput:
        partner = run_settings(self.config).partner
        if validate or not partner.transfers:
            return out
        gold, source = gold_answer(kwargs), str(kwargs.get("data_source", ""))
        prompt, response = list(out.prompt_ids), list(out.response_ids)
        key = request_key(str(kwargs["uid"]), int(kwargs["session_id"]))
        plan = plan_transfer(partner.transfer, self.tokenizer, [prompt], [response], [gold], [key],
                             int(self.rollout_config.response_length))
        written = await asyncio.gather(*[self._receive(context, cap, sampling_params)
                                         for context, cap in zip(plan.contexts, plan.caps)])

        def grade(text: str, gold_text: str) -> float:
            return float(compute_score(source, text, gold_text)["score"])

        result = await asyncio.to_thread(score_transfer, partner.transfer, plan, self.tokenizer, [response], [gold],
                                         written, grade, sum(len(w.token_ids) for w in written), len(written))
        out.extra_fields[TRANSFER_FIELD] = result_record(result)
        return out

    async def _receive(self, context: list[int], cap: int, sampling_params: dict[str, Any]):
        """One junior-solo continuation of `context`, at most `cap` tokens, at the rollout's sampling settings."""
        params = {**sampling_params, "max_tokens": int(cap), "logprobs": False}
        params["extra_args"] = {**(params.get("extra_args") or {}), **tandem_extra_args(None, junior_solo=True)}
        return await self.server_manager.generate(request_id=uuid4().hex, prompt_ids=list(context),
                                                  sampling_params=params)


@register(TRANSFER_WRITER_AGENT_LOOP)
class TransferWriterAgentLoop(TransferReceiverMixin, SingleTurnAgentLoop):
    """verl's single-turn loop for a GRPO writer in the tandem engine: solo requests, then the transfer."""

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        if VALIDATE_KEY not in kwargs:
            raise TandemError(f"{TRANSFER_WRITER_AGENT_LOOP} needs TandemAgentLoopManager (it marks validation requests)")
        validate = bool(kwargs.pop(VALIDATE_KEY))
        params = dict(sampling_params)
        params["extra_args"] = {**(params.get("extra_args") or {}), **tandem_extra_args(None, solo=True)}
        out = await super().run(params, **kwargs)
        return await self.with_transfer(out, sampling_params, kwargs, validate)


class TransferRewarder:
    """Adds `weight * R_transfer` to each real sample's reward and logs the step's transfer; see the module docstring."""

    def __init__(self, cfg: PartnerRewardConfig) -> None:
        self.cfg = cfg

    def apply(self, trainer, batch, metrics: dict) -> None:
        import transfer_queue as tq

        data = tq.kv_batch_get(keys=batch.keys, partition_id=batch.partition_id,
                               select_fields=["rm_scores", "extra_fields"])
        real = [i for i, tag in enumerate(batch.tags) if not tag.get("is_padding")]
        extra = [getattr(f, "data", f) for f in list(data["extra_fields"])]
        missing = [i for i in real if not isinstance(extra[i], dict) or TRANSFER_FIELD not in extra[i]]
        if missing:
            raise TandemError(f"partner_reward.kind=transfer: {len(missing)} training samples (first: {missing[0]}) "
                              f"came back without their {TRANSFER_FIELD!r} record; their agent loop did not run the "
                              "receiver (start the run through verl/main_tandem_ppo.py)")
        result = merged_result([extra[i][TRANSFER_FIELD] for i in real])
        bonus = {i: float(self.cfg.weight * result.scores[j]) for j, i in enumerate(real)}
        verifier = add_to_rewards(batch, as_list(data["rm_scores"]), bonus)
        metrics.update(batch_metrics({**result.metrics(), VERIFIER_SCORE: verifier}))
