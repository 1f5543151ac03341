"""What the wheelhouse is for: the target's Python and platform, what it already has, the vLLM release.

The release is the one --vllm names (either table of vllm_source/stack.py: the GPU stack's,
or an engine-only release of the V2 model runner, which gets no verl), else the one the
target's torch pins, else the tested one.

Every check here needs no network, so bad input is refused before anything is resolved or
downloaded. The stack's pins come from vllm_source/stack.py and the package's own
requirements from pyproject.toml: there is no second list.
"""

from __future__ import annotations

import importlib.util
import re
import sys
from dataclasses import dataclass, field
from pathlib import Path

from .basics import REPO, WheelhouseError, normalize, unique

EXTRAS = ("dev", "eval", "wandb")  # what `pip install -e .[...]` from the wheelhouse asks for
# Beside an engine-only release: the V2 lane's install (scripts/scale/install_v2.sh), `.[eval]` and
# the dev extra's pytest; the dev extra itself holds verl, which cannot install there.
ENGINE_EXTRAS, ENGINE_DEV_TOOLS = ("eval",), ("pytest",)
DEFAULT_PYTHON = "3.12"  # Ubuntu 24.04's, the image's
DEFAULT_PLATFORM = "x86_64-manylinux_2_34"  # glibc 2.34: RHEL 9, Ubuntu 22.04 and newer (llguidance needs 2.31)
LEGACY_MANYLINUX = ("manylinux2014_x86_64", "manylinux2010_x86_64", "manylinux1_x86_64")


def glibc_of(platform: str) -> int:
    """N of x86_64-manylinux_2_N (uv's spelling) or manylinux_2_N_x86_64 (a wheel tag); refuses anything else."""
    m = re.fullmatch(r"x86_64-manylinux_2_(\d+)|manylinux_2_(\d+)_x86_64", platform)
    glibc = int(m[1] or m[2]) if m else 0
    if glibc < 17:
        raise WheelhouseError(f"--platform {platform}: the GPU stack's wheels (torch, vLLM, flashinfer) are built "
                              "for Linux x86_64 with glibc (manylinux): give x86_64-manylinux_2_N with N from the "
                              f"target's `ldd --version` (17 or more), e.g. --platform {DEFAULT_PLATFORM}")
    return glibc


def platform_tags(platform: str) -> tuple[str, ...]:
    """The wheel platform tags a glibc 2.N x86_64 Linux installs, newest first."""
    return tuple(f"manylinux_2_{n}_x86_64" for n in range(glibc_of(platform), 16, -1)) + LEGACY_MANYLINUX


PLATFORMS = platform_tags(DEFAULT_PLATFORM)


