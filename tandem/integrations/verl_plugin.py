"""What this package adds to every verl process: loaded through the `verl.plugins` entry point.

verl imports `verl.plugins` entry points when `verl` is imported (verl/__init__.py), in
the driver and in every Ray worker. This module
- registers the `cpu` platform (`tandem.integrations.verl_cpu`; off unless VERL_PLATFORM=cpu);
- wraps `verl.utils.device.auto_set_device`, which both entry points (verl's
  `verl.trainer.main_ppo` and `verl/main_tandem_ppo.py`) call on the composed config
  before Ray starts, with two refusals (`check_entry`):
  * a config whose `tandem:` block is enabled but which runs through verl's stock entry
    point: verl would ignore the block and train plain GRPO, so it is an error;
  * with VERL_PLATFORM=cpu, a config the CPU platform cannot run (`check_cpu_config`).
"""

from __future__ import annotations

from verl.utils import device as verl_device

from tandem.integrations import verl_cpu
from tandem.integrations.verl_tandem import WORKER_KEY


def check_entry(config) -> None:
    """Refuse what the running entry point cannot honour (see the module docstring)."""
    from tandem.errors import TandemError

    block = config.get("tandem") if hasattr(config, "get") else None
    wired = config.get("actor_rollout_ref", {}).get(WORKER_KEY) if hasattr(config, "get") else None
    if block is not None and bool(block.get("enable", block.get("enabled", False))) and wired is None:
        raise TandemError(
            "this config enables tandem.* but runs through verl.trainer.main_ppo, which ignores the block and "
            "would train plain GRPO; launch verl/main_tandem_ppo.py (bash verl/run_tandem_native_grpo_deepscaler.sh)"
        )
    if verl_cpu.enabled():
        verl_cpu.check_cpu_config(config)


def _guarded(auto_set_device):
    def guarded_auto_set_device(config) -> None:
        auto_set_device(config)
        check_entry(config)

    guarded_auto_set_device._tandem_guard = True
    return guarded_auto_set_device


if not getattr(verl_device.auto_set_device, "_tandem_guard", False):
    verl_device.auto_set_device = _guarded(verl_device.auto_set_device)
