"""verl's vLLM replica with sleep level 1, so the junior's weights survive the sleep.

In colocated (hybrid) mode verl puts the vLLM engine to sleep during training, at level
2 for full-weight models: weights are discarded and restored by the next sync from the
actor. The actor only has the senior's weights, so the junior would come back as
garbage. Level 1 offloads weights to CPU and restores them. (`TandemForCausalLM` also
checks a fingerprint of the junior after each sync and fails if it changed.) Its vLLM
workers load `tandem.integrations.verl_vllm_worker.TandemWorkerExtension`, so that
verl's per-model patches reach both parts of `TandemForCausalLM`.

Imports vLLM through verl; only loaded by `verl_trainer`'s replica loader.
"""

from __future__ import annotations

import ray
from verl.workers.rollout.vllm_rollout.vllm_async_server import vLLMHttpServer, vLLMReplica

from tandem.integrations.verl_vllm_worker import EXTENSION


class TandemvLLMHttpServer(vLLMHttpServer):
    def _resolve_sleep_level(self) -> int:
        return 1

    def _get_worker_extension_cls(self) -> str:
        return EXTENSION  # verl's extension, with its model patches reaching senior and junior


class TandemvLLMReplica(vLLMReplica):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.server_class = ray.remote(TandemvLLMHttpServer)
