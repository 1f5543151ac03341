"""The split placement's backend table matches the installed vLLM's own attention code.

For each backend `vllm_source/compat.py` lists for this release, the named line of
the installed backend file must be where its metadata builder reads the query-head count:
`get_num_attention_heads_from_layers` for a backend split may use, the model config's
`get_num_attention_heads` for one it refuses. Every backend file that reads the head count
either way must be in the table, so a new backend cannot slip past unread.

And vLLM's own backend selection, run here on a simulated SM90 and SM80 GPU with the engine
arguments a split engine gets (`tests/split_backend_selection.py`), gives it a backend split
accepts: the one the calling process named, as vLLM's first choice there (FLASH_ATTN) is refused on 0.28.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import torch

vllm = pytest.importorskip("vllm", reason="vLLM is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytestmark = pytest.mark.vllm

from vllm_source.compat import CONFIG, HEAD_SIZE_FROM, HEADS_FROM, LAYERS, minor  # noqa: E402

ROOT = Path(vllm.__file__).parent
MINOR = minor(vllm.__version__)
TABLE = HEADS_FROM[MINOR]
CALL = {LAYERS: "get_num_attention_heads_from_layers(", CONFIG: "get_num_attention_heads("}


def located(where: str) -> list[tuple[Path, int]]:
    return [(ROOT / path, int(line)) for path, line in re.findall(r"(\S+\.py):(\d+)", where)]


@pytest.mark.parametrize("backend", sorted(TABLE))
def test_the_named_line_reads_the_heads_where_the_table_says(backend):
    source, where = TABLE[backend]
    for path, line in located(where):
        text = path.read_text().splitlines()[line - 1]
        assert CALL[source] in text, f"{path.name}:{line} is {text.strip()!r}"
        if source == CONFIG:
            assert "from_layers" not in text


def test_every_backend_that_reads_the_head_count_is_in_the_table():
    files = {path.name for _, where in TABLE.values() for path, _ in located(where)}
    readers = {p.name for p in (ROOT / "v1" / "attention" / "backends").glob("*.py")
               if re.search(r"\.get_num_attention_heads\(|get_num_attention_heads_from_layers\(", p.read_text())
               and p.name != "utils.py"}
    unlisted = readers - files
    assert not unlisted, f"backends reading the head count that compat.py does not list: {sorted(unlisted)}"


def test_the_cpu_lane_backend_is_one_split_may_use():
    from vllm.v1.attention.backends.cpu_attn import CPUAttentionBackend

    assert TABLE[CPUAttentionBackend.get_name()][0] == LAYERS


HEAD_SIZE_CALL = {LAYERS: "kv_cache_spec.head_size", CONFIG: "model_config.get_head_size()"}


@pytest.mark.parametrize("backend", sorted(HEAD_SIZE_FROM.get(MINOR, {})))
def test_the_named_line_reads_the_head_size_where_the_table_says(backend):
    source, where = HEAD_SIZE_FROM[MINOR][backend]
    for path, line in located(where):
        text = path.read_text().splitlines()[line - 1]
        assert HEAD_SIZE_CALL[source] in text, f"{path.name}:{line} is {text.strip()!r}"


def test_every_backend_split_may_use_has_a_head_size_entry():
    from vllm_source.split_attention import split_backends

    assert set(split_backends(MINOR)) <= set(HEAD_SIZE_FROM[MINOR])


# --- vLLM's own selection for a split engine on a GPU (issue 61, finding 1) ---------------------------
# The selection runs on this CPU build with the device capability simulated (tests/split_backend_selection.py).

CAPABILITIES = [(9, 0), (8, 0)]  # H100/H200, A100


@pytest.mark.parametrize("capability", CAPABILITIES)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float32])  # a real run; gpu_check's fp32 comparisons
def test_vllm_gives_a_split_engine_on_a_gpu_the_backend_it_names_and_split_accepts_it(capability, dtype, scale_senior,
                                                                                       monkeypatch):
    from split_backend_selection import engine_config, selected_backend, split_engine_args

    from vllm_source.compat import SPLIT_DEFAULT_BACKEND, tandem_runner
    from vllm_source.split_attention import check_split_backend

    kwargs = split_engine_args(monkeypatch, str(scale_senior), tandem_runner(), max_model_len=512)
    assert kwargs["attention_backend"] == SPLIT_DEFAULT_BACKEND
    got = selected_backend(engine_config(kwargs), capability, dtype)
    assert got == SPLIT_DEFAULT_BACKEND
    check_split_backend(MINOR, got, capability[0])  # what each split worker checks before weights load


@pytest.mark.parametrize("capability", CAPABILITIES)
def test_left_to_itself_vllm_would_pick_flash_attn_which_split_refuses_on_0_28(capability):
    from split_backend_selection import first_choice

    from tandem.errors import TandemError
    from vllm_source.split_attention import check_split_backend

    assert first_choice(capability) == "FLASH_ATTN"
    if MINOR == "0.28":
        with pytest.raises(TandemError, match="FLASH_ATTN attention backend"):
            check_split_backend(MINOR, "FLASH_ATTN", capability[0])
