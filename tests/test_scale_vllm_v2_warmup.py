"""vLLM's own warm-up and profiling passes, driven through a V2 tandem engine on CPU.

A CUDA worker runs paths the CPU lane's engine never takes on its own, each with requests
that carry no tandem key and never pass `validate_params`:

- `warmup_kernels` (`vllm/v1/worker/gpu/warmup.py`), run by the GPU worker before serving
  (JIT warm-up, on by default): prefill and decode steps of requests sampled with
  `SamplingParams.for_sampler_warmup()`;
- the profiling run (`GPUModelRunner.profile_run`: a dummy forward, then the sampler on
  dummy slots) and vLLM 0.33's extra pass of it, which adds the warm-up params to every
  dummy slot and samples again (`_dummy_sampler_run` in 0.33.0; written out below,
  as 0.32 lacks it).

The first test drives both through the module's fresh engine in a CUDA worker's order
(profiling, then warm-up; `LLM.collective_rpc` with a function: the engine runs in this
process), then checks that the processor saw their rows, kept no state for them, and that the
engine still decodes tandem requests equal to the reference engine. (Both run before any
request is served, as on a GPU: after one, its slot stays held until the next step and its
state stays claimed, which neither pass expects.)
Two of vLLM's kernels that those passes reach do not run under Triton's CPU interpreter and
are left out, neither of them tandem code: the grammar-bitmask kernel (the warm-up's
structured-output bitmask is dropped) and the Triton top-k/top-p kernel (vLLM's PyTorch
top-k/top-p runs instead, as it does wherever Triton is missing).
Before requests without a key were solo, the warm-up died with "tandem request without a
valid extra_args['tandem_request_key']". The same engine then shows what admission still
refuses: a user's request without a key, and penalties on a tandem request (V2 applies them
before the tandem processor). Runs in the V2 lane (`bash scripts/test_scale.sh --v2`).
"""

from __future__ import annotations

import gc

import numpy as np
import pytest

vllm = pytest.importorskip("vllm", reason="vLLM is not installed; the V2 lane (bash scripts/test_scale.sh --v2) runs this")
pytestmark = pytest.mark.vllm

import torch  # noqa: E402

# The engine file's skips (not V2, no device), fixtures and helpers: one pair, one reference.
from test_scale_vllm_v2_engine import (  # noqa: E402, F401
    LLM_KWARGS,
    cfg_for,
    in_process_engines_with_async_scheduling,
    prompts,
    reference,
    tokenizer,
    tokens_and_masks,
    v2_junior,
    v2_senior,
    KEYS,
    GREEDY,
)
from tandem.errors import TandemError  # noqa: E402
from vllm_source.engine import VLLMEngine  # noqa: E402
from vllm_source.handoff import SLOT  # noqa: E402
from vllm_source.logits_processor_v2 import TandemLogitsProcessorV2  # noqa: E402

STRATEGY = "word"


@pytest.fixture(scope="module")
def engine(v2_senior, v2_junior):
    """One compiled V2 engine (enforce_eager=False: the CPU build compiles with TorchDynamo) for the module."""
    eng = VLLMEngine(str(v2_senior), cfg_for(STRATEGY, v2_junior), enforce_eager=False, **LLM_KWARGS)
    yield eng
    del eng
    gc.collect()


@pytest.fixture
def pytorch_top_k_top_p(monkeypatch):
    """vLLM's PyTorch top-k/top-p: its Triton kernel indexes rows with `.to` on a loop counter, which the
    interpreter hands over as a Python int (vllm/v1/sample/ops/topk_topp_triton.py)."""
    from vllm.v1.sample.ops import topk_topp_sampler

    monkeypatch.setattr(topk_topp_sampler, "HAS_TRITON", False)


@pytest.fixture(scope="module")
def expected(v2_senior, v2_junior, tokenizer, prompts):
    return tokens_and_masks(reference(v2_senior, v2_junior, cfg_for(STRATEGY, v2_junior), tokenizer, prompts))


def tandem_processor(worker) -> TandemLogitsProcessorV2:
    (proc,) = [p for p in worker.model_runner.sampler.logits_processors if isinstance(p, TandemLogitsProcessorV2)]
    return proc


