"""verl's CPU platform (`tandem_verl.cpu_platform`) and what keeps verl's stock entry point off a tandem config.

Pure parts, on CPU with verl 0.9.1 installed (no Ray started): the platform loads only
where `VERL_USE_EXTERNAL_MODULES` names it (installing this package changes nothing in
verl), is never auto-detected, answers verl's device calls for the CPU, collapses
verl's doubled gloo backend string, and refuses configs a CPU run cannot honour, also
from the launchers' preflight; verl's stock `main_ppo` cannot compose
`tandem_trainer.yaml`. The scale lane runs the platform for real
(tests/test_scale_verl_smoke.py).
"""

from __future__ import annotations

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("verl", reason="verl 0.9.1 is not installed")

from hydra import compose, initialize_config_dir, initialize_config_module  # noqa: E402
from verl.plugin.platform import PlatformRegistry  # noqa: E402

from tandem.errors import TandemError  # noqa: E402
from tandem_verl import cpu_platform as verl_cpu  # noqa: E402
from tandem_verl.wiring import ENTRY_GROUP, ENTRY_NODE, apply_tandem  # noqa: E402

REPO = Path(__file__).resolve().parents[1]


def cpu_overrides() -> list[str]:
    """The CPU_ARGS array of verl/cpu_overrides.sh, as bash expands it."""
    script = f'source "{REPO / "verl" / "cpu_overrides.sh"}"; printf "%s\\n" "${{CPU_ARGS[@]}}"'
    return subprocess.run(["bash", "-c", script], capture_output=True, text=True, check=True).stdout.splitlines()


def vanilla_config(*overrides: str):
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        return compose(config_name="ppo_trainer", overrides=["actor_rollout_ref.rollout.name=vllm", *overrides])


def tandem_config(*overrides: str):
    with initialize_config_dir(config_dir=str(REPO / "verl" / "config"), version_base=None):
        return compose(config_name="tandem_trainer", overrides=[
            "actor_rollout_ref.rollout.name=vllm", "actor_rollout_ref.model.path=org/m",
            "actor_rollout_ref.rollout.load_format=auto", *overrides])


@pytest.fixture()
def cpu_switch(monkeypatch):
    monkeypatch.setenv("VERL_PLATFORM", "cpu")
    monkeypatch.setenv(verl_cpu.MODULES_ENV, verl_cpu.__name__)
    monkeypatch.setenv("VERL_ENGINE_DEVICE", "cuda")
    monkeypatch.setattr(verl_cpu, "_vllm_cpu_build", lambda: True)


def test_cpu_platform_is_registered_but_never_auto_detected():
    platform = PlatformRegistry.get("cpu")()
    assert isinstance(platform, verl_cpu.PlatformCPU)
    assert not platform.is_platform_available(use_smi_check=True)


def test_cpu_platform_answers_verls_device_calls_for_the_cpu():
    import torch

    platform = verl_cpu.PlatformCPU()
    assert (platform.device_name, platform.current_device(), platform.communication_backend_name()) == (
        "cpu", "cpu", "gloo")
    module = platform.device_module
    module.empty_cache()
    module.synchronize()
    free, total = module.mem_get_info()
    assert 0 < free <= total and module.max_memory_allocated() == 0
    state = module.get_rng_state()
    first = torch.rand(3)
    module.set_rng_state(state)
    assert torch.equal(torch.rand(3), first)
    assert not platform.is_ipc_supported()
    assert platform.rollout_env_vars()[verl_cpu.LIVE_WEIGHTS_ENV] == "1"


@pytest.mark.parametrize("given, want", [("cpu:gloo,cpu:gloo", "gloo"), ("cpu:gloo,cuda:nccl", "cpu:gloo,cuda:nccl"),
                                         ("gloo", "gloo"), (None, None)])
def test_gloo_backend_collapses_only_verls_doubled_cpu_entry(given, want):
    assert verl_cpu.gloo_backend(given) == want


def test_cpu_overrides_make_a_config_the_cpu_platform_accepts(cpu_switch):
    verl_cpu.check_cpu_config(vanilla_config(*cpu_overrides()))
    cfg = tandem_config(*cpu_overrides())
    apply_tandem(cfg)
    verl_cpu.check_cpu_config(cfg)


@pytest.mark.parametrize("drop, named", [
    ("actor_rollout_ref.actor.strategy=fsdp2", "actor_rollout_ref.actor.strategy=fsdp2"),
    ("actor_rollout_ref.model.use_remove_padding=False", "use_remove_padding=False"),
    ("+actor_rollout_ref.rollout.enable_sleep_mode=False", "enable_sleep_mode=False"),
    ("+ray_kwargs.ray_init.num_gpus=1", "ray_init.num_gpus=1"),
])
def test_cpu_platform_refuses_a_config_it_cannot_run_and_names_the_fix(cpu_switch, drop, named):
    overrides = [o for o in cpu_overrides() if o != drop]
    with pytest.raises(TandemError, match=named.replace("+", r"\+")):
        verl_cpu.check_cpu_config(vanilla_config(*overrides))


def test_cpu_platform_refuses_without_the_engine_device_override(cpu_switch, monkeypatch):
    monkeypatch.delenv("VERL_ENGINE_DEVICE")
    with pytest.raises(TandemError, match="VERL_ENGINE_DEVICE=cuda"):
        verl_cpu.check_cpu_config(vanilla_config(*cpu_overrides()))


