"""GPU-path defects of the vLLM backend that the CPU can check without vLLM (issue 15).

- the runner's async-scheduling sequence (placeholders, SWAP reordering, preemption with
  rebuilt token lists, chunked prefill, cut-back tokens) replayed against the batch state;
- `merge_junior_rows` with masked ops only (no `.nonzero()` host sync);
- the junior fingerprint without a float32 copy of a whole tensor, and a clear error on
  the meta device;
- `check_pair` refusing every attention-geometry difference;
- the handoff slot: nothing kept from dummy runs, all-solo steps need no junior logits.
"""

from __future__ import annotations

import random
from types import SimpleNamespace as NS

import pytest
import torch
from torch.utils._python_dispatch import TorchDispatchMode

from runner_replay import RunnerReplay, Req, run_random_schedule
from tandem.process.boundaries import boundary_lookup
from tandem.process.coins import request_key
from tandem.process.config import TandemConfig
from tandem.errors import TandemError
from tandem.process.authorship import replay_mask
from vllm_source.batch_state import TandemBatchState
from vllm_source.handoff import ALL_SENIOR, JuniorLogitsSlot, merge_junior_rows
from vllm_source.pairing import check_pair
from vllm_source.requests import tandem_extra_args
from vllm_source.weights import FINGERPRINT_CHUNK, tensor_sums

VOCAB = 40
BOUNDARY = boundary_lookup(list(range(0, VOCAB, 3)), VOCAB)
CFG = TandemConfig(selection_strategy="word", prob_senior=0.5, max_gap_tokens=4, seed=7)


def make_req(rid: str, prefill_steps: int = 0, solo: bool = False) -> Req:
    return Req(rid, tandem_extra_args(request_key(rid, 0), solo=solo), prefill_steps)


def batch_state_driver(state: TandemBatchState):
    """What TandemLogitsProcessor.apply does with the state (vLLM-free)."""

    def authors_now():
        state.catch_up()
        assert state.pending_placeholders() == []
        return state.senior_rows().tolist()

    return state.update, authors_now


def assert_authors_replay(reqs: list[Req]) -> int:
    checked = 0
    for req in reqs:
        if not req.authors:
            continue
        tokens = req.tokens[: len(req.authors)]
        want = replay_mask(CFG, BOUNDARY, torch.tensor([tokens]), [request_key(req.rid, 0)])[0].tolist()
        assert req.authors == want, req.rid
        checked += 1
    return checked


@pytest.mark.parametrize("seed", [0, 1, 2, 3])
def test_async_runner_sequence_replays_the_authors_exactly(seed):
    state = TandemBatchState(CFG, BOUNDARY, max_num_reqs=16)
    sim = RunnerReplay(*batch_state_driver(state), random.Random(seed), VOCAB)
    reqs = run_random_schedule(sim, make_req)
    assert assert_authors_replay(reqs) >= 8
    assert sim.swaps > 0 and sim.resumes > 0  # the schedule exercised SWAP moves and resumed requests


def test_tokens_cut_back_by_the_runner_are_replayed_from_the_start():
    """A KV-load failure cuts output_token_ids; the state must follow the tokens actually kept."""
    state = TandemBatchState(CFG, BOUNDARY, max_num_reqs=4)
    sim = RunnerReplay(*batch_state_driver(state), random.Random(5), VOCAB)
    req = make_req("cut")
    sim.step([req])
    for _ in range(12):
        sim.step([])
    sim.step([], cut=True)
    for _ in range(12):
        sim.step([])
    sim.finish()
    assert sim.truncations == 1
    assert assert_authors_replay([req]) == 1


