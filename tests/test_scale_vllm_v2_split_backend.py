"""vLLM 0.32's own backend selection gives a split engine on a GPU a backend split accepts (issue 61).

The V2 lane's twin of the selection tests in tests/test_scale_vllm_split_attention.py: the
engine arguments a split engine gets on a machine with two GPUs, turned into vLLM's engine
config, and vLLM's selector run under a simulated SM90 and SM80 CUDA capability
(tests/split_backend_selection.py), in bf16 and in fp32.
"""

from __future__ import annotations

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed; the V2 lane (bash scripts/test_scale.sh --v2) runs this")
pytestmark = pytest.mark.vllm

import torch  # noqa: E402
from split_backend_selection import engine_config, first_choice, selected_backend, split_engine_args  # noqa: E402

from vllm_source.compat import SPLIT_DEFAULT_BACKEND, minor, tandem_runner  # noqa: E402
from vllm_source.split_attention import check_split_backend  # noqa: E402

MINOR = minor(vllm.__version__)


@pytest.mark.parametrize("capability", [(9, 0), (8, 0)])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])
def test_vllm_gives_a_split_engine_on_a_gpu_the_backend_it_names_and_split_accepts_it(capability, dtype, scale_senior,
                                                                                       monkeypatch):
    kwargs = split_engine_args(monkeypatch, str(scale_senior), tandem_runner(), max_model_len=512)
    assert kwargs["attention_backend"] == SPLIT_DEFAULT_BACKEND
    got = selected_backend(engine_config(kwargs), capability, dtype)
    assert got == SPLIT_DEFAULT_BACKEND
    check_split_backend(MINOR, got, capability[0])


def test_vllms_own_first_choice_on_sm90_reads_the_heads_from_the_layers_on_this_release():
    assert first_choice((9, 0)) == "FLASH_ATTN"
    check_split_backend(MINOR, "FLASH_ATTN", 9)  # 0.32 (and 0.33) read them from the layers: a user may name it