def load_stack():
    """vllm_source/stack.py, loaded by path so that nothing else of the package is imported."""
    name = "_tandem_gpu_stack"
    if name in sys.modules:
        return sys.modules[name]
    spec = importlib.util.spec_from_file_location(name, REPO / "vllm_source" / "stack.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module  # its dataclass looks its module up there
    spec.loader.exec_module(module)
    return module


def stack_requirements(stack, release) -> list[str]:
    """The GPU stack of one release, as pip requirement lines (verl without [vllm]; none beside an engine-only release)."""
    reqs = [f"torch=={release.torch}", f"vllm=={release.vllm}", f"flashinfer-python=={release.flashinfer}"]
    if release.flashinfer_cubin:
        reqs.append(f"flashinfer-cubin=={release.flashinfer_cubin}")
    return reqs + ([f"verl=={stack.VERL}"] if release.with_verl else []) + [f"transformers=={release.transformers}"]


def read_pyproject(path: Path = REPO / "pyproject.toml") -> dict:
    try:
        import tomllib
    except ModuleNotFoundError:
        raise WheelhouseError("reading pyproject.toml needs Python 3.11 or newer (tomllib): run with "
                              "GPU_WHEELHOUSE_LAUNCHER_PYTHON=python3.11 (or newer)") from None
    return tomllib.loads(path.read_text())


def build_requirements(pyproject: dict) -> list[str]:
    """What an editable install with no index and no build isolation needs first: the build backend, pip."""
    return unique(list(pyproject["build-system"]["requires"]) + ["pip"])


def project_requirements(pyproject: dict, with_verl: bool = True) -> list[str]:
    """This package's dependencies and the extras it is installed with from the wheelhouse (beside an
    engine-only release: ENGINE_EXTRAS and the dev extra's ENGINE_DEV_TOOLS)."""
    project = pyproject["project"]
    extras = project.get("optional-dependencies", {})
    if with_verl:
        return unique(list(project["dependencies"]) + [r for name in EXTRAS for r in extras.get(name, [])])
    tools = [r for r in extras.get("dev", []) if normalize(re.split(r"[\s<>=!~\[;]", r, maxsplit=1)[0]) in ENGINE_DEV_TOOLS]
    return unique(list(project["dependencies"]) + [r for name in ENGINE_EXTRAS for r in extras.get(name, [])] + tools)


def python_allowed(spec: str, python: str) -> bool:
    """Whether X.Y meets a requires-python made of >=, >, <=, <, ==, != clauses (X.Y compared as numbers)."""
    have = tuple(int(p) for p in python.split("."))
    ops = {">=": lambda a, b: a >= b, ">": lambda a, b: a > b, "<=": lambda a, b: a <= b,
           "<": lambda a, b: a < b, "==": lambda a, b: a == b, "!=": lambda a, b: a != b}
    for clause in filter(None, (c.strip() for c in spec.split(","))):
        m = re.fullmatch(r"(>=|<=|==|!=|>|<)\s*(\d+(?:\.\d+)*)(?:\.\*)?", clause)
        if m is None:
            continue
        want = tuple(int(p) for p in m[2].split("."))[:2]
        if not ops[m[1]](have[:len(want)], want):
            return False
    return True


@dataclass
class Target:
    """What the wheelhouse is for: the interpreter, what the machine already has, the release."""

    python: str
    present: dict[str, str]  # normalized name -> version, from --present
    release: object  # a stack.VllmRelease
    torch_source: str  # "present" (the target has it) or "wheelhouse"
    stack: list[str]  # the stack's requirement lines
    requirements: list[str]  # everything handed to the resolver
    build_requires: list[str] = field(default_factory=list)
    platform: str = DEFAULT_PLATFORM  # uv's spelling: x86_64-manylinux_2_N
    extras: tuple[str, ...] = EXTRAS  # the package's extras installed from it (ENGINE_EXTRAS beside an engine-only release)

    @property
    def platforms(self) -> tuple[str, ...]:
        return platform_tags(self.platform)


def read_present(path: Path) -> dict[str, str]:
    """A `pip freeze`: normalized name -> version; editable and direct-URL lines have no version and are left out."""
    if not path.exists() or path.is_dir():
        raise WheelhouseError(f"--present {path}: no such file; write one on the target with "
                              "`python -m pip freeze > FILE`")
    present = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-"):
            continue
        m = re.fullmatch(r"([A-Za-z0-9][A-Za-z0-9._-]*)\s*(?:\[[^\]]*\])?\s*===?\s*(\S+)", line)
        if m:
            present[normalize(m[1])] = m[2]
        elif normalize(re.split(r"[\s@=<>!~\[;]", line, maxsplit=1)[0]) == "torch":
            raise WheelhouseError(f"--present {path}: the torch line {line!r} has no version; write it as "
                                  "torch==VERSION (what `python -c 'import torch; print(torch.__version__)'` "
                                  "prints on the target)")
    return present


def named_release(stack, vllm: str):
    """The release --vllm names, exactly, from either table of stack.py; one line naming them all otherwise."""
    release = stack.release_named(vllm)
    if release is None:
        raise WheelhouseError(f"--vllm {vllm}: vllm_source/stack.py lists no such release (GPU stack: "
                              f"{stack.describe()}; engine and eval only: {stack.describe(stack.ENGINE_RELEASES)}): "
                              "give one of those versions exactly")
    return release


def choose_release(stack, present: dict[str, str], source: str, vllm: str | None = None):
    """The release --vllm names, else the one the target's torch pins (or the tested one with no torch there),
    and where torch comes from."""
    torch = present.get("torch")
    if vllm is not None:
        release = named_release(stack, vllm)
        if torch is not None and torch.split("+")[0] != release.torch:
            raise WheelhouseError(f"--vllm {vllm} needs torch {release.torch}, and {source} has torch {torch}: "
                                  "drop torch from the file to ship that one in the wheelhouse")
    elif torch is None:
        return stack.TESTED, "wheelhouse"
    else:
        release = stack.release_for_torch(torch)
    if torch is None:
        return release, "wheelhouse"
    if release is None:
        raise WheelhouseError(f"{source} has torch {torch}, which no vLLM release in vllm_source/stack.py pins "
                              f"({stack.describe()}): build for a target with one of those torch versions, or "
                              f"drop torch from the file to ship torch {stack.TESTED.torch} in the wheelhouse")
    local = torch.partition("+")[2]
    if local and local != release.torch_cuda:
        raise WheelhouseError(f"{source} has torch {torch}, a {local} build; vLLM {release.vllm} needs PyPI's "
                              f"{release.torch_cuda} build of torch {release.torch}: drop torch from the file "
                              "to ship that one in the wheelhouse")
    return release, "present"


def check_present_vllm(stack, present: dict[str, str], release, source: str) -> None:
    """A vLLM on the target must be the release its torch chose: any other is one no tested stack runs."""
    have = present.get("vllm")
    if have is not None and have.split("+")[0] != release.vllm and stack.release_for_vllm(have) is not release:
        raise WheelhouseError(f"{source} has vllm {have}, which vllm_source/stack.py does not pair with torch "
                              f"{release.torch} ({stack.describe()}): drop vllm from the file to ship vLLM "
                              f"{release.vllm} in the wheelhouse")


def plan_target(python: str, present_file: Path | None, stack=None, pyproject: dict | None = None,
                platform: str = DEFAULT_PLATFORM, vllm: str | None = None) -> Target:
    """Every check that needs no network: Python version, platform, the --present file, the release."""
    if not re.fullmatch(r"3\.\d{1,2}", python):
        raise WheelhouseError(f"--python {python}: give the target's Python as X.Y, e.g. --python 3.12")
    stack = stack or load_stack()
    pyproject = pyproject if pyproject is not None else read_pyproject()
    wants = pyproject["project"].get("requires-python", "")
    if not python_allowed(wants, python):
        raise WheelhouseError(f"--python {python}: tandem-rlvr requires Python {wants} (pyproject.toml); "
                              "pick one in that range")
    platform = f"x86_64-manylinux_2_{glibc_of(platform)}"
    present = read_present(present_file) if present_file else {}
    source = f"--present {present_file}"
    release, torch_source = choose_release(stack, present, source, vllm)
    check_present_vllm(stack, present, release, source)
    stack_reqs = stack_requirements(stack, release)
    build = build_requirements(pyproject)
    return Target(python, present, release, torch_source, stack_reqs,
                  unique(stack_reqs + project_requirements(pyproject, release.with_verl) + build), build, platform,
                  EXTRAS if release.with_verl else ENGINE_EXTRAS)
