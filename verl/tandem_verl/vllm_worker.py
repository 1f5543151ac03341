"""verl's vLLM worker extension for tandem engines: verl's model patches applied part by part.

verl calls `patch_vllm_moe_model_weight_loader(model)` on the engine's model when the
rollout server starts and before every weight sync (verl/workers/rollout/vllm_rollout/
utils.py). That function needs `model.model` or `model.language_model` and raises
"does not have a valid 'model' or 'language_model' attribute" for `TandemForCausalLM`,
which holds a `senior` and a `junior`. `install()` makes verl's call apply the patch to
each of the two parts (any other model is passed through as is); `TandemWorkerExtension`,
the `worker_extension_cls` that `TandemvLLMHttpServer` names, calls it when vLLM builds
each worker, before verl's code first calls the patch. Importing the module patches
nothing. Weight loading itself still goes through the wrapper, which routes senior names only.

With `tandem.junior_update` other than `frozen`, the trainer reaches each worker's
`JuniorUpdater` (`vllm_source/engine_junior.py`) through the `tandem_junior_*` methods
below, by vLLM's `collective_rpc` (`tandem_verl.junior_driver`).
"""

from __future__ import annotations

from verl.workers.rollout.vllm_rollout import utils as vllm_worker_utils
from verl.workers.rollout.vllm_rollout.utils import vLLMColocateWorkerExtension

from tandem.errors import TandemError

EXTENSION = "tandem_verl.vllm_worker.TandemWorkerExtension"


def unwrap(model):
    """The model inside vLLM's runner wrappers (CUDAGraphWrapper and the like expose `unwrap()`).

    With CUDA graphs on (verl asks for FULL_AND_PIECEWISE unless enforce_eager) the runner's
    `model` is a CUDAGraphWrapper around the tandem model; the class is looked up on the
    type, since the wrapper forwards unknown attributes to what it wraps.
    """
    for _ in range(8):  # wrappers nest at most a few deep
        inner = model.unwrap() if callable(getattr(type(model), "unwrap", None)) else None
        if inner is None or inner is model:
            return model
        model = inner
    return model


def tandem_parts(model) -> tuple:
    """(senior, junior) of a tandem wrapper model (also inside vLLM's wrappers), else (model,)."""
    inner = unwrap(model)
    senior, junior = getattr(inner, "senior", None), getattr(inner, "junior", None)
    if type(inner).__name__ == "TandemForCausalLM" and senior is not None and junior is not None:
        return senior, junior
    if type(model).__name__ == "TandemSplitForCausalLM":  # placement=split: one model per rank
        return (senior if senior is not None else junior,)
    return (model,)


def patch_each_part(patch):
    """Wrap a verl per-model patch so that it reaches inside tandem wrapper models."""

    def patched(model, *args, **kwargs):
        for part in tandem_parts(model):
            patch(part, *args, **kwargs)

    patched._tandem_parts = True
    return patched


def install() -> None:
    """Route verl's per-model patch through `patch_each_part`, once per process (model_spec/SCALE.md)."""
    if not getattr(vllm_worker_utils.patch_vllm_moe_model_weight_loader, "_tandem_parts", False):
        vllm_worker_utils.patch_vllm_moe_model_weight_loader = patch_each_part(
            vllm_worker_utils.patch_vllm_moe_model_weight_loader
        )


class TandemWorkerExtension(vLLMColocateWorkerExtension):
    """verl's colocated worker extension, with verl's model patch routed to senior and junior (`install`)."""

    def __new__(cls, **kwargs):
        # vLLM appends the extension to its worker's bases, so building a worker reaches here
        # first, before any of verl's methods can call the patch.
        install()
        return super().__new__(cls, **kwargs)

    def tandem_junior_update(self, step: int) -> dict:
        """Apply tandem.junior_update after optimizer step `step` (a sync's last) to this worker's junior."""
        return self._junior_updater().update(step)

    def tandem_junior_save(self, directory: str) -> str:
        """Write this worker's junior state under `directory` (rank_<tp rank>.pt); returns the file."""
        from vllm_source.engine_junior import save_state

        rank, size = _tp_rank_and_size()
        return save_state(directory, rank, size, self._junior_updater().state())

    def tandem_junior_restore(self, directory: str) -> dict:
        """Load this worker's junior state from a checkpoint's `directory` into the engine."""
        from vllm_source.engine_junior import load_state

        rank, size = _tp_rank_and_size()
        return self._junior_updater().restore(load_state(directory, rank, size))

    def _junior_updater(self):
        updater = getattr(unwrap(self.model_runner.model), "junior_updater", None)
        if updater is None:
            raise TandemError("this rollout engine holds no junior that can follow the senior (placement=split or "
                              "not a tandem engine); set tandem.junior_update=frozen")
        return updater


def _tp_rank_and_size() -> tuple[int, int]:
    from vllm.distributed import get_tensor_model_parallel_rank, get_tensor_model_parallel_world_size

    return get_tensor_model_parallel_rank(), get_tensor_model_parallel_world_size()
