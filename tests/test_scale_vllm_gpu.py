"""The vLLM backend end to end on a GPU, against the reference engine (`tandem.engine`).

Skipped without CUDA or vLLM. NOT run in this project yet (no GPU was available when it
was written); see model_spec/SCALE.md. With greedy decoding in float32, the vLLM
tandem engine must emit the reference engine's tokens and authorship masks exactly:
that checks the dual decoder (both KV caches complete), the per-row author choice, the
request keys and the coin replay in one go.

The engine core runs in-process (VLLM_ENABLE_V1_MULTIPROCESSING=0) so that registering
TandemForCausalLM in this process suffices; multi-process engines need the
`vllm.general_plugins` entry point (vllm_source/plugin.py).
"""

from __future__ import annotations

import gc

import pytest
import torch

pytest.importorskip("vllm", reason="vLLM is not installed (pip install tandem-rlvr[vllm])")
pytestmark = [
    pytest.mark.vllm,
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available(), reason="the vLLM backend needs CUDA"),
]

from tandem.config import TandemConfig  # noqa: E402
from tandem.engine import TandemEngine  # noqa: E402
from tandem.errors import TandemError  # noqa: E402
from tandem.models import load_model, load_tokenizer  # noqa: E402
from tandem.process import request_key  # noqa: E402
from tandem.sampling import SamplingConfig  # noqa: E402
from vllm_source.engine import generate, make_llm  # noqa: E402

MAX_NEW = 24
PROMPT_IDS = ["p0", "p1", "p2"]


@pytest.fixture(autouse=True)
def in_process_engine(monkeypatch):
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")


def prompts(tokenizer) -> list[list[int]]:
    texts = ["Tom has 3 apples and buys 4 more.", "What is 12 plus 30?", "A train leaves at noon and"]
    return [tokenizer(t, add_special_tokens=False)["input_ids"] for t in texts]


def reference(senior_dir, junior_dir, cfg, tokenizer, solo=False):
    senior = load_model(senior_dir, "float32", "cuda")
    junior = None if solo else load_model(junior_dir, "float32", "cuda")
    engine = TandemEngine(senior, junior, tokenizer, cfg)
    sampling = SamplingConfig(temperature=0.0, max_new_tokens=MAX_NEW, eos_token_ids=())
    keys = [request_key(pid, 0) for pid in PROMPT_IDS]
    return engine.generate(prompts(tokenizer), sampling, request_keys=keys, solo=solo)


def vllm_run(senior_dir, cfg, tokenizer, solo=False):
    llm = make_llm(cfg, str(senior_dir), dtype="float32", gpu_memory_utilization=0.3, max_model_len=512)
    try:
        out = generate(llm, cfg, prompts(tokenizer), PROMPT_IDS, solo=solo,
                       temperature=0.0, max_tokens=MAX_NEW, ignore_eos=True)
        return [row[0] for row in out]
    finally:
        del llm
        gc.collect()
        torch.cuda.empty_cache()


@pytest.mark.parametrize("prob_senior", [0.0, 0.5, 1.0])
def test_vllm_greedy_tokens_and_masks_equal_the_reference_engine(tiny_dir, tiny_dir_seed1, prob_senior):
    cfg = TandemConfig(prob_senior=prob_senior, max_gap_tokens=4, junior_model=str(tiny_dir_seed1))
    tokenizer = load_tokenizer(tiny_dir)
    want = reference(tiny_dir, tiny_dir_seed1, cfg, tokenizer)
    got = vllm_run(tiny_dir, cfg, tokenizer)
    for w, g in zip(want, got, strict=True):
        assert g.token_ids == w.token_ids
        assert g.authorship_mask == w.authorship_mask


def test_vllm_solo_requests_equal_the_senior_alone(tiny_dir, tiny_dir_seed1):
    cfg = TandemConfig(prob_senior=0.0, junior_model=str(tiny_dir_seed1))  # solo must ignore the coins
    tokenizer = load_tokenizer(tiny_dir)
    want = reference(tiny_dir, None, cfg, tokenizer, solo=True)
    got = vllm_run(tiny_dir, cfg, tokenizer, solo=True)
    assert [g.token_ids for g in got] == [w.token_ids for w in want]
    assert all(set(g.authorship_mask) == {1} for g in got)


def test_vllm_refuses_a_request_without_a_key(tiny_dir, tiny_dir_seed1):
    import vllm

    cfg = TandemConfig(junior_model=str(tiny_dir_seed1))
    llm = make_llm(cfg, str(tiny_dir), dtype="float32", gpu_memory_utilization=0.3, max_model_len=512)
    try:
        with pytest.raises(ValueError, match="tandem_request_key"):
            llm.generate([{"prompt_token_ids": [1, 2, 3]}], vllm.SamplingParams(max_tokens=4))
    finally:
        del llm
        gc.collect()
        torch.cuda.empty_cache()


def test_vllm_refuses_a_junior_with_another_vocabulary(tiny_dir, tmp_path):
    from tandem.zoo import TinyModelConfig, build_tiny

    other = build_tiny(tmp_path / "other-vocab", seed=2, cfg=TinyModelConfig(vocab_size=384))
    cfg = TandemConfig(junior_model=str(other))
    with pytest.raises((TandemError, RuntimeError), match="vocab"):
        make_llm(cfg, str(tiny_dir), dtype="float32", gpu_memory_utilization=0.3, max_model_len=512)

