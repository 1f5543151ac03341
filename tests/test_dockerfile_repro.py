"""Dockerfile.repro agrees with the stack it installs: base CUDA = torch's CUDA, pins = verl's, driver stated.

The image cannot be built here; this reads the file. Every rule is checked on the real
file and on a copy broken in that one place, so each rule can fail.
"""

from __future__ import annotations

import importlib.metadata
import re
from pathlib import Path

import pytest

DOCKERFILE = Path(__file__).resolve().parents[1] / "Dockerfile.repro"
# From the vllm 0.24.0 wheel's METADATA (Requires-Dist): the torch and flashinfer it pins.
VLLM_PINS = {"0.24.0": {"torch": "2.11.0", "flashinfer": "0.6.12"}}
# PyPI's default torch builds: the CUDA each is compiled for (torch 2.11.0 -> cuda-toolkit 13.0.2).
TORCH_CUDA = {"2.11.0": "cu130"}
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
        out.append(f"base flavour {flavour}: flashinfer JIT and the flash-attn build need nvcc (devel)")
    verl_vllm = {r.split(";")[0].strip() for r in importlib.metadata.requires("verl") or []
                 if 'extra == "vllm"' in r}
    if f"vllm=={a.get('VLLM_VERSION')}" not in verl_vllm:
        out.append(f"VLLM_VERSION={a.get('VLLM_VERSION')} is not verl's [vllm] pin ({sorted(verl_vllm)})")
    if f"torch=={a.get('TORCH_VERSION')}" not in verl_vllm:
        out.append(f"TORCH_VERSION={a.get('TORCH_VERSION')} is not verl's [vllm] pin")
    if a.get("VERL_VERSION") != importlib.metadata.version("verl"):
        out.append(f"VERL_VERSION={a.get('VERL_VERSION')} is not the verl the adapter targets")
    pins = VLLM_PINS.get(a.get("VLLM_VERSION", ""), {})
    if pins.get("flashinfer") != a.get("FLASHINFER_VERSION"):
        out.append(f"FLASHINFER_VERSION={a.get('FLASHINFER_VERSION')}; vLLM pins {pins.get('flashinfer')}")
    torch_cuda = TORCH_CUDA.get(a.get("TORCH_VERSION", ""))
    if a.get("TORCH_CUDA") != torch_cuda:
        out.append(f"TORCH_CUDA={a.get('TORCH_CUDA')}; PyPI's torch {a.get('TORCH_VERSION')} is {torch_cuda}")
    elif torch_cuda != f"cu{major}{minor}":
        out.append(f"base CUDA {major}.{minor} but torch is {torch_cuda}: JIT kernels would mix toolkits")
    if f"R{MIN_DRIVER.get(major)} or newer" not in text:
        out.append(f"the header does not state the driver CUDA {major} needs (R{MIN_DRIVER.get(major)} or newer)")
    if f'"CUDA Version: {major}.{minor}" or newer' not in text:
        out.append("the header does not say what nvidia-smi must report")
    archs = [int(x) for x in a.get("FLASH_ATTN_CUDA_ARCHS", "").split(";") if x]
    if not archs or min(archs) < 80:
        out.append(f"FLASH_ATTN_CUDA_ARCHS={archs}: flash-attn 2 needs compute capability 8.0+")
    elif f"compute capability {min(archs) // 10}.{min(archs) % 10} or newer" not in text:
        out.append("the header's GPU requirement does not match the flash-attn architectures built")
    if not re.search(r'pip install --no-build-isolation[^\n]*"flash-attn==\$\{FLASH_ATTN_VERSION\}"', text):
        out.append("flash-attn must be built against the installed torch (--no-build-isolation)")
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
    "vllm pin": ("ARG VLLM_VERSION=0.24.0", "ARG VLLM_VERSION=0.23.0"),
    "torch pin": ("ARG TORCH_VERSION=2.11.0", "ARG TORCH_VERSION=2.10.0"),
    "flashinfer pin": ("ARG FLASHINFER_VERSION=0.6.12", "ARG FLASHINFER_VERSION=0.6.11"),
    "torch cuda": ("ARG TORCH_CUDA=cu130", "ARG TORCH_CUDA=cu129"),
    "driver": ("R580 or newer", "R570 or newer"),
    "fa arch": ('ARG FLASH_ATTN_CUDA_ARCHS="80;90"', 'ARG FLASH_ATTN_CUDA_ARCHS="75;80;90"'),
    "fa isolation": ("pip install --no-build-isolation --no-deps", "pip install --no-deps"),
    "smoke": ("== ['13', '0']", "== ['12', '9']"),
}


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_each_rule_catches_its_break(name):
    old, new = BREAKS[name]
    text = DOCKERFILE.read_text()
    assert old in text, f"the Dockerfile no longer contains {old!r}; update BREAKS"
    assert problems(text.replace(old, new))
