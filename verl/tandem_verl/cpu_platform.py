"""verl 0.9.1 on CPU: a `cpu` platform for verl's platform registry, and the shims it needs.

For CI, laptops and debugging: verl's real trainer, FSDP2 actor, vLLM rollout server
(vLLM's CPU build), weight sync and checkpoints, on tiny models. verl ships CUDA, NPU
and ROCm platforms only (its issue #3266 asks for CPU); this module adds one through
verl's own extension point (`verl.plugin.platform.PlatformRegistry`). Nothing loads it
unless asked: verl imports the modules named in `VERL_USE_EXTERNAL_MODULES` in each of
its processes (driver and Ray workers), and `verl/cpu_overrides.sh` names this one there:

    VERL_USE_EXTERNAL_MODULES=tandem_verl.cpu_platform   # load this module in every verl process
    VERL_PLATFORM=cpu            # verl's own platform override: selects it, and switches the shims on
    VERL_ENGINE_DEVICE=cuda      # verl's engine-registry override: FSDP registers for cuda/npu only
    ray_kwargs.ray_init.num_gpus=1 (Hydra override)   # Ray's GPU resource stands for "one worker slot"

`scripts/scale_smoke.sh` sets all three, with the other overrides a CPU run needs
(float32, sdpa attention, FSDP2, no sleep mode). The platform is never auto-detected.
`check_cpu_config` refuses a config a CPU run cannot honour; verl/main_tandem_ppo.py and
the launchers' preflight (verl/preflight.py) call it before Ray starts.

Shims (patches, listed in model_spec/SCALE.md), applied by `install_shims()`, which the
platform calls when verl builds it in a process that `VERL_PLATFORM=cpu` selects it for
(importing the module patches nothing):
- the device module stands in for `torch.cuda` (memory, stream and RNG calls become
  CPU equivalents or no-ops);
- `torch.distributed.init_process_group`: verl builds the backend string
  `f"cpu:gloo,{device}:{backend}"` (verl/utils/distributed.py), which with device `cpu`
  names the CPU twice and torch refuses; the doubled entry collapses to `gloo`;
- FSDP2's `CPUOffloadPolicy` never pins memory: verl 0.9.1 puts every forward-only
  engine (the reference policy of the KL ablation) under `CPUOffloadPolicy(pin_memory=True)`
  (`workers/engine/fsdp/transformer_impl.py`), and pinning needs an accelerator;
- vLLM's rollout servers get `TANDEM_VLLM_CPU_LIVE_WEIGHTS=1` (see
  `vllm_source/cpu_weights.py`): vLLM's CPU linear layers otherwise compute with a packed
  copy of their weights taken at load time, so weight syncs from the trainer would not
  reach the model.
"""

from __future__ import annotations

import contextlib
import os
from types import SimpleNamespace

import torch
from verl.plugin.platform import PlatformBase, PlatformRegistry

SWITCH = "VERL_PLATFORM"
MODULES_ENV = "VERL_USE_EXTERNAL_MODULES"  # verl imports these modules in each of its processes
NAME = "cpu"
LIVE_WEIGHTS_ENV = "TANDEM_VLLM_CPU_LIVE_WEIGHTS"


def enabled() -> bool:
    """Is verl's platform explicitly set to this CPU platform?"""
    return os.environ.get(SWITCH, "").strip().lower() == NAME


def _noop(*_args, **_kwargs):
    return None


def _zero(*_args, **_kwargs) -> int:
    return 0


def _mem_get_info(*_args) -> tuple[int, int]:
    import psutil

    vm = psutil.virtual_memory()
    return vm.available, vm.total


def _device_module() -> SimpleNamespace:
    """What verl calls on `get_torch_device()`, answered for the CPU."""
    cpu = torch.cpu
    return SimpleNamespace(
        is_available=lambda: True,
        device_count=lambda: 1,
        current_device=lambda: NAME,
        set_device=_noop,
        get_device_name=lambda *_: NAME,
        synchronize=_noop,
        current_stream=cpu.current_stream,
        stream=cpu.stream,
        Stream=cpu.Stream,
        Event=cpu.Event,
        empty_cache=_noop,
        ipc_collect=_noop,
        set_per_process_memory_fraction=_noop,
        mem_get_info=_mem_get_info,
        memory_allocated=_zero,
        memory_reserved=_zero,
        max_memory_allocated=_zero,
        max_memory_reserved=_zero,
        reset_peak_memory_stats=_noop,
        get_rng_state=lambda *_: torch.get_rng_state(),
        set_rng_state=lambda state, *_: torch.set_rng_state(state),
        manual_seed=torch.manual_seed,
        manual_seed_all=torch.manual_seed,
    )


