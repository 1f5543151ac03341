"""The split placement (senior on tensor-parallel rank 0, junior on rank 1), run for real.

Scale lane (vLLM's CPU build runs tensor parallelism across processes; on CUDA it needs two
GPUs). Under greedy decoding in float32 a split engine must emit the reference engine's
tokens and authorship masks exactly, for every selection strategy, with a smaller junior of
another shape and other weights, and several samples per prompt; with a junior of the
senior's shape (other weights) for the paper's `word` strategy; solo requests equal the
senior alone; the log-probabilities mean what vllm_source/README.md says (raw: the senior's
of every emitted token; processed: the author's), checked against teacher-forced HF models;
refusals are those of the shared engine, and bad split settings fail before any engine starts.

Each split engine costs about 30 s here (two worker processes), so the strategy sweep runs once,
with the smaller junior: the strategies' code is the same for any junior, and the smaller one
also differs in every attention dimension. The same-shape junior keeps the paper's strategy.
"""

from __future__ import annotations

import gc
import os

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytestmark = pytest.mark.vllm

import torch  # noqa: E402

from tandem.process.coins import request_key  # noqa: E402
from tandem.process.config import TandemConfig  # noqa: E402
from tandem.reference.engine import TandemEngine  # noqa: E402
from tandem.errors import TandemError  # noqa: E402
from tandem.models.loading import load_model, load_tokenizer  # noqa: E402
from tandem.rollout.sampling import SamplingConfig  # noqa: E402
from tandem_app.task import generate_problems  # noqa: E402
from tandem_app.train.data import prompt_ids_batch  # noqa: E402
from tandem_app.train.tiny_base import SMOKE_TASK  # noqa: E402
from tandem.process.strategies import REGISTRY  # noqa: E402
from vllm_source.compat import validation_error_type  # noqa: E402
from vllm_source.engine import VLLMEngine  # noqa: E402
from vllm_source.placement import check_split_devices  # noqa: E402
from vllm_source.runtime import vllm_platform  # noqa: E402

if vllm_platform() == "unspecified":
    pytest.skip("this vLLM found no device (a CUDA build without a GPU)", allow_module_level=True)
if vllm_platform() != "cpu" and torch.cuda.device_count() < 2:
    pytest.skip("placement='split' needs two GPUs", allow_module_level=True)

MAX_NEW = 40
SAMPLES = 2
PROMPT_IDS = ["p0", "p1", "p2"]
STRATEGIES = {  # this file's settings of each registered strategy (tandem/process/strategies.py)
    "word": dict(prob_senior=0.5, max_gap_tokens=4),
    "bernoulli": dict(prob_senior=0.5),
    "sentence": dict(first_author="senior"),
    "step": dict(first_author="senior"),
    "alternating": dict(first_author="junior"),
    "chunk": dict(chunk_size=3),
}
DEVICE = "cpu" if vllm_platform() == "cpu" else "cuda"
LLM_KWARGS = dict(dtype="float32", max_model_len=512, seed=0)
if DEVICE == "cuda":
    LLM_KWARGS["gpu_memory_utilization"] = 0.3
GREEDY = SamplingConfig(temperature=0.0, max_new_tokens=MAX_NEW)
KEYS = [request_key(pid, s) for pid in PROMPT_IDS for s in range(SAMPLES)]
LOGPROB_TOL = 1e-3  # float32 vLLM kernels vs HF eager, per token (senior vs junior differ by far more)


@pytest.fixture(scope="module", autouse=True)
def kv_space():
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLLM_CPU_KVCACHE_SPACE", os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"))
        yield


@pytest.fixture(scope="module")
def tokenizer(scale_senior):
    return load_tokenizer(scale_senior)


