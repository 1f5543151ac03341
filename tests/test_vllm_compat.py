"""Every per-release answer of the vLLM backend comes from `vllm_source/compat.py`, with no vLLM.

The runner pin's refusals are spelled out here in full: they name the release to install,
which `compat.RUNNER_RELEASE` supplies, and must read exactly as users have seen them.
"""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from tandem.errors import TandemError
from vllm_source import compat, stack
from vllm_source.model_runner import pin_runner


@pytest.mark.parametrize("version, want", [("0.28.0", "0.28"), ("0.28.0+cpu", "0.28"), ("0.32.1", "0.32"),
                                           ("0.24", "0.24")])
def test_a_release_is_keyed_by_major_and_minor(version, want):
    assert compat.minor(version) == want


def v2_interface(methods=compat.V2_PROCESSOR_METHODS, ctx_fields=(*compat.V2_CONTEXT_FIELDS, "pos"),
                 req_fields=compat.V2_REQUEST_STATE_FIELDS) -> NS:
    """A stand-in for vLLM's V2 processor interface module (0.31-0.33 ship one, byte for byte)."""
    proc = type("LogitsProcessor", (), {m: lambda *a: None for m in methods})
    ctx = type("LogitsContext", (), {"__dataclass_fields__": dict.fromkeys(ctx_fields)})
    req = type("LogitsProcRequestState", (), {"__dataclass_fields__": dict.fromkeys(req_fields)})
    return NS(LogitsProcessor=proc, LogitsContext=ctx, LogitsProcRequestState=req)


def test_the_runner_follows_the_processor_interface_not_the_version():
    assert compat.interface_runner(v2_interface()) == "v2"
    assert compat.interface_runner(None) == "v1"  # no vLLM, or 0.24/0.28: no V2 processor interface
    assert compat.interface_runner(NS()) == "v1"
    assert compat.interface_runner(v2_interface(methods=("validate_params", "apply"))) == "v1"
    assert compat.interface_runner(v2_interface(ctx_fields=("idx_mapping_np", "input_ids"))) == "v1"
    assert compat.interface_runner(v2_interface(req_fields=("device",))) == "v1"


def test_without_vllm_the_installed_runner_is_v1(monkeypatch):
    import importlib

    real = importlib.import_module

    def no_interface(name, *a):
        if name == compat.V2_INTERFACE_MODULE:
            raise ModuleNotFoundError(name)
        return real(name, *a)

    monkeypatch.setattr(importlib, "import_module", no_interface)
    assert compat.tandem_runner() == "v1"


def test_the_runner_is_read_from_the_config_and_from_the_runner_class():
    assert compat.config_runner(NS(use_v2_model_runner=True)) == "v2"
    assert compat.config_runner(NS(use_v2_model_runner=False)) == "v1"
    assert compat.config_runner(NS()) == "v1"  # a release whose config does not spell it
    assert compat.runner_generation(type("R", (), {"__module__": "vllm.v1.worker.gpu.model_runner"})) == "v2"
    assert compat.runner_generation(type("R", (), {"__module__": "vllm.v1.worker.gpu_model_runner"})) == "v1"


def test_the_release_table_covers_the_gpu_stack_and_the_engine_releases():
    assert compat.TESTED_VLLM == tuple(r.minor for r in stack.RELEASES)
    assert compat.check_vllm_version("0.28.0+cpu") is stack.TESTED
    assert compat.check_vllm_version("0.32.0").minor == "0.32"
    assert "never run" in compat.check_vllm_version("0.33.0").status  # the vllm-latest extra, GPU only
    assert compat.RUNNER_RELEASE == {"v1": "0.28.0", "v2": "0.32.0"}
    with pytest.raises(TandemError, match=r"^vLLM 0\.26\.1 is neither tested nor accepted .*install vllm==0\.28\.0 "):
        compat.check_vllm_version("0.26.1")


def test_the_runner_pin_refuses_the_other_runner_in_the_same_words():
    with pytest.raises(TandemError) as e:
        pin_runner("0.28.0", {"VLLM_USE_V2_MODEL_RUNNER": "1"}, runner="v1")
    assert str(e.value) == (
        "VLLM_USE_V2_MODEL_RUNNER=1 asks for vLLM 0.28.0's V2 model runner, which runs no custom logits processors "
        "there: the tandem arm cannot decode on it; unset VLLM_USE_V2_MODEL_RUNNER (or install vllm==0.32.0, whose "
        "V2 runner the tandem engine runs on)")
    with pytest.raises(TandemError) as e:
        pin_runner("0.32.0", {"VLLM_USE_V2_MODEL_RUNNER": "0"}, runner="v2")
    assert str(e.value) == (
        "VLLM_USE_V2_MODEL_RUNNER=0 asks for vLLM 0.32.0's V1 model runner, deprecated there; the tandem engine runs "
        "on its V2 runner: unset VLLM_USE_V2_MODEL_RUNNER (or install vllm==0.28.0 for V1)")



def test_each_engine_release_is_one_extra_of_the_package():
    """pip install -e '.[vllm-v2]' (0.32.0, whose CPU build the V2 lane runs) or '.[vllm-latest]' (0.33.0, GPU only)."""
    import tomllib
    from pathlib import Path

    pyproject = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    extras = pyproject["project"]["optional-dependencies"]
    assert [r.vllm for r in compat.ENGINE_RELEASES] == ["0.32.0", "0.33.0"]
    v2, latest = compat.ENGINE_RELEASES
    assert extras["vllm-v2"] == [f"vllm=={v2.vllm}"]
    assert extras["vllm-latest"] == [f"vllm=={latest.vllm}", f"torch=={latest.torch}"]  # stack.py: 0.33.0 pins torch 2.14.0
    assert latest.torch == "2.14.0" and not (v2.with_verl or latest.with_verl)