@PlatformRegistry.register(platform=NAME)
class PlatformCPU(PlatformBase):
    """verl on the CPU: device `cpu`, collectives over gloo, weights to vLLM through shared memory."""

    def __init__(self) -> None:
        super().__init__()
        # verl builds the selected platform once per process, before its first device call
        # (the backend string of `init_process_group` included); with no VERL_PLATFORM it
        # builds every registered one to auto-detect, and then this one must patch nothing.
        if enabled():
            install_shims()

    @property
    def device_name(self) -> str:
        return NAME

    @property
    def vendor_name(self) -> str:
        return NAME

    @property
    def device_module(self):
        return _device_module()

    def is_available(self) -> bool:
        return True

    def is_platform_available(self, use_smi_check=False) -> bool:
        return False  # never auto-detected: VERL_PLATFORM=cpu selects it

    def current_device(self) -> str:
        return NAME  # verl does `.to(get_device_id())`; CPU torch refuses an integer device

    def device_count(self) -> int:
        return 1

    def set_device(self, device_index) -> None:
        return None

    def synchronize(self, device_index=None) -> None:
        return None

    def manual_seed(self, seed: int) -> None:
        torch.manual_seed(seed)

    def manual_seed_all(self, seed: int) -> None:
        torch.manual_seed(seed)

    def set_allocator_settings(self, settings: str) -> None:
        return None

    def empty_cache(self) -> None:
        return None

    def get_device_capability(self, device_index: int = 0):
        return None, None

    def communication_backend_name(self) -> str:
        return "gloo"

    def visible_devices_envvar(self) -> str:
        return "CUDA_VISIBLE_DEVICES"  # what Ray sets for the GPU resource that stands for a worker slot

    @contextlib.contextmanager
    def nvtx_range(self, msg: str):
        yield

    def profiler_start(self) -> None:
        return None

    def profiler_stop(self) -> None:
        return None

    def ray_resource_name(self) -> str:
        return "GPU"

    def ray_noset_envvars(self) -> list[str]:
        return ["RAY_EXPERIMENTAL_NOSET_CUDA_VISIBLE_DEVICES"]

    def is_ipc_supported(self) -> bool:
        return False

    def rollout_env_vars(self) -> dict[str, str]:
        return {LIVE_WEIGHTS_ENV: "1", "VLLM_TARGET_DEVICE": "cpu"}

    def cudart(self):
        return None


def gloo_backend(backend):
    """`cpu:gloo,cpu:gloo` (verl's string with device `cpu`) -> `gloo`; anything else unchanged."""
    if not isinstance(backend, str) or "," not in backend:
        return backend
    entries = {part.strip() for part in backend.split(",")}
    return "gloo" if entries == {f"{NAME}:gloo"} else backend


def _patch_init_process_group() -> None:
    import torch.distributed as dist

    original = dist.init_process_group
    if getattr(original, "_tandem_cpu", False):
        return

    def init_process_group(backend=None, *args, **kwargs):
        return original(gloo_backend(backend), *args, **kwargs)

    init_process_group._tandem_cpu = True
    dist.init_process_group = init_process_group


def _patch_cpu_offload_policy() -> None:
    from torch.distributed.fsdp import CPUOffloadPolicy

    original = CPUOffloadPolicy.__init__
    if getattr(original, "_tandem_cpu", False):
        return

    def __init__(self, pin_memory: bool = True):
        original(self, pin_memory=False)

    __init__._tandem_cpu = True
    CPUOffloadPolicy.__init__ = __init__


def install_shims() -> None:
    """The CPU run's torch patches, once per process (each is marked `_tandem_cpu`)."""
    _patch_init_process_group()
    _patch_cpu_offload_policy()


# --- what a CPU run needs from the config -------------------------------------------------------

def _get(config, dotted: str, default=None):
    node = config
    for part in dotted.split("."):
        if node is None or part not in node:
            return default
        node = node[part]
    return node


def check_cpu_config(config) -> None:
    """Refuse, before Ray starts, a config verl cannot run on the CPU platform (one line each)."""
    from tandem.errors import TandemError

    arr = "actor_rollout_ref"
    wanted = [
        (f"{arr}.actor.strategy", "fsdp2", "FSDP1 syncs module states from GPU 0"),
        (f"{arr}.actor.fsdp_config.strategy", "fsdp2", "FSDP1 syncs module states from GPU 0"),
        (f"{arr}.model.use_remove_padding", False, "remove-padding needs flash-attn"),
        (f"{arr}.rollout.name", "vllm", "the CPU path runs vLLM's CPU build"),
        (f"{arr}.rollout.free_cache_engine", False, "vLLM's CPU build has no sleep mode"),
        ("trainer.device", NAME, "the trainer must place tensors on the CPU"),
    ]
    for key, value, why in wanted:
        if _get(config, key) != value:
            raise TandemError(f"VERL_PLATFORM=cpu: set {key}={value} ({why}); verl/cpu_overrides.sh has every "
                              "override a CPU run needs")
    if _get(config, f"{arr}.rollout.enable_sleep_mode", True):
        raise TandemError(f"VERL_PLATFORM=cpu: set +{arr}.rollout.enable_sleep_mode=False (vLLM's CPU build has "
                          "no sleep mode); verl/cpu_overrides.sh has every override a CPU run needs")
    slots = int(_get(config, "trainer.n_gpus_per_node", 1)) * int(_get(config, "trainer.nnodes", 1))
    if int(_get(config, "ray_kwargs.ray_init.num_gpus", 0) or 0) < slots:
        raise TandemError(f"VERL_PLATFORM=cpu: Ray needs {slots} GPU slot(s): add +ray_kwargs.ray_init.num_gpus={slots} "
                          "(on CPU a Ray GPU stands for one worker slot)")
    if __name__ not in os.environ.get(MODULES_ENV, "").split(","):
        raise TandemError(f"VERL_PLATFORM=cpu: export {MODULES_ENV}={__name__} (verl's Ray workers load the CPU "
                          "platform from that list); verl/cpu_overrides.sh sets it")
    if os.environ.get("VERL_ENGINE_DEVICE") != "cuda":
        raise TandemError("VERL_PLATFORM=cpu: export VERL_ENGINE_DEVICE=cuda (verl registers its FSDP engine for "
                          "cuda/npu only; the engine then runs on the CPU platform)")
    if not _vllm_cpu_build():
        raise TandemError("VERL_PLATFORM=cpu needs vLLM's CPU build (the installed vLLM is not one); build the "
                          "scale venv: bash scripts/test_scale.sh --install-only")


def _vllm_cpu_build() -> bool:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return "cpu" in version("vllm")
    except PackageNotFoundError:
        return False