def processor_state(worker) -> dict:
    """What the tandem processor holds: slots it tracks as tandem requests, and requests it started."""
    state = tandem_processor(worker).state
    return {"tandem_slots": int((~state.solo).sum()), "started": state.started}


def counting_applies(proc) -> list:
    """Record the rows of each `apply` call on this instance (`del proc.apply` restores the class's)."""
    calls: list = []
    original = proc.apply

    def apply(logits, ctx):
        calls.append(len(ctx.idx_mapping_np))
        return original(logits, ctx)

    proc.apply = apply
    return calls


def run_profiling(worker, rows: int = 4) -> dict:
    """vLLM's profiling run, then 0.33's second sampling pass over dummy slots holding the warm-up params."""
    from vllm import SamplingParams
    from vllm.v1.worker.gpu.input_batch import InputBatch

    runner = worker.model_runner
    runner.profile_run()
    _, hidden = runner._dummy_run(rows)
    logits = runner.model.compute_logits(hidden)  # the pair leaves no junior logits behind in a dummy run
    for slot in range(rows):
        runner.sampler.add_request(slot, SamplingParams.for_sampler_warmup())
    runner.sampler.apply_staged_writes()
    return {"sampled": runner.sampler(logits, InputBatch.make_dummy(rows, rows, runner.input_buffers))
            .sampled_token_ids.shape[0]}


def run_warmup_kernels(worker) -> dict:
    """vLLM's JIT warm-up, as `gpu_worker.compile_or_warm_up_model` calls it on a CUDA worker."""
    from vllm.v1.worker.gpu.warmup import warmup_kernels

    # The grammar bitmask's int32 store mask is refused by Triton's interpreter: sampled without it.
    warmup_kernels(worker.model_runner, worker.execute_model, lambda grammar_output: worker.sample_tokens(None))
    return {}


def run_startup_passes(worker) -> dict:
    """What a CUDA worker runs before it serves, in its order: profiling (determine_available_memory),
    then the kernel warm-up (compile_or_warm_up_model); with the rows of each `apply` call recorded."""
    proc = tandem_processor(worker)
    before, calls = processor_state(worker), counting_applies(proc)
    try:
        profiled = run_profiling(worker)
        applies_in_profiling = list(calls)
        run_warmup_kernels(worker)
    finally:
        del proc.apply  # the class's method again
    return {"before": before, "after": processor_state(worker), **profiled,
            "profiling_applies": applies_in_profiling, "warmup_applies": calls[len(applies_in_profiling):]}


def test_vllms_startup_passes_run_solo_and_tandem_decoding_is_unchanged(engine, prompts, expected,
                                                                         pytorch_top_k_top_p):
    """Profiling and kernel warm-up on the module's fresh engine, as before serving, then tandem requests."""
    (got,) = engine.llm.collective_rpc(run_startup_passes)
    assert got["sampled"] == 4 and got["profiling_applies"][-1] == 4, "0.33's pass must reach the processor"
    assert got["warmup_applies"], "the processor never saw the warm-up's rows: nothing was tested"
    assert got["after"] == got["before"], "vLLM's key-less requests must leave no tandem state"
    assert got["before"] == {"tandem_slots": 0, "started": 0}
    rollouts = engine.generate(prompts, GREEDY, KEYS[: len(prompts)])
    assert tokens_and_masks(rollouts) == expected


class _Ctx:
    """The fields of vLLM's `LogitsContext` the processor reads on a step without tandem rows."""

    def __init__(self, slots):
        self.idx_mapping_np = np.asarray(slots, dtype=np.intp)


def test_a_step_without_a_junior_row_leaves_the_seniors_logits_untouched(engine):
    """Key-less (vLLM's own) and solo slots: `apply` returns the senior's logits as they came, reads no
    token, and leaves no junior logits behind."""

    def step(worker):
        proc = tandem_processor(worker)
        proc.add_request(0, vllm.SamplingParams())  # vLLM's own request: no key
        proc.add_request(1, vllm.SamplingParams(extra_args={"tandem_solo": True}))
        logits = torch.randn(2, 16)
        want = logits.clone()
        SLOT.put(torch.zeros(2, 16))  # what a dummy forward may leave
        got = proc.apply(logits, _Ctx([0, 1]))
        return {"same": got is logits and torch.equal(got, want), "slot_empty": SLOT._logits is None}

    (got,) = engine.llm.collective_rpc(step)
    assert got == {"same": True, "slot_empty": True}


