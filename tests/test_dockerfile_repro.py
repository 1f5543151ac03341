"""Dockerfile.repro agrees with the stack it installs: base CUDA = torch's CUDA, driver stated, sdpa only.

Which releases it pins is tests/test_gpu_stack_pins.py's rule (vllm_source/stack.py);
this file checks that the image is consistent with those pins.

The image cannot be built here; this reads the file. Every rule is checked on the real
file and on a copy broken in that one place, so each rule can fail.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from vllm_source import stack

DOCKERFILE = Path(__file__).resolve().parents[1] / "Dockerfile.repro"

# NVIDIA CUDA Compatibility guide, minor-version compatibility: the driver branch a CUDA major needs.
MIN_DRIVER = {12: 525, 13: 580}


def args(text: str) -> dict[str, str]:
    return {m[1]: m[2].strip('"') for m in re.finditer(r"^ARG (\w+)=(\S+)", text, re.M)}


def problems(text: str) -> list[str]:
    """Every inconsistency between the Dockerfile's base, pins, builds and stated requirements."""
    out = []
    base = re.search(r"^FROM nvidia/cuda:(\d+)\.(\d+)\.(\d+)-(?:cudnn-)?(\w+)-ubuntu([\d.]+)\s*$", text, re.M)
    if not base:
        return ["no `FROM nvidia/cuda:X.Y.Z-[cudnn-]devel-ubuntuNN.NN` line"]
    major, minor, flavour = int(base[1]), int(base[2]), base[4]
    a = args(text)
    if flavour != "devel":
        out.append(f"base flavour {flavour}: flashinfer's JIT needs nvcc (devel)")
    release = stack.release_for_vllm(a.get("VLLM_VERSION", ""))
    if release is None or release.torch != a.get("TORCH_VERSION"):
        out.append(f"TORCH_VERSION={a.get('TORCH_VERSION')} is not the torch vLLM {a.get('VLLM_VERSION')} pins")
    torch_cuda = release.torch_cuda if release else None
    if a.get("TORCH_CUDA") != torch_cuda:
        out.append(f"TORCH_CUDA={a.get('TORCH_CUDA')}; PyPI's torch {a.get('TORCH_VERSION')} is {torch_cuda}")
    elif torch_cuda != f"cu{major}{minor}":
        out.append(f"base CUDA {major}.{minor} but torch is {torch_cuda}: JIT kernels would mix toolkits")
    if f"R{MIN_DRIVER.get(major)} or newer" not in text:
        out.append(f"the header does not state the driver CUDA {major} needs (R{MIN_DRIVER.get(major)} or newer)")
    if f'"CUDA Version: {major}.{minor}" or newer' not in text:
        out.append("the header does not say what nvidia-smi must report")
    if re.search(r"pip install[^\n]*flash-attn", text):
        out.append("the image installs flash-attn, which has no build for torch 2.13 + CUDA 13 that has run")
    if "compute capability 8.0 or newer" not in text:
        out.append("the header does not state the GPUs the image is for (compute capability 8.0 or newer)")
    if "ATTENTION: sdpa only" not in text:
        out.append("the header does not state the trainer's attention decision (sdpa only)")
    if "--mount=type=bind,from=wheelhouse" not in text or "--no-index --find-links /tmp/wheelhouse" not in text:
        out.append("the image cannot install from a wheelhouse with no index")
    if "check_vllm_version" not in text or "current_platform" not in text:
        out.append("the import checks do not name vLLM's release status and platform")
    if f"torch.version.cuda.split('.')[:2] == ['{major}', '{minor}']" not in text:
        out.append("the import smoke does not assert torch's CUDA equals the base image's")
    if "scripts/gpu_check.sh" not in text:
        out.append("the header does not point GPU users at scripts/gpu_check.sh")
    return out


def test_the_dockerfile_is_consistent():
    assert problems(DOCKERFILE.read_text()) == []


BREAKS = {
    "old base": ("nvidia/cuda:13.0.2-cudnn-devel", "nvidia/cuda:12.9.1-cudnn-devel"),
    "runtime base": ("13.0.2-cudnn-devel-ubuntu24.04", "13.0.2-cudnn-runtime-ubuntu24.04"),
    "torch pin": ("ARG TORCH_VERSION=2.13.0", "ARG TORCH_VERSION=2.11.0"),
    "torch cuda": ("ARG TORCH_CUDA=cu130", "ARG TORCH_CUDA=cu129"),
    "driver": ("R580 or newer", "R570 or newer"),
    "flash-attn": ("pip install $STACK \\", 'pip install $STACK "flash-attn==2.8.3" \\'),
    "wheelhouse": ("--mount=type=bind,from=wheelhouse", "--mount=type=bind"),
    "vllm status": ("check_vllm_version", "require_vllm"),
    "smoke": ("== ['13', '0']", "== ['12', '9']"),
}


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_each_rule_catches_its_break(name):
    old, new = BREAKS[name]
    text = DOCKERFILE.read_text()
    assert old in text, f"the Dockerfile no longer contains {old!r}; update BREAKS"
    assert problems(text.replace(old, new))
