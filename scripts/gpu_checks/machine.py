"""The machine under test: the GPUs nvidia-smi lists, and the environment every check runs in."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

from .checkout import REPO

# The CPU lane's switches: left in the environment, they would run a check on the CPU build
CPU_ONLY_ENV = ("VLLM_TARGET_DEVICE", "VERL_PLATFORM", "VERL_ENGINE_DEVICE", "VLLM_CPU_KVCACHE_SPACE",
                "VLLM_CPU_OMP_THREADS_BIND", "TANDEM_VLLM_CPU_LIVE_WEIGHTS", "VERL_USE_EXTERNAL_MODULES")


def detect_gpus(nvidia_smi: str) -> list[dict]:
    """The GPUs nvidia-smi lists (name, memory, driver, CUDA the driver supports); [] when none."""
    exe = shutil.which(nvidia_smi)
    if exe is None:
        return []
    query = [exe, "--query-gpu=name,memory.total,driver_version", "--format=csv,noheader,nounits"]
    try:
        res = subprocess.run(query, capture_output=True, text=True, timeout=60)
        banner = subprocess.run([exe], capture_output=True, text=True, timeout=60).stdout
    except (OSError, subprocess.TimeoutExpired):
        return []
    if res.returncode != 0:
        return []
    cuda = banner.split("CUDA Version:")[1].split()[0] if "CUDA Version:" in banner else None
    gpus = []
    for line in res.stdout.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            gpus.append({"name": parts[0], "memory_mib": parts[1], "driver": parts[2], "driver_cuda": cuda})
    return gpus


def gpu_env(out: Path) -> dict:
    """The environment of every check: CPU-lane switches removed, this checkout first on the path."""
    env = {k: v for k, v in os.environ.items() if k not in CPU_ONLY_ENV}
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["TANDEM_SCALE_CACHE"] = str(out / "cache")
    env["TANDEM_REQUIRE_SCALE"] = "1"  # a skipped test inside a check fails that check
    return env