@pytest.fixture(scope="module")
def prompts(tokenizer) -> list[list[int]]:
    problems = sorted(generate_problems("test", 24, 0, SMOKE_TASK), key=lambda p: len(p.prompt))
    ids = prompt_ids_batch(tokenizer, [problems[0], problems[len(problems) // 2], problems[-1]])
    assert len({len(p) for p in ids}) == 3
    return ids


def rows(prompts) -> list[list[int]]:
    return [p for p in prompts for _ in range(SAMPLES)]


def cfg_for(strategy: str, junior) -> TandemConfig:
    return TandemConfig(selection_strategy=strategy, junior_model=str(junior), placement="split",
                        **STRATEGIES.get(strategy, {}))


class Engines:
    """One split engine alive at a time (each holds two worker processes), reused while its config holds."""

    def __init__(self):
        self.key, self.engine = None, None

    def get(self, senior, cfg: TandemConfig, **kwargs) -> VLLMEngine:
        key = (repr(cfg), cfg.junior_model, tuple(sorted(kwargs.items())))
        if key != self.key:
            self.close()
            self.engine = VLLMEngine(str(senior), cfg, **LLM_KWARGS, **kwargs)
            self.key = key
        return self.engine

    def close(self):
        self.key, self.engine = None, None
        gc.collect()


@pytest.fixture(scope="module")
def engines():
    e = Engines()
    yield e
    e.close()


def reference(senior_dir, junior_dir, cfg, tokenizer, prompts, solo=False):
    senior = load_model(senior_dir, "float32", DEVICE)
    junior = None if solo else load_model(junior_dir, "float32", DEVICE)
    return TandemEngine(senior, junior, tokenizer, cfg).generate(rows(prompts), GREEDY, KEYS, solo=solo)


def teacher_forced(model_dir, prompt: list[int], tokens: list[int]) -> list[float]:
    """log p(token_t | prompt, tokens_<t) under an HF model, temperature 1."""
    model = load_model(model_dir, "float32", DEVICE)
    with torch.no_grad():
        logits = model(torch.tensor([prompt + tokens], device=DEVICE)).logits[0].float()
    logp = torch.log_softmax(logits[len(prompt) - 1 : -1], dim=-1)
    return logp.gather(1, torch.tensor(tokens, device=DEVICE)[:, None])[:, 0].tolist()


def test_split_greedy_tokens_and_masks_equal_the_reference_engine(engines, scale_senior, scale_junior, tokenizer,
                                                                   prompts):
    """A junior of the senior's shape and other weights, the paper's strategy; its engine serves the tests below."""
    got = assert_split_equals_the_reference(engines, scale_senior, scale_junior, "word", tokenizer, prompts)
    assert_samples_draw_their_own_coins(got)


def assert_samples_draw_their_own_coins(got) -> None:
    """Several samples of one prompt: each its own key, so its own coins and its own authorship mask."""
    assert any(got[i].authorship_mask != got[i + 1].authorship_mask for i in range(0, len(got), SAMPLES))


def assert_split_equals_the_reference(engines, senior, junior, strategy, tokenizer, prompts):
    """Greedy: the split engine's tokens and masks are the reference engine's, and both authors wrote."""
    cfg = cfg_for(strategy, junior)
    want = reference(senior, junior, cfg, tokenizer, prompts)
    got = engines.get(senior, cfg).generate(rows(prompts), GREEDY, KEYS)
    assert [g.token_ids for g in got] == [w.token_ids for w in want]
    assert [g.authorship_mask for g in got] == [w.authorship_mask for w in want]
    masks = [m for g in got for m in g.authorship_mask]
    assert 0 < sum(masks) < len(masks), "both authors must write for the comparison to mean anything"
    return got


def test_split_solo_requests_equal_the_senior_alone(engines, scale_senior, scale_junior, tokenizer, prompts):
    cfg = cfg_for("word", scale_junior)
    want = reference(scale_senior, None, cfg, tokenizer, prompts, solo=True)
    got = engines.get(scale_senior, cfg).generate(rows(prompts), GREEDY, KEYS, solo=True)
    assert [g.token_ids for g in got] == [w.token_ids for w in want]
    assert all(set(g.authorship_mask) == {1} for g in got)


def test_split_raw_logprobs_are_the_seniors_of_every_emitted_token(engines, scale_senior, scale_junior, prompts):
    got = engines.get(scale_senior, cfg_for("word", scale_junior)).generate(rows(prompts), GREEDY, KEYS)
    for r in got[::SAMPLES]:
        assert 0 < sum(r.authorship_mask) < len(r.authorship_mask)
        want = teacher_forced(scale_senior, r.prompt_ids, r.token_ids)
        assert max(abs(a - b) for a, b in zip(r.senior_logprobs, want, strict=True)) < LOGPROB_TOL


def test_split_refuses_what_the_shared_engine_refuses(engines, scale_senior, scale_junior):
    import vllm

    llm = engines.get(scale_senior, cfg_for("word", scale_junior)).llm
    with pytest.raises(validation_error_type(), match="tandem_request_key") as err:
        llm.generate([{"prompt_token_ids": [1, 2, 3]}], vllm.SamplingParams(max_tokens=4), use_tqdm=False)
    assert isinstance(err.value, TandemError)
    params = vllm.SamplingParams(max_tokens=4, n=2, extra_args={"tandem_request_key": 7})
    with pytest.raises(validation_error_type(), match="n=1"):
        llm.generate([{"prompt_token_ids": [1, 2, 3]}], params, use_tqdm=False)


def assert_processed_logprobs_are_the_authors(engines, senior_dir, junior_dir, prompts):
    """Sampled tokens: each reported log-prob is its author's, teacher-forced (processed_logprobs)."""
    engine = engines.get(senior_dir, cfg_for("word", junior_dir), logprobs_mode="processed_logprobs")
    sampled = SamplingConfig(temperature=1.0, top_p=1.0, max_new_tokens=MAX_NEW, seed=3)
    checked = 0
    for r in engine.generate(prompts, sampled, KEYS[: len(prompts)]):
        senior = teacher_forced(senior_dir, r.prompt_ids, r.token_ids)
        junior = teacher_forced(junior_dir, r.prompt_ids, r.token_ids)
        want = [s if m else j for s, j, m in zip(senior, junior, r.authorship_mask, strict=True)]
        assert max(abs(a - b) for a, b in zip(r.senior_logprobs, want, strict=True)) < LOGPROB_TOL
        # The two models disagree on junior tokens, so this checks whose log-prob came back.
        checked += sum(abs(s - j) > 10 * LOGPROB_TOL for s, j, m in zip(senior, junior, r.authorship_mask) if not m)
    assert checked > 0


@pytest.mark.parametrize("kwargs, match", [
    (dict(tensor_parallel_size=1), "tensor_parallel_size must be 2"),
    (dict(tensor_parallel_size=4), "tensor_parallel_size must be 2"),
    (dict(pipeline_parallel_size=2), "pipeline parallelism"),
])
def test_bad_split_settings_fail_before_any_engine_starts(kwargs, match, scale_senior, scale_junior):
    with pytest.raises(TandemError, match=match):
        VLLMEngine(str(scale_senior), cfg_for("word", scale_junior), **LLM_KWARGS, **kwargs)


def test_split_refuses_a_junior_with_another_vocabulary(scale_senior, tmp_path):
    from tandem_app.zoo import TinyModelConfig, build_tiny

    other = build_tiny(tmp_path / "other-vocab", seed=2, cfg=TinyModelConfig(vocab_size=384))
    with pytest.raises(TandemError, match="vocab"):
        VLLMEngine(str(scale_senior), TandemConfig(junior_model=str(other), placement="split"), **LLM_KWARGS)


def test_split_on_a_single_gpu_and_unknown_placements_are_refused():
    with pytest.raises(TandemError, match="needs 2 GPUs"):
        check_split_devices(1)
    check_split_devices(2)
    with pytest.raises(TandemError, match="placement"):
        TandemConfig(placement="junior_gpu")


# --- a junior of another size: each rank plans attention for its own model ----------------------


@pytest.mark.parametrize("strategy", sorted(REGISTRY))
def test_split_with_a_smaller_junior_equals_the_reference_engine(
    strategy, engines, scale_senior, scale_small_junior, tokenizer, prompts
):
    """Other depth, width, query heads and KV heads (tandem_app.zoo.SMALL_SHAPE), one vocabulary: same tokens and masks."""
    got = assert_split_equals_the_reference(engines, scale_senior, scale_small_junior, strategy, tokenizer, prompts)
    if cfg_for(strategy, scale_small_junior).uses_coins:
        assert_samples_draw_their_own_coins(got)


def test_split_with_a_smaller_junior_reports_the_authors_logprobs(engines, scale_senior, scale_small_junior, prompts):
    """processed_logprobs: each sampled token's log-prob is its author's (the junior's from rank 1)."""
    assert_processed_logprobs_are_the_authors(engines, scale_senior, scale_small_junior, prompts)


def test_shared_refuses_a_smaller_junior_and_points_at_split(scale_senior, scale_small_junior):
    cfg = TandemConfig(junior_model=str(scale_small_junior), placement="shared")
    with pytest.raises(TandemError, match=r"num_attention_heads=2, the senior 4; .* use placement='split'"):
        VLLMEngine(str(scale_senior), cfg, **LLM_KWARGS)


def test_an_engine_longer_than_the_juniors_context_is_refused_before_it_starts(scale_senior, scale_small_junior):
    with pytest.raises(TandemError, match=r"has a context of 1024 tokens but the engine's max_model_len is 2048"):
        VLLMEngine(str(scale_senior), cfg_for("word", scale_small_junior), **{**LLM_KWARGS, "max_model_len": 2048})
