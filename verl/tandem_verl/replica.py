"""verl's vLLM replica, sleeping at level 2 like plain verl; the junior comes back from a host copy.

In colocated (hybrid) mode verl puts the vLLM engine to sleep during training, at level
2 for full-weight models: weights are discarded and restored by the next sync from the
actor. The actor only has the senior's weights, so `TandemForCausalLM` keeps a host copy
of the junior (when vLLM's sleep mode is on) and, at the first bucket of each sync,
checks every junior tensor and restores those that changed; it fails if that does not
bring the junior back exactly. Level 1 would offload and restore both models' weights
every step instead (model_spec/SCALE.md, "Sleep mode and the junior"). Its vLLM
workers load `tandem_verl.vllm_worker.TandemWorkerExtension`, so that
verl's per-model patches reach both parts of `TandemForCausalLM`.

With `tandem.junior_update` other than `frozen`, the trainer reaches the junior of every
worker through `TandemvLLMHttpServer.tandem_junior` (`tandem_verl.junior_driver`).

Imports vLLM through verl; only loaded by `trainer`'s replica loader.
"""

from __future__ import annotations

import ray
from verl.workers.rollout.vllm_rollout.vllm_async_server import vLLMHttpServer, vLLMReplica

from tandem_verl.vllm_worker import EXTENSION


SLEEP_LEVEL = 2  # the junior survives through TandemForCausalLM's host copy, not through the sleep


class TandemvLLMHttpServer(vLLMHttpServer):
    def _resolve_sleep_level(self) -> int:
        return SLEEP_LEVEL

    def _get_worker_extension_cls(self) -> str:
        return EXTENSION  # verl's extension, with its model patches reaching senior and junior

    async def tandem_junior(self, method: str, *args) -> list:
        """Run a `TandemWorkerExtension.tandem_junior_*` method on every worker of this engine; their results.

        verl's own `collective_rpc` drops the results. vLLM's reaches the tensor-parallel workers
        of one data-parallel shard: `tandem_verl.refusals` refuses a junior that follows the senior with rollout DP > 1.
        """
        return await self.engine.collective_rpc(method, args=args)


class TandemvLLMReplica(vLLMReplica):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.server_class = ray.remote(TandemvLLMHttpServer)
