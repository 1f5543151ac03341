"""`TandemSplitForCausalLM`: the senior on tensor-parallel rank 0, the junior on rank 1.

The split placement (`TandemConfig.placement = "split"`) runs on a vLLM engine with two
workers (tensor-parallel world size 2). vLLM sends both workers the same scheduler output
every step, so both build the same attention metadata and keep the same persistent batch.
This model is rank-specialised:

- rank 0 builds the whole senior, rank 1 the whole junior, each unsharded: their layers
  are built (and run) while vLLM's tensor-parallel group reads as a group of one, so every
  linear layer, embedding and attention layer takes its tensor-parallel-size-1 shape and
  issues no collective;
- each rank's attention layers must get a backend that reads the head count from the
  layers, not from the model config (`split_attention.py`; checked before weights load);
- each rank allocates the paged KV cache of the layers it holds (vLLM merges the two
  workers' layer sets as it does for pipeline stages, `get_kv_cache_configs`);
- each rank computes its own model's logits for the rows to sample, and one all-gather
  over the real tensor-parallel group gives both ranks both: `compute_logits` returns the
  senior's and leaves the junior's in `handoff.SLOT`, so `TandemLogitsProcessor` and
  vLLM's sampler run unchanged, identically on both ranks (same logits, same seeds).

Weights: vLLM streams the senior's checkpoint to both ranks; rank 0 loads it and rank 1
passes over it. Only rank 1 declares the junior's checkpoint (`secondary_weights`). Weight
syncs (senior names only) reach rank 0's senior; rank 1 ignores them and checks the
junior's fingerprint (`junior_guard.py`).
"""

from __future__ import annotations

from vllm_source.runtime import require_vllm

vllm = require_vllm()

import contextlib  # noqa: E402
import itertools  # noqa: E402

import torch  # noqa: E402
from torch import nn  # noqa: E402
from vllm.config import VllmConfig  # noqa: E402
from vllm.distributed import parallel_state  # noqa: E402
from vllm.platforms import current_platform  # noqa: E402

from vllm_source.handoff import SLOT  # noqa: E402
from vllm_source.junior_guard import JuniorGuard  # noqa: E402
from vllm_source.pair_model import TandemPair  # noqa: E402
from vllm_source.placement import check_split_world  # noqa: E402
from vllm_source.split_attention import check_model_backends  # noqa: E402
from vllm_source.weights import split_stream  # noqa: E402

SENIOR_RANK = 0  # the junior's rank is 1


def own_group():
    """A tensor-parallel group of one per rank (built collectively: every rank calls this once)."""
    world = parallel_state.get_world_group()
    backend = torch.distributed.get_backend(world.device_group)
    ranks = [[r] for r in range(torch.distributed.get_world_size())]
    # The name must not start with "tp": vLLM's CPU backend gives such groups a shared-memory communicator.
    return parallel_state.init_model_parallel_group(ranks, world.local_rank, backend, group_name="tandem_own")


class TandemSplitForCausalLM(TandemPair):
    """Senior (rank 0) or junior (rank 1) of a split tandem engine; see the module docstring."""

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__(vllm_config)
        parallel = vllm_config.parallel_config
        check_split_world(parallel.tensor_parallel_size, parallel.pipeline_parallel_size)
        self._tp = parallel_state.get_tp_group()
        self.holds_senior = self._tp.rank_in_group == SENIOR_RANK
        self._own = own_group()
        with self.own_model_parallelism():
            if self.holds_senior:
                self.senior = self.build_senior(vllm_config, prefix)
            else:
                self.junior = self.build_junior(vllm_config, prefix)
        capability = current_platform.get_device_capability()
        check_model_backends(self.own_model, vllm.__version__, capability.major if capability else None,
                             vllm_config.model_config.get_head_size())
        self._junior_loaded = self.holds_senior  # rank 0 never holds the junior
        self.junior_guard = None if self.holds_senior else JuniorGuard(self._junior_params, self._keep_junior_host_copy)

    @property
    def own_model(self) -> nn.Module:
        """This rank's model: the senior on rank 0, the junior on rank 1."""
        return self.senior if self.holds_senior else self.junior

    @contextlib.contextmanager
    def own_model_parallelism(self):
        """vLLM's tensor-parallel group reads as this rank alone (layers unsharded, no collectives)."""
        saved = parallel_state._TP
        parallel_state._TP = self._own
        try:
            yield
        finally:
            parallel_state._TP = saved

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None, **kwargs):
        self.check_token_ids_only(intermediate_tensors, inputs_embeds)
        with self.own_model_parallelism():
            return self.own_model(input_ids, positions, None, None, **kwargs)

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor | None:
        self.check_junior_loaded()
        if self.junior_guard is not None:
            self.junior_guard.on_step()
        with self.own_model_parallelism():
            own = self.own_model.compute_logits(hidden_states)
        rows = own.shape[0]
        # The step's one collective: [senior rows; junior rows] on both ranks.
        both = self._tp.all_gather(own.contiguous(), dim=0)
        if SLOT.live_rows() == 0:
            SLOT.clear()  # a dummy run (profiling, warm-up): no processor takes these; keep nothing
        else:
            SLOT.put(both[rows:])
        return both[:rows]

    def load_weights(self, weights) -> set[str]:
        """Rank 0: the senior's weights (initial load or sync). Rank 1: the junior's, once."""
        senior_part, junior_part = split_stream(weights)
        with self.own_model_parallelism():
            if self.holds_senior:
                return {f"senior.{n}" for n in self.senior.load_weights(senior_part)}
            for _ in senior_part:  # the senior lives on rank 0
                pass
            first = next(junior_part, None)
            if first is None:  # a weight sync (one call per bucket): senior names only
                self.junior_guard.on_sync()
                return set()
            loaded = {f"junior.{n}" for n in self.junior.load_weights(itertools.chain([first], junior_part))}
        self._junior_loaded = True
        self.junior_guard.loaded()
        return loaded