def test_cpu_platform_refuses_a_vllm_that_is_not_the_cpu_build(cpu_switch, monkeypatch):
    monkeypatch.setattr(verl_cpu, "_vllm_cpu_build", lambda: False)
    with pytest.raises(TandemError, match="vLLM's CPU build"):
        verl_cpu.check_cpu_config(vanilla_config(*cpu_overrides()))


def test_cpu_platform_refuses_when_verl_workers_would_not_load_it(cpu_switch, monkeypatch):
    monkeypatch.setenv(verl_cpu.MODULES_ENV, "other.module")
    with pytest.raises(TandemError, match=f"{verl_cpu.MODULES_ENV}={verl_cpu.__name__}"):
        verl_cpu.check_cpu_config(vanilla_config(*cpu_overrides()))


def test_the_launchers_preflight_refuses_a_cpu_config_before_ray_starts(cpu_switch):
    """verl/preflight.py runs before both launchers' entry points; the vanilla one is verl's stock main_ppo."""
    spec = importlib.util.spec_from_file_location("verl_preflight", REPO / "verl" / "preflight.py")
    preflight = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(preflight)
    cpu = ["actor_rollout_ref.rollout.name=vllm", *cpu_overrides()]  # the launchers' COMMON_ARGS name vLLM
    assert preflight.cpu_problem([*cpu, "tandem.prob_senior=0.5", "hydra.run.dir=out"]) is None
    problem = preflight.cpu_problem([o for o in cpu if "actor.strategy=" not in o])
    assert problem.startswith("error: ") and "actor_rollout_ref.actor.strategy=fsdp2" in problem


def test_verls_stock_entry_point_cannot_compose_the_tandem_config():
    """Else it would train plain GRPO under a tandem name: the block means nothing to verl's main_ppo."""
    res = subprocess.run([sys.executable, "-m", "verl.trainer.main_ppo", "--config-path", str(REPO / "verl" / "config"),
                          "--config-name", "tandem_trainer"], capture_output=True, text=True, timeout=180)
    assert res.returncode != 0
    assert f"Could not find '{ENTRY_GROUP}/{ENTRY_NODE}'" in res.stdout + res.stderr, res.stderr[-2000:]


IMPORT_VERL = """
import torch.distributed as dist
from torch.distributed.fsdp import CPUOffloadPolicy
import verl
from verl.plugin.platform import PlatformRegistry
from verl.utils import device
def patched():
    return getattr(dist.init_process_group, "_tandem_cpu", False), getattr(CPUOffloadPolicy.__init__, "_tandem_cpu", False)
on_import = patched()
device.get_device_name()  # verl builds its platform (the first device call of every verl process)
print(device.auto_set_device.__module__, "cpu" in PlatformRegistry.registered_names(), *on_import, *patched())
"""


@pytest.mark.parametrize("env, want", [
    ({}, "verl.utils.device False False False False False"),                                # installed, not asked
    ({"VERL_USE_EXTERNAL_MODULES": verl_cpu.__name__}, "verl.utils.device True False False False False"),
    ({"VERL_USE_EXTERNAL_MODULES": verl_cpu.__name__, "VERL_PLATFORM": "cpu"},
     "verl.utils.device True False False True True"),                                     # patched by the platform
])
def test_importing_verl_loads_nothing_of_ours_and_only_the_selected_cpu_platform_patches(env, want):
    """Registered on import (verl's plugin point); the shims are installed when verl builds the platform it selected."""
    base = {k: v for k, v in os.environ.items() if k not in ("VERL_PLATFORM", verl_cpu.MODULES_ENV)}
    res = subprocess.run([sys.executable, "-c", IMPORT_VERL], env={**base, **env}, capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0 and res.stdout.strip().splitlines()[-1] == want, res.stderr[-2000:]


FORWARD_ONLY_FSDP2 = """
import os, sys, torch, torch.distributed as dist
from torch.distributed.fsdp import CPUOffloadPolicy, fully_shard
if sys.argv[1] == "shim":
    from tandem_verl import cpu_platform as verl_cpu
    verl_cpu._patch_cpu_offload_policy()
os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=sys.argv[2])
dist.init_process_group("gloo", rank=0, world_size=1)
layer = fully_shard(torch.nn.Linear(4, 4), offload_policy=CPUOffloadPolicy(pin_memory=True))  # as verl's reference
print(float(layer(torch.ones(1, 4)).sum()) == float(layer(torch.ones(1, 4)).sum()))
"""


@pytest.mark.parametrize("mode", ["stock", "shim"])
def test_a_forward_only_fsdp2_engine_shards_on_cpu_only_with_the_offload_shim(mode):
    """verl's reference policy (the KL ablation) is FSDP2 under CPUOffloadPolicy(pin_memory=True)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = str(s.getsockname()[1])
    res = subprocess.run([sys.executable, "-c", FORWARD_ONLY_FSDP2, mode, port], capture_output=True, text=True,
                         timeout=120, cwd=REPO)
    if mode == "shim":
        assert res.returncode == 0 and res.stdout.strip() == "True", res.stderr[-2000:]
    else:
        assert res.returncode != 0 and "Cannot access accelerator device" in res.stderr
