"""vLLM's CPU build with weights that can be updated in place (for weight syncs from a trainer).

At load, vLLM's CPU backend hands each unquantized linear layer to
`dispatch_cpu_unquantized_gemm` (vllm/model_executor/layers/utils.py), which packs the
weight for oneDNN or sgl kernels, computes from that packed copy, and (for linear
layers) replaces `layer.weight` with an empty parameter. A trainer that syncs new
weights into the running engine (verl does, every step) then fails on the missing
weight loader, and the output layer, which keeps its weight, would silently go on
computing with the stale packed copy.

With `TANDEM_VLLM_CPU_LIVE_WEIGHTS=1` in a vLLM process whose platform is CPU (verl's
CPU platform sets it for its rollout servers, `tandem_verl.cpu_platform`), this
module's `apply()` makes every 2-D linear layer compute `F.linear(x, layer.weight)`
with its live weight, which the weight loader updates in place. Slower than the packed
kernels, and only for training on CPU; offline inference leaves it off.
"""

from __future__ import annotations

import os

ENV = "TANDEM_VLLM_CPU_LIVE_WEIGHTS"


def wanted() -> bool:
    return os.environ.get(ENV, "") == "1"


def _live_linear(x, weight, bias):
    import torch

    return torch.nn.functional.linear(x, weight, bias)


def apply() -> bool:
    """Install the live-weight GEMM dispatch in this process; True if installed."""
    from vllm.model_executor.layers import utils
    from vllm.platforms import current_platform

    if not current_platform.is_cpu():
        return False
    original = utils.dispatch_cpu_unquantized_gemm
    if getattr(original, "_tandem_live", False):
        return True

    def dispatch_cpu_unquantized_gemm(layer, remove_weight: bool) -> None:
        if layer.weight.is_meta or layer.weight.ndim != 2:
            return original(layer, remove_weight)
        layer.cpu_linear = _live_linear

    dispatch_cpu_unquantized_gemm._tandem_live = True
    utils.dispatch_cpu_unquantized_gemm = dispatch_cpu_unquantized_gemm
    return True
