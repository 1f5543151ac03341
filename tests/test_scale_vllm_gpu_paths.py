"""GPU-path defects of the vLLM backend checked with vLLM itself (issue 15; scale lane).

- `tandem_parts` reaches inside vLLM's CUDAGraphWrapper (a stand-in with the installed
  wrapper's attribute semantics) and the junior's trunk compiles under its own tag;
- vLLM's V2 model runner is refused (it runs no custom logits processors);
- the real `TandemLogitsProcessor` under the async-scheduling sequence of vLLM's GPU
  runner (`tests/runner_replay.py`: placeholders, SWAP moves, preemption, chunked
  prefill, cut-back tokens), with the junior's logits handed over through the slot.
"""

from __future__ import annotations

import random
from types import SimpleNamespace as NS

import pytest
import torch

pytest.importorskip("vllm", reason="vLLM is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytestmark = pytest.mark.vllm

from runner_replay import Req, RunnerReplay, run_random_schedule  # noqa: E402
from tandem.process.boundaries import boundary_lookup  # noqa: E402
from tandem.process.coins import request_key  # noqa: E402
from tandem.process.config import TandemConfig  # noqa: E402
from tandem.errors import TandemError  # noqa: E402
from tandem.process.authorship import replay_mask  # noqa: E402
from vllm_source.handoff import SLOT  # noqa: E402
from vllm_source.requests import tandem_extra_args  # noqa: E402

VOCAB = 40
BOUNDARY_IDS = list(range(0, VOCAB, 3))


class CUDAGraphWrapperStandIn:
    """vLLM's CUDAGraphWrapper as verl's patch sees it: `runnable`, `unwrap()`, attributes forwarded."""

    def __init__(self, runnable):
        self.runnable = runnable

    def __getattr__(self, key):
        if hasattr(self.runnable, key):
            return getattr(self.runnable, key)
        raise AttributeError

    def unwrap(self):
        return self.runnable


def test_the_stand_in_has_the_installed_cuda_graph_wrappers_semantics():
    from vllm.compilation.cuda_graph import CUDAGraphWrapper

    assert callable(getattr(CUDAGraphWrapper, "unwrap", None))
    assert "__getattr__" in CUDAGraphWrapper.__dict__  # forwards attributes: `senior` reads through it


def test_tandem_parts_reaches_inside_a_cuda_graph_wrapper(monkeypatch):
    from verl.workers.rollout.vllm_rollout import utils as vllm_worker_utils

    from tandem_verl import vllm_worker as verl_vllm_worker

    TandemForCausalLM = type("TandemForCausalLM", (), {})
    model = TandemForCausalLM()
    model.senior, model.junior = object(), object()
    wrapped = CUDAGraphWrapperStandIn(CUDAGraphWrapperStandIn(model))
    assert verl_vllm_worker.tandem_parts(wrapped) == (model.senior, model.junior)
    plain = CUDAGraphWrapperStandIn(object())
    assert verl_vllm_worker.tandem_parts(plain) == (plain,)  # anything else goes to verl's patch as it came
    seen = []
    monkeypatch.setattr(vllm_worker_utils, "patch_vllm_moe_model_weight_loader",
                        verl_vllm_worker.patch_each_part(seen.append))
    vllm_worker_utils.patch_vllm_moe_model_weight_loader(wrapped)
    assert seen == [model.senior, model.junior]


def test_the_junior_trunk_is_built_under_its_own_compile_tag():
    from vllm.compilation import backends

    from vllm_source.pair_model import JUNIOR_COMPILE_TAG, junior_compile_tag

    before = backends.model_tag
    with junior_compile_tag():
        assert backends.model_tag == JUNIOR_COMPILE_TAG != before
    assert backends.model_tag == before


def test_the_v2_model_runner_is_refused_in_one_line():
    from vllm_source.pair_model import check_model_runner

    with pytest.raises(TandemError, match="VLLM_USE_V2_MODEL_RUNNER") as err:
        check_model_runner(NS(use_v2_model_runner=True), "0.28.0")
    assert "\n" not in str(err.value)
    check_model_runner(NS(use_v2_model_runner=False), "0.28.0")


def make_processor(cfg: TandemConfig, max_num_seqs: int = 16):
    from vllm_source.logits_processor import TandemLogitsProcessor

    model_config = NS(hf_config=NS(tandem=cfg.to_dict()), tokenizer=None, get_vocab_size=lambda: VOCAB,
                      trust_remote_code=False)
    vllm_config = NS(model_config=model_config, scheduler_config=NS(max_num_seqs=max_num_seqs))
    return TandemLogitsProcessor(vllm_config, torch.device("cpu"), is_pin_memory=False)


@pytest.mark.parametrize("strategy, extra", [("word", dict(prob_senior=0.5, max_gap_tokens=4)),
                                             ("sentence", dict(first_author="senior")),
                                             ("chunk", dict(chunk_size=3))])
@pytest.mark.parametrize("seed", [0, 1])
def test_the_processor_under_the_async_runner_sequence_picks_the_replayed_author(strategy, extra, seed):
    cfg = TandemConfig(selection_strategy=strategy, boundary_token_ids=BOUNDARY_IDS, seed=7, **extra)
    processor = make_processor(cfg)

    def on_forward(rows):  # what TandemForCausalLM.compute_logits leaves in the slot
        SLOT.put(torch.ones(rows, VOCAB))

    def authors_now():
        senior_logits = torch.zeros(len(sim.rows), VOCAB)
        out = processor.apply(senior_logits)
        return (out[:, 0] == 0).long().tolist()  # junior rows now hold the junior's logits (ones)

    sim = RunnerReplay(processor.update_state, authors_now, random.Random(seed), VOCAB, on_forward=on_forward)
    reqs = run_random_schedule(sim, lambda rid, prefill_steps=0: Req(
        rid, tandem_extra_args(request_key(rid, 0)), prefill_steps))
    boundary = boundary_lookup(BOUNDARY_IDS, VOCAB)
    checked = 0
    for req in reqs:
        if req.authors:
            tokens = req.tokens[: len(req.authors)]
            want = replay_mask(cfg, boundary, torch.tensor([tokens]), [request_key(req.rid, 0)])[0].tolist()
            assert req.authors == want, req.rid
            checked += 1
    assert checked >= 8 and sim.swaps > 0 and sim.resumes > 0 and sim.truncations > 0


# --- with a real engine (in-process, the lane's tiny bases) ---------------------------------


@pytest.fixture()
def in_process(monkeypatch):
    monkeypatch.setenv("VLLM_ENABLE_V1_MULTIPROCESSING", "0")


def test_tandem_model_refuses_the_v2_model_runner_before_building_anything():
    """vLLM 0.24 lets V2 run without custom logits processors; 0.28 refuses it itself (and needs Triton,
    which the CPU build lacks), so the model's own refusal is checked on the class, with the flag set."""
    from vllm.config import VllmConfig

    from vllm_source.model import TandemForCausalLM

    assert isinstance(VllmConfig.__dict__.get("use_v2_model_runner"), property)  # the flag the model reads
    with pytest.raises(TandemError, match="unset VLLM_USE_V2_MODEL_RUNNER"):
        TandemForCausalLM(vllm_config=NS(use_v2_model_runner=True))


def test_a_wiped_junior_is_restored_from_its_host_copy_at_the_next_weight_sync(
    in_process, scale_senior, scale_junior, monkeypatch
):
    """What a level-2 sleep does to the junior (its weights discarded), and what the next sync does about it."""
    import gc

    from tandem.rollout.sampling import SamplingConfig
    from vllm_source.engine import VLLMEngine

    monkeypatch.setenv("TANDEM_VLLM_CPU_LIVE_WEIGHTS", "1")  # the CPU build computes from the live weights
    cfg = TandemConfig(selection_strategy="word", prob_senior=0.5, max_gap_tokens=4, junior_model=str(scale_junior))
    engine = VLLMEngine(str(scale_senior), cfg, dtype="float32", max_model_len=256, seed=0)
    greedy = SamplingConfig(temperature=0.0, max_new_tokens=24)
    prompts, keys = [[1, 2, 3, 4, 5], [7, 8, 9]], [11, 12]

    def wipe_then_sync(model):
        for p in model.junior.parameters():
            p.data.fill_(0.5)
        model.load_weights(iter([]))  # a weight sync's bucket: senior names only (here none)

    try:
        want = engine.generate(prompts, greedy, keys)
        engine.llm.apply_model(lambda model: model.junior_guard.keep_host_copy())
        engine.llm.apply_model(wipe_then_sync)
        got = engine.generate(prompts, greedy, keys)
        engine.llm.apply_model(lambda model: setattr(model.junior_guard, "_host", None))
        with pytest.raises(Exception, match="no host copy"):
            engine.llm.apply_model(wipe_then_sync)
    finally:
        del engine
        gc.collect()
    assert [r.token_ids for r in got] == [r.token_ids for r in want]
    assert [r.authorship_mask for r in got] == [r.authorship_mask for r in want]
    assert 0 < sum(sum(r.authorship_mask) for r in want) < sum(len(r.token_ids) for r in want)
