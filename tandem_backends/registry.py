"""The backends' registry: one entry holds everything a rollout backend is, its capabilities included.

An entry names the backend (the `--backend` value), says in one line what it runs on, declares
what it can do (`Capabilities`) and holds its two builders: `build` (one backend from model paths
or loaded models, what `build_backend` calls) and `build_role` (the backend of one role of a
run, what `tandem_backends.roles.RoleBackends` calls). Callers never compare a backend's name:
they read its capabilities, or `require` one, which refuses a backend without it in one line.
tests/test_backends_registry.py checks that every entry declares every capability.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, fields

from tandem.errors import TandemError
from tandem_backends import reference, vllm_engines


def _capability(what: str):
    """A capability a backend has or lacks; `what` names it in a refusal ('... needs <what>')."""
    return field(metadata={"what": what})


@dataclass(frozen=True)
class Capabilities:
    """What a backend can do; every entry sets every field (no defaults: a new one is a decision)."""

    junior_logprobs: bool = _capability("the junior's log-probability of every token")
    prompt_checks: bool = _capability("prompt checks before any work (`check_prompts`)")
    split_placement: bool = _capability("the split placement (the senior and the junior on two devices)")
    takes_device: bool = _capability("a device to load the models on (else it places them itself)")
    schedules_batches: bool = _capability("scheduling of a whole call (else batch_size rows per generate call)")
    two_engine_handoff: bool = _capability("the handoff as two engines taking turns (--vllm-handoff)")


def capability_names() -> tuple[str, ...]:
    return tuple(f.name for f in fields(Capabilities))


@dataclass(frozen=True)
class Backend:
    """One registry entry: the `--backend` value, what it runs on, what it can do, how it is built."""

    name: str
    summary: str  # what it runs on, one line (--help)
    capabilities: Capabilities
    build: Callable  # (senior, junior=None, tandem=None, **options) -> RolloutBackend
    build_role: Callable  # (roles: RoleBackends, role: str) -> RolloutBackend


REGISTRY: dict[str, Backend] = {}


def register_backend(entry: Backend) -> Backend:
    if entry.name in REGISTRY:
        raise ValueError(f"backend {entry.name!r} is registered twice")
    REGISTRY[entry.name] = entry
    return entry


for _entry in (
    Backend("engine", "the reference PyTorch engine (CPU or one GPU)",
            Capabilities(junior_logprobs=True, prompt_checks=True, split_placement=False, takes_device=True,
                         schedules_batches=False, two_engine_handoff=False),
            reference.build, reference.build_role),
    Backend("vllm", "the tandem vLLM engine (a GPU, or vLLM's CPU build)",
            Capabilities(junior_logprobs=False, prompt_checks=False, split_placement=True, takes_device=False,
                         schedules_batches=True, two_engine_handoff=True),
            vllm_engines.build, vllm_engines.build_role),
):
    register_backend(_entry)

NAMES = tuple(REGISTRY)


def backend(name: str) -> Backend:
    """The entry of `name`; an unknown name fails in one line naming the valid ones."""
    if name not in REGISTRY:
        raise TandemError(f"unknown backend {name!r}; choose one of {', '.join(REGISTRY)}")
    return REGISTRY[name]


def require(name: str, capability: str, asker: str) -> Backend:
    """The entry of `name` if it has `capability`; else one line: who asked, what it needs, who has it."""
    if capability not in capability_names():
        raise ValueError(f"unknown capability {capability!r}; the registry knows {', '.join(capability_names())}")
    entry = backend(name)
    if not getattr(entry.capabilities, capability):
        what = Capabilities.__dataclass_fields__[capability].metadata["what"]
        having = [n for n, e in REGISTRY.items() if getattr(e.capabilities, capability)]
        fix = f"use --backend {' or '.join(having)}" if having else "no backend has it"
        raise TandemError(f"{asker} needs {what}, which the {name} backend lacks; {fix}")
    return entry


def build_backend(name: str, senior, junior=None, tandem=None, **options):
    """One rollout backend (`tandem.rollout.contract.RolloutBackend`) of backend `name` over `senior` (and `junior`).

    Without a junior it holds the senior alone and generates solo; `tandem` is the process (None:
    `TandemConfig()`). The options are the entry's own (`tandem_backends.reference.build`,
    `tandem_backends.vllm_engines.build`).
    """
    return backend(name).build(senior, junior, tandem, **options)
