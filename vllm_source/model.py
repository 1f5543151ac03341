"""`TandemForCausalLM`: one vLLM model that holds the senior and the junior.

vLLM sees a single decoder whose attention layers are the senior's (`senior.*`) and the
junior's (`junior.*`). Both share the scheduler, the block tables and the prompt/output
tokens of every request, and each keeps its own paged KV cache (vLLM allocates one per
attention layer). Every step both run on all tokens, so both caches stay complete
whoever wrote a token; `compute_logits` returns the senior's logits and leaves the
junior's in `handoff.SLOT` for `TandemLogitsProcessor`, which picks each row's author.

Weights: the senior's checkpoint is the engine's `model`; the junior's is declared as a
`secondary_weights` source (prefix `junior.`), which vLLM's default loader streams after
the senior's. Weight syncs from a trainer (senior names only) update the senior alone;
the junior changes only on the schedule of `tandem.junior_update` (frozen by default;
`junior_update.py`). A junior with another vocabulary is refused.
"""

from __future__ import annotations

from vllm_source.runtime import require_vllm

require_vllm()

import itertools  # noqa: E402

import torch  # noqa: E402
from vllm.config import VllmConfig  # noqa: E402

from tandem.errors import TandemError  # noqa: E402
from tandem.process.junior_update import same_parameters  # noqa: E402
from vllm_source.handoff import ALL_SENIOR, SLOT  # noqa: E402
from vllm_source.engine_junior import JuniorUpdater  # noqa: E402
from vllm_source.junior_guard import JuniorGuard  # noqa: E402
from vllm_source.pair_model import TandemPair  # noqa: E402
from vllm_source.weights import split_stream  # noqa: E402


class TandemForCausalLM(TandemPair):
    """Senior + junior in one vLLM model; see the module docstring."""

    def __init__(self, *, vllm_config: VllmConfig, prefix: str = "") -> None:
        super().__init__(vllm_config)
        if vllm_config.parallel_config.pipeline_parallel_size != 1:
            raise TandemError("the tandem vLLM backend does not support pipeline parallelism")
        self.senior = self.build_senior(vllm_config, prefix)
        self.junior = self.build_junior(vllm_config, prefix)
        self.senior_hidden, self.junior_hidden = self._hf_config.hidden_size, self._junior_hf.hidden_size
        # Skipping the junior's trunk on an all-solo step leaves its KV cache unwritten for
        # those tokens; with prefix caching a later tandem request could reuse those blocks.
        self._may_skip_junior_trunk = not vllm_config.cache_config.enable_prefix_caching
        self.junior_guard = JuniorGuard(self._junior_params, self._keep_junior_host_copy)
        # self-paired on the built modules, not on paths: verl may serve a local copy
        self.junior_updater = JuniorUpdater(self.cfg.junior_update_rule, self.junior, self.senior, self.junior_guard,
                                            self_paired=same_parameters(self.junior, self.senior))

    def forward(self, input_ids, positions, intermediate_tensors=None, inputs_embeds=None, **kwargs):
        """[tokens, senior hidden + junior hidden]: one tensor, so vLLM's row selection (logits_indices)
        applies to both halves.

        The senior's half is copied into the output before the junior's trunk starts. Under
        piecewise CUDA graphs a compiled trunk returns its last graph piece's output as a weak
        reference into vLLM's one global graph pool, its memory already handed back (vLLM assumes no
        other graph runs before it is read: 0.28/0.33 `compilation/cuda_graph.py`, `weak_ref_tensors`);
        the junior's trunk replays graphs from that same pool and may write over it. Holding the
        senior's output across the junior's trunk (as `torch.cat` after both did) would sample from
        overwritten senior hidden states. The output buffer is an ordinary allocation here (or part of
        one full graph, whose allocations stay live to its end), so the copy is what the junior cannot
        touch; it costs no more than the `torch.cat` it replaces (each half copied once).
        """
        self.check_token_ids_only(intermediate_tensors, inputs_embeds)
        senior = self.senior(input_ids, positions, None, None, **kwargs)
        out = senior.new_empty(senior.shape[0], self.senior_hidden + self.junior_hidden)
        out[:, : self.senior_hidden].copy_(senior)
        del senior  # from here on, the senior trunk's output may be overwritten (see above)
        if self._may_skip_junior_trunk and SLOT.all_solo():
            # Every row is solo (e.g. a validation batch): the junior's cache is never read for them.
            out[:, self.senior_hidden :].zero_()
        else:
            out[:, self.senior_hidden :].copy_(self.junior(input_ids, positions, None, None, **kwargs))
        return out

    def compute_logits(self, hidden_states: torch.Tensor) -> torch.Tensor | None:
        self.check_junior_loaded()
        self.junior_guard.on_step()
        senior_h = hidden_states[..., : self.senior_hidden]
        junior_h = hidden_states[..., self.senior_hidden :]
        senior = self.senior.compute_logits(senior_h)
        if senior is None:  # ranks that do not sample
            return senior
        if SLOT.all_solo():
            SLOT.put(ALL_SENIOR)
            return senior
        junior = self.junior.compute_logits(junior_h)  # also in dummy runs: memory profiling must see it
        if SLOT.live_rows() == 0:
            SLOT.clear()  # a dummy run (profiling, warm-up): no processor takes these; keep nothing
        else:
            SLOT.put(junior)
        return senior

    def load_weights(self, weights) -> set[str]:
        """Senior weights (initial load or trainer sync) and, on the initial load, the junior's."""
        senior_part, junior_part = split_stream(weights)
        loaded = {f"senior.{n}" for n in self.senior.load_weights(senior_part)}
        first = next(junior_part, None)
        if first is None:  # a weight sync (one call per bucket): senior names only
            self.junior_guard.on_sync()
            return loaded
        loaded |= {f"junior.{n}" for n in self.junior.load_weights(itertools.chain([first], junior_part))}
        self._junior_loaded = True
        self.junior_guard.loaded()
        return loaded