def test_a_user_request_without_a_key_is_still_refused_in_one_line(engine, prompts):
    params = vllm.SamplingParams(max_tokens=2)
    with pytest.raises(TandemError) as err:
        engine.llm.generate([{"prompt_token_ids": prompts[0]}], params, use_tqdm=False)
    assert "tandem_request_key" in str(err.value) and "\n" not in str(err.value)


def test_penalties_on_a_tandem_request_are_refused_at_admission_and_kept_solo(engine, prompts):
    keyed = vllm.SamplingParams(max_tokens=2, repetition_penalty=1.3, extra_args={"tandem_request_key": 5})
    with pytest.raises(TandemError) as err:
        engine.llm.generate([{"prompt_token_ids": prompts[0]}], keyed, use_tqdm=False)
    assert str(err.value).startswith("repetition_penalty=1.3: vLLM's V2 model runner applies penalties")
    assert "\n" not in str(err.value)
    solo = vllm.SamplingParams(max_tokens=2, repetition_penalty=1.3, extra_args={"tandem_solo": True})
    (out,) = engine.llm.generate([{"prompt_token_ids": prompts[0]}], solo, use_tqdm=False)
    assert len(out.outputs[0].token_ids) == 2  # the senior writes every token: its penalised logits are right


# The module's engine first: freeing the second in-process engine tears down the process's parallel groups,
# which the module's engine still needs. This test stays the module's last.
@pytest.mark.parametrize("prefix_caching", [True, False])
def test_a_step_of_solo_requests_skips_the_juniors_trunk_unless_prefix_caching_may_reuse_its_cache(
        prefix_caching, engine, prompts, expected, v2_senior, v2_junior, tokenizer):
    """V2 knows a step's rows only in the sampler; the pair decides before the forward from each slot's latest
    request (`TandemSlotState.all_solo`). Counted on the junior module: after a tandem batch, a solo batch never
    calls it on a fresh eager engine without prefix caching, and always on the module's engine, which has vLLM's
    default prefix caching (a later tandem request may reuse those blocks); both decode as the reference does."""
    from tandem.reference.engine import TandemEngine
    from tandem.models.loading import load_model

    def count_junior(worker):
        model = worker.model_runner.model
        model._junior_calls = 0

        def hook(*_):
            model._junior_calls += 1

        model._junior_hook = model.junior.register_forward_hook(hook)
        return {}

    def calls_and_stop(worker):
        model = worker.model_runner.model
        model._junior_hook.remove()
        return model._junior_calls

    eng = engine if prefix_caching else VLLMEngine(str(v2_senior), cfg_for(STRATEGY, v2_junior),
                                                   enable_prefix_caching=False, **LLM_KWARGS)

    def junior_calls_during(generate):
        eng.llm.collective_rpc(count_junior)
        try:
            out = generate()
        finally:
            (calls,) = eng.llm.collective_rpc(calls_and_stop)
        return out, calls

    keys = KEYS[: len(prompts)]
    try:
        (may_skip,) = eng.llm.collective_rpc(lambda worker: worker.model_runner.model._may_skip_junior_trunk)
        assert may_skip is not prefix_caching  # the engine's own setting, not the test's assumption
        tandem, tandem_calls = junior_calls_during(lambda: eng.generate(prompts, GREEDY, keys))
        # vLLM hands out the freed slots first (a stack), so the solo batch's first step reuses every slot
        # a tandem request held: from then on each step is all solo.
        solo, solo_calls = junior_calls_during(lambda: eng.generate(prompts * 4, GREEDY, keys * 4, solo=True))
    finally:
        if eng is not engine:
            del eng
            gc.collect()
    assert tandem_calls > 0 and (solo_calls > 0) == prefix_caching, (tandem_calls, solo_calls)
    assert tokens_and_masks(tandem) == expected
    senior = TandemEngine(load_model(str(v2_senior), "float32", "cpu"), None, tokenizer, cfg_for(STRATEGY, v2_junior))
    want = senior.generate(prompts * 4, GREEDY, keys * 4, solo=True)
    assert [r.token_ids for r in solo] == [r.token_ids for r in want]