def test_a_step_whose_rows_are_all_solo_is_reported_to_the_model():
    state = TandemBatchState(CFG, BOUNDARY, max_num_reqs=4)
    slot = JuniorLogitsSlot()
    seen = []
    sim = RunnerReplay(*batch_state_driver(state), random.Random(0), VOCAB,
                       on_forward=lambda rows: seen.append((slot.live_rows(), slot.all_solo())))
    assert slot.live_rows() == 0 and not slot.all_solo()  # before attach: a dummy run
    slot.attach(state)
    assert slot.live_rows() == 0 and not slot.all_solo()  # attached, no rows yet: still a dummy run
    sim.step([make_req("a", solo=True), make_req("b", solo=True)])
    sim.step([make_req("c")])
    assert seen == [(2, True), (3, False)]


def test_merge_junior_rows_takes_junior_rows_keeps_masks_and_never_syncs():
    logits = torch.tensor([[1.0, 2.0, float("-inf")], [3.0, float("-inf"), 4.0], [5.0, 6.0, 7.0]])
    junior = torch.tensor([[9.0, 9.0, 9.0], [7.0, 8.0, 6.0], [1.0, 1.0, 1.0]], dtype=torch.bfloat16)
    senior_rows = torch.tensor([True, False, False])
    want = torch.tensor([[1.0, 2.0, float("-inf")], [7.0, float("-inf"), 6.0], [1.0, 1.0, 1.0]])

    class NoHostSync(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = func.overloadpacket.__name__
            assert name not in {"nonzero", "item", "_local_scalar_dense", "masked_select", "index"}, name
            return func(*args, **(kwargs or {}))

    with NoHostSync():
        out = merge_junior_rows(logits.clone(), junior, senior_rows)
    assert torch.equal(out, want)
    assert merge_junior_rows(logits.clone(), ALL_SENIOR, torch.ones(3, dtype=torch.bool)).equal(logits)
    with pytest.raises(TandemError, match="all-solo"):
        merge_junior_rows(logits.clone(), ALL_SENIOR, senior_rows)


@pytest.mark.parametrize("seed", [0, 1])
def test_merge_junior_rows_equals_the_row_indexed_merge(seed):
    g = torch.Generator().manual_seed(seed)
    logits = torch.randn(9, 50, generator=g)
    logits[torch.rand(9, 50, generator=g) < 0.2] = float("-inf")
    junior = torch.randn(9, 50, generator=g)
    senior_rows = torch.rand(9, generator=g) < 0.5
    want = logits.clone()
    rows = (~senior_rows).nonzero().flatten()
    want[rows] = torch.where(torch.isneginf(want[rows]), want[rows], junior[rows])
    assert torch.equal(merge_junior_rows(logits.clone(), junior, senior_rows), want)


class LargestFloat32(TorchDispatchMode):
    """Records the largest float32 tensor any op produces."""

    def __init__(self):
        super().__init__()
        self.largest = 0

    def __torch_dispatch__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        for t in out if isinstance(out, (tuple, list)) else [out]:
            if isinstance(t, torch.Tensor) and t.dtype == torch.float32:
                self.largest = max(self.largest, t.numel())
        return out


def test_fingerprint_makes_no_float32_copy_of_a_whole_tensor_and_sees_a_wipe():
    g = torch.Generator().manual_seed(0)
    emb = torch.randn(3 * FINGERPRINT_CHUNK + 17, generator=g).to(torch.bfloat16)
    norm = torch.randn(64, generator=g).to(torch.bfloat16)
    with LargestFloat32() as probe:
        first = tensor_sums([emb, norm])
    assert probe.largest <= FINGERPRINT_CHUNK
    assert torch.equal(tensor_sums([emb, norm]), first)  # deterministic: a check compares two takes
    wiped = emb.clone()
    wiped[: FINGERPRINT_CHUNK // 2] = 0  # a level-2 sleep re-allocates: here half of one tensor
    assert not torch.equal(tensor_sums([wiped, norm]), first)


def test_fingerprint_on_the_meta_device_names_the_checkpoint_engine():
    with pytest.raises(TandemError, match="checkpoint_engine.backend=naive"):
        tensor_sums([torch.empty(4, device="meta")])


QWEN3_4B = dict(vocab_size=151936, hidden_size=2560, num_attention_heads=32, num_key_value_heads=8, head_dim=128,
                sliding_window=None, use_sliding_window=False, max_window_layers=36, num_hidden_layers=36)


@pytest.mark.parametrize(
    "junior_diff, key",
    [
        (dict(hidden_size=1024, num_attention_heads=16, max_window_layers=28, num_hidden_layers=28),
         "num_attention_heads"),  # Qwen3-0.6B beside Qwen3-4B
        (dict(num_key_value_heads=4), "num_key_value_heads"),
        (dict(head_dim=64), "head_dim"),
        (dict(sliding_window=4096, use_sliding_window=True), "sliding_window"),
        (dict(attn_logit_softcapping=30.0), "attn_logit_softcapping"),
        (dict(query_pre_attn_scalar=256), "query_pre_attn_scalar"),
        (dict(vocab_size=151669), "vocab_size"),
    ],
)
def test_check_pair_refuses_every_attention_geometry_difference(junior_diff, key):
    with pytest.raises(TandemError, match=key):
        check_pair(NS(**QWEN3_4B), NS(**{**QWEN3_4B, **junior_diff}), "org/junior")


def test_check_pair_accepts_other_depth_width_and_an_inactive_window():
    qwen3_8b = {**QWEN3_4B, "hidden_size": 4096, "sliding_window": 4096, "num_hidden_layers": 36}
    check_pair(NS(**QWEN3_4B), NS(**qwen3_8b), "Qwen/Qwen3-8B")  # use_sliding_window=False: no window applied
    check_pair(NS(**QWEN3_4B), NS(**QWEN3_4B), "self")


QWEN3_0_6B = dict(hidden_size=1024, num_attention_heads=16, max_window_layers=28, num_hidden_layers=28)


def test_shared_refuses_a_junior_of_other_heads_and_points_at_split():
    with pytest.raises(TandemError, match=r"num_attention_heads=16, the senior 32; .* use placement='split'"):
        check_pair(NS(**QWEN3_4B), NS(**{**QWEN3_4B, **QWEN3_0_6B}), "Qwen/Qwen3-0.6B", "shared")


@pytest.mark.parametrize("junior_diff", [QWEN3_0_6B, dict(num_key_value_heads=4), dict(head_dim=64),
                                         dict(QWEN3_0_6B, num_key_value_heads=4, head_dim=64)])
def test_split_accepts_other_query_heads_kv_heads_and_head_size(junior_diff):
    check_pair(NS(**QWEN3_4B), NS(**{**QWEN3_4B, **junior_diff}), "org/junior", "split")


@pytest.mark.parametrize("junior_diff, key", [
    (dict(sliding_window=4096, use_sliding_window=True), "sliding_window"),
    (dict(attn_logit_softcapping=30.0), "attn_logit_softcapping"),
    (dict(vocab_size=151669), "vocab_size"),
])
def test_split_still_refuses_a_window_a_softcap_or_another_vocabulary(junior_diff, key):
    with pytest.raises(TandemError, match=key):
        check_pair(NS(**QWEN3_4B), NS(**{**QWEN3_4B, **junior_diff}), "org/junior", "split")


def test_the_juniors_context_bounds_the_engines_max_model_len():
    from vllm_source.pairing import check_context, junior_context

    assert junior_context(NS(max_position_embeddings=40960)) == 40960
    assert junior_context(NS(max_position_embeddings=32768, rope_scaling={"rope_type": "yarn", "factor": 4.0,
                                                                          "original_max_position_embeddings": 32768})) \
        == 131072
    assert junior_context(NS()) is None
    check_context(40960, NS(max_position_embeddings=40960), "j")
    check_context(None, NS(max_position_embeddings=32), "j")  # the engine's own default is checked in the worker
    with pytest.raises(TandemError, match=r"^junior j has a context of 1024 tokens but the engine's max_model_len is "
                                          r"4096; set max_model_len <= 1024$"):
        check_context(4096, NS(max_position_embeddings=1024), "j")
