"""The backends' registry (`tandem_backends.registry`), as a specification.

- Every entry declares every capability, and its builders.
- Callers ask the registry, never a backend's name: no `== "vllm"` / `== "engine"` and no
  `hasattr(backend, ...)` outside the floor, and no engine class built outside it.
- An unknown backend, or a capability a backend lacks, fails in one line naming what is valid.
- The vLLM defaults of a run's engines live in `vllm_source` (`vllm_source.run_defaults`).
"""

from __future__ import annotations

import re
from dataclasses import fields, replace
from pathlib import Path

import pytest

from tandem.process.config import TandemConfig
from tandem.errors import TandemError
from tandem_backends.registry import NAMES, REGISTRY, Backend, Capabilities, backend, capability_names, require
from tandem_backends.roles import RoleBackends
from tandem_backends.settings import EngineSettings
from vllm_source.run_defaults import ONE_ENGINE_MEMORY, TWO_ENGINE_MEMORY, run_engine_kwargs

REPO = Path(__file__).resolve().parents[1]
FLOOR = ("tandem", "vllm_source", "tandem_backends")  # where engines are defined and built
# verl/ is not a caller: its `rollout.name == "vllm"` names verl's own rollout, which builds no engine of the registry
CALLERS = ("tandem_app", "tandem_eval", "hf_grpo", "scripts")
NAME_TEST = re.compile(r"""[!=]=\s*["'](?:%s)["']|["'](?:%s)["']\s*[!=]=""" % ("|".join(NAMES), "|".join(NAMES)))
BACKEND_HASATTR = re.compile(r"hasattr\((?:backend|engine)\b")
ENGINE_BUILT = re.compile(r"\b(?:TandemEngine|VLLMEngine)\(")


def _caller_lines(pattern: re.Pattern) -> list[str]:
    return [f"{p.relative_to(REPO)}:{i}: {line.strip()}" for top in CALLERS for p in sorted((REPO / top).rglob("*.py"))
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1) if pattern.search(line)]


# --- every entry declares everything ---------------------------------------------------------


def test_the_registry_holds_the_reference_engine_and_vllm_by_their_names():
    assert NAMES == ("engine", "vllm") and all(REGISTRY[n].name == n for n in NAMES)


@pytest.mark.parametrize("name", NAMES)
def test_every_entry_declares_every_capability_and_both_builders(name):
    entry = REGISTRY[name]
    assert isinstance(entry, Backend) and entry.summary
    assert {f.name: type(getattr(entry.capabilities, f.name)) for f in fields(Capabilities)} == \
        {c: bool for c in capability_names()}
    assert callable(entry.build) and callable(entry.build_role)


def test_a_capability_has_no_default_so_a_new_one_is_declared_by_every_entry():
    with pytest.raises(TypeError):
        Capabilities(junior_logprobs=True)


def test_every_capability_names_itself_for_a_refusal():
    assert all(f.metadata.get("what") for f in fields(Capabilities))


# --- callers ask the registry ------------------------------------------------------------------


def test_no_caller_compares_a_backend_name():
    assert _caller_lines(NAME_TEST) == []


def test_no_caller_asks_a_backend_what_it_has_by_hasattr():
    assert _caller_lines(BACKEND_HASATTR) == []


def test_no_caller_builds_an_engine_class_itself():
    assert _caller_lines(ENGINE_BUILT) == []


def test_the_backend_flags_offer_the_registry_names():
    from tandem_app.commands import rollout
    from tandem_eval.core import flags

    assert rollout.BACKENDS == flags.BACKENDS == NAMES


# --- refusals, one line each -------------------------------------------------------------------


def test_an_unknown_backend_is_one_line_naming_the_valid_ones():
    asks = (lambda: backend("hf"), lambda: EngineSettings("m", backend="hf"),
            lambda: require("hf", "junior_logprobs", "x"))
    for ask in asks:
        with pytest.raises(TandemError, match=r"^unknown backend 'hf'; choose one of engine, vllm$"):
            ask()


@pytest.mark.parametrize("capability", capability_names())
def test_asking_for_a_capability_a_backend_lacks_fails_in_one_line(capability):
    lacking = [n for n in NAMES if not getattr(REGISTRY[n].capabilities, capability)]
    having = [n for n in NAMES if n not in lacking]
    for name in having:
        assert require(name, capability, "--flag") is REGISTRY[name]
    for name in lacking:
        with pytest.raises(TandemError) as err:
            require(name, capability, "--flag")
        line = str(err.value)
        assert "\n" not in line and line.startswith("--flag needs ") and f"the {name} backend lacks" in line
        assert line.endswith(f"use --backend {' or '.join(having)}" if having else "no backend has it")


def test_an_unknown_capability_is_a_programming_error_naming_the_known_ones():
    with pytest.raises(ValueError, match="unknown capability 'telepathy'; the registry knows junior_logprobs"):
        require("engine", "telepathy", "x")


def test_the_split_placement_is_refused_on_a_backend_without_it():
    split = TandemConfig(placement="split")
    assert EngineSettings("m", "j", backend="vllm", tandem=split).tandem.placement == "split"
    with pytest.raises(TandemError, match=r"^tandem.placement=split needs the split placement .* the engine backend "
                                          r"lacks; use --backend vllm$"):
        EngineSettings("m", "j", backend="engine", tandem=split)


def test_the_device_is_checked_only_where_the_backend_takes_one():
    with pytest.raises(TandemError, match="--device"):
        EngineSettings("m", backend="engine", device="tpu:7")
    assert EngineSettings("m", backend="vllm", device="tpu:7").device == "tpu:7"  # vLLM places its engines


# --- a run's roles are built by their entry ----------------------------------------------------


def test_a_role_is_built_by_its_entry_once(tiny_dir, monkeypatch):
    calls = []
    entry = REGISTRY["engine"]
    monkeypatch.setitem(REGISTRY, "engine", replace(entry, build_role=lambda roles, role: calls.append(role) or role))
    roles = RoleBackends(EngineSettings(tiny_dir))
    assert roles.backend("senior") == roles.backend("senior") == "senior" and calls == ["senior"]


def test_the_batch_size_applies_only_where_the_backend_does_not_schedule_batches():
    assert RoleBackends(EngineSettings("m", batch_size=5)).batch_size == 5
    assert RoleBackends(EngineSettings("m", backend="vllm", batch_size=5)).batch_size is None


# --- vLLM's defaults are vllm_source's ---------------------------------------------------------


def test_a_runs_vllm_engines_share_the_gpu_and_run_eager_on_cpu():
    assert run_engine_kwargs(1, platform="cuda") == {"gpu_memory_utilization": ONE_ENGINE_MEMORY}
    assert run_engine_kwargs(2, platform="cuda") == {"gpu_memory_utilization": TWO_ENGINE_MEMORY}
    assert run_engine_kwargs(2, 0.3, platform="cuda") == {"gpu_memory_utilization": 0.3}
    assert run_engine_kwargs(1, 0.3, platform="cpu") == {"enforce_eager": True}
