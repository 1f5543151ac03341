"""The tandem agent loop for verl 0.9.1: keyed requests in, authorship masks out.

`TandemAgentLoop` is verl's single-turn agent loop that (1) gives each rollout request
its replayable request key, `request_key(uid, session_id)`, in
`SamplingParams.extra_args`, so the engine's logits processor draws that request's coins,
and (2) returns the response's `authorship_mask`, replayed from its tokens with the same
key, as a per-token field that travels with the sample through TransferQueue to the
actor update. Validation requests are solo (the senior writes every token). With
`partner_reward.writer_sees_solution=true` a training request's prompt holds the row's
solution (`tandem_verl.solution_writer`). With `partner_reward.kind=transfer` the junior
continues each training response's prefix in the same engine (`tandem_verl.transfer_reward`).

verl does not tell an agent loop whether it is validating, so `TandemAgentLoopWorker`
adds that flag from the trajectory info, and `TandemAgentLoopManager` starts those
workers (`actor_rollout_ref.rollout.agent.agent_loop_manager_class`).

With `$TANDEM_ROLLOUT_TRACE` set to a file path, every response also appends one JSON
line there (validate, request key, response and senior token counts): a cheap way to
see, from outside verl, that training rollouts were co-written and validation was solo.
"""

from __future__ import annotations

import asyncio
import json
import os
from typing import Any

import ray
import torch
import transfer_queue as tq
from verl.experimental.agent_loop.agent_loop import AgentLoopOutput, AgentLoopWorker, register
from verl.experimental.agent_loop.single_turn_agent_loop import SingleTurnAgentLoop
from verl.trainer.ppo.v1.agent_loop_tq import AgentLoopManagerTQ, AgentLoopWorkerTQ

from tandem.process.boundaries import config_boundary_lookup
from tandem.process.coins import request_key
from tandem.process.config import TandemConfig
from tandem.errors import TandemError
from tandem.process.authorship import response_authorship_mask
from tandem_verl.names import AGENT_LOOP, VALIDATE_KEY
from tandem_verl.hydra_settings import run_settings
from tandem_verl.solution_writer import PlainPromptOutput, SolutionWriterMixin
from tandem_verl.transfer_reward import TransferReceiverMixin
from vllm_source.requests import tandem_extra_args

TRACE_ENV = "TANDEM_ROLLOUT_TRACE"


_LOOKUPS: dict[tuple[str, str], torch.Tensor | None] = {}  # (tandem process, tokenizer name) -> lookup


def _lookup(cfg: TandemConfig, tokenizer) -> torch.Tensor | None:
    """The boundary lookup of a tandem process and tokenizer, built once per process."""
    key = (repr(cfg), str(tokenizer.name_or_path))
    if key not in _LOOKUPS:
        _LOOKUPS[key] = config_boundary_lookup(cfg, tokenizer, None)
    return _LOOKUPS[key]


class TandemAgentLoopOutput(PlainPromptOutput):
    authorship_mask: list[int]
    """1 where the senior wrote the response token, 0 where the junior did."""

    def as_dict(self) -> dict[str, Any]:
        out = super().as_dict()
        out["authorship_mask"] = torch.tensor(out.pop("authorship_mask"), dtype=torch.int64)
        return out


@register(AGENT_LOOP)
class TandemAgentLoop(TransferReceiverMixin, SolutionWriterMixin, SingleTurnAgentLoop):
    """Single-turn generation by the senior/junior team; see the module docstring."""

    async def run(self, sampling_params: dict[str, Any], **kwargs) -> AgentLoopOutput:
        if VALIDATE_KEY not in kwargs:
            raise TandemError(f"{AGENT_LOOP} needs TandemAgentLoopManager (it marks validation requests)")
        solo = bool(kwargs.pop(VALIDATE_KEY))
        self.prepare_writer(solo, kwargs)
        key = request_key(str(kwargs["uid"]), int(kwargs["session_id"]))
        params = dict(sampling_params)
        params["extra_args"] = {**(params.get("extra_args") or {}), **tandem_extra_args(key, solo=solo)}
        out = await super().run(params, **kwargs)
        cfg = run_settings(self.config).tandem.process
        lookup = _lookup(cfg, self.tokenizer)
        # Vectorised (about 0.5 ms for 3,000 tokens), and still kept off the event loop that
        # serves every other request of this worker.
        mask = await asyncio.to_thread(response_authorship_mask, cfg, lookup, list(out.response_ids), key, solo)
        _trace(validate=solo, request_key=key, response_tokens=len(mask), senior_tokens=sum(mask))
        out = await self.with_transfer(out, sampling_params, kwargs, solo)  # the junior continues its prefix
        return self.with_plain_prompt(out, TandemAgentLoopOutput, authorship_mask=mask)


def _trace(**row) -> None:
    path = os.environ.get(TRACE_ENV)
    if path:
        with open(path, "a", encoding="utf-8") as f:  # one short append per line: safe across processes
            f.write(json.dumps(row) + "\n")


class TandemAgentLoopWorker(AgentLoopWorkerTQ.__ray_actor_class__):
    """verl's TransferQueue agent-loop worker that tells the agent loop when it validates."""

    def __init__(self, *args, **kwargs):
        # AgentLoopWorkerTQ.__init__ calls the zero-argument super(), which fails in a Ray
        # actor built from a subclass of `__ray_actor_class__` (Ray 2.60: "super(type, obj):
        # obj must be an instance or subtype of type"). So do its work here, naming the
        # base explicitly; tests/test_scale_verl_classes.py pins it to verl's version.
        AgentLoopWorker.__init__(self, *args, **kwargs)
        tq.init()
        self.background_tasks = set()

    async def _run_prompt(self, prompt: dict, sampling_params: dict, trajectory: dict, trace: bool = False) -> None:
        prompt = {**prompt, VALIDATE_KEY: bool(trajectory["validate"])}
        return await super()._run_prompt(prompt, sampling_params, trajectory, trace)


class TandemAgentLoopManager(AgentLoopManagerTQ):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.agent_loop_workers_class = ray.remote(TandemAgentLoopWorker)
