"""The machine under test: the GPUs nvidia-smi lists, whether its driver can run the stack's CUDA,
and the environment every check runs in."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

from .checkout import REPO

# The CPU lane's switches: left in the environment, they would run a check on the CPU build
CPU_ONLY_ENV = ("VLLM_TARGET_DEVICE", "VERL_PLATFORM", "VERL_ENGINE_DEVICE", "VLLM_CPU_KVCACHE_SPACE",
                "VLLM_CPU_OMP_THREADS_BIND", "TANDEM_VLLM_CPU_LIVE_WEIGHTS", "VERL_USE_EXTERNAL_MODULES")


# The oldest Linux driver branch each CUDA release runs on without the forward-compatibility package
# (NVIDIA's CUDA Toolkit release notes, "CUDA Toolkit and Corresponding Driver Versions").
DRIVER_FOR_CUDA = {(13, 0): 580, (12, 9): 575, (12, 8): 570, (12, 6): 560, (12, 4): 550, (12, 2): 535}


def parse_gpus(query: str, banner: str) -> list[dict]:
    """The GPUs of `nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv,noheader,nounits`
    (`query`) with the CUDA version plain `nvidia-smi` prints in its banner (the driver's); pure."""
    match = re.search(r"CUDA Version:\s*([0-9][0-9.]*)", banner)
    cuda = match.group(1) if match else None
    gpus = []
    for line in query.strip().splitlines():
        parts = [p.strip() for p in line.split(",")]
        if len(parts) == 3:
            gpus.append({"name": parts[0], "memory_mib": parts[1], "driver": parts[2], "driver_cuda": cuda})
    return gpus


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
    return parse_gpus(res.stdout, banner) if res.returncode == 0 else []


def _numbers(version: str | None) -> tuple[int, ...]:
    """'580.95.05' -> (580, 95, 5), 'cu130' -> (13, 0) (torch's build tag), '13.0' -> (13, 0); () when unreadable."""
    if not version:
        return ()
    tag = re.fullmatch(r"cu(\d+)(\d)", version)
    if tag:
        return int(tag.group(1)), int(tag.group(2))
    return tuple(int(n) for n in re.findall(r"\d+", version))


def forward_compat_driver(ld_library_path: str) -> str | None:
    """The version of a CUDA forward-compatibility libcuda on `ld_library_path` (the cuda-compat-13-0 package
    puts libcuda.so.580.x in /usr/local/cuda-13.0/compat), the newest one; None when there is none."""
    found = []
    for folder in filter(None, ld_library_path.split(os.pathsep)):
        try:
            names = os.listdir(folder)
        except OSError:
            continue
        found += [n.removeprefix("libcuda.so.") for n in names if re.fullmatch(r"libcuda\.so\.\d+\.\d+(\.\d+)?", n)]
    return max(found, key=_numbers, default=None)


def driver_problem(driver: str | None, driver_cuda: str | None, need_cuda: str, compat: str | None = None) -> str | None:
    """Why a driver (nvidia-smi's version and the CUDA it reports) cannot run a stack built for `need_cuda`
    (torch's tag, 'cu130', or '13.0'), in one line with the fix; None when it can. It can when its branch
    is at least the one DRIVER_FOR_CUDA names, when nvidia-smi reports that CUDA or newer, or when a
    forward-compatibility libcuda (`compat`, forward_compat_driver) of that branch is on the library path."""
    need = _numbers(need_cuda)[:2]
    branch = DRIVER_FOR_CUDA.get(need)
    if branch is None or not driver:
        return None  # a CUDA this table does not know, or no driver read: nothing to say before the stack runs
    if _numbers(driver)[:1] >= (branch,) or _numbers(driver_cuda)[:2] >= need or _numbers(compat)[:1] >= (branch,):
        return None
    cuda = ".".join(map(str, need))
    return (f"driver {driver} (CUDA {driver_cuda or '?'}) cannot run the stack's CUDA {cuda} build, which needs "
            f"driver R{branch} or newer: upgrade the driver to R{branch}+, or install the CUDA {cuda} "
            f"forward-compatibility package (cuda-compat-{cuda.replace('.', '-')}) and put "
            f"/usr/local/cuda-{cuda}/compat on LD_LIBRARY_PATH")


# fp32 comparisons against the reference engine: on an H100 float32 attention is TRITON_ATTN, whose
# tl.dot defaults to TF32; "ieee" makes Triton's fp32 dots full fp32 (greedy ties and LOGPROB_TOL hold).
# Every check gets it (V1, V2, the launchers): bf16 dots do not read it.
FP32_ENV = {"TRITON_F32_DEFAULT": "ieee"}


def gpu_env(out: Path) -> dict:
    """The environment of every check: CPU-lane switches removed, fp32 Triton dots in full fp32 (FP32_ENV),
    this checkout first on the path."""
    env = {k: v for k, v in os.environ.items() if k not in CPU_ONLY_ENV}
    env.update(FP32_ENV)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO)] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    env["TANDEM_SCALE_CACHE"] = str(out / "cache")
    env["TANDEM_REQUIRE_SCALE"] = "1"  # a skipped test inside a check fails that check
    return env
