"""CPU tests of the V2 backend's pure parts (no vLLM needed): slot state, runner policy, engine kwargs.

The centre piece drives `TandemSlotState` the way vLLM V2's model runner does — requests
added on slots taken from a free list and recycled, rows reordered every step, requests
preempted (their slot freed, no event) and resumed on another slot with their tokens so
far, the step's token committed to the request state before the next step's sampling —
and checks that the author of every token equals `tandem.process.authorship.replay_mask`. Runs in
the main suite and in the V2 lane.
"""

from __future__ import annotations

import random
from types import SimpleNamespace

import numpy as np
import pytest
import torch
from torch.overrides import TorchFunctionMode

from tandem.process.boundaries import boundary_lookup
from tandem.process.coins import request_key
from tandem.process.config import TandemConfig
from tandem.errors import TandemError
from tandem.process.authorship import replay_mask
from vllm_source.compat import check_vllm_version, tandem_runner
from vllm_source.engine_config import PROCESSOR_CLASS, PROCESSOR_CLASS_V2, tandem_engine_kwargs
from vllm_source.requests import (EXTRA_KEY, TandemRequestError, check_tandem_params, check_v2_penalties,
                                  tandem_extra_args)
from vllm_source.model_runner import RUNNER_ENV, pin_runner
from vllm_source.slot_state import TandemSlotState

VOCAB = 40
BOUNDARY = boundary_lookup(list(range(0, VOCAB, 3)), VOCAB)


def word_cfg(**kw) -> TandemConfig:
    return TandemConfig(**{"selection_strategy": "word", "prob_senior": 0.5, "max_gap_tokens": 4, "seed": 7, **kw})


MAX_TOKENS = 200  # the longest response a slot may hold (the engine's max_model_len)
STEPS = 120


class DeviceReads(TorchFunctionMode):
    """Counts reads of a tensor's values back to the host (what blocks on a GPU until its queue drains).

    In `TandemSlotState.step` every torch tensor stands for a device tensor (the host side
    works on numpy), so each `.item()`, `.tolist()`, `.cpu()`, `.numpy()`, truth test, int or
    index conversion, and boolean-mask indexing there counts.
    """

    READS = {torch.Tensor.item, torch.Tensor.tolist, torch.Tensor.cpu, torch.Tensor.numpy, torch.Tensor.__bool__,
             torch.Tensor.__int__, torch.Tensor.__float__, torch.Tensor.__index__, torch.Tensor.nonzero,
             torch.nonzero}

    def __init__(self):
        super().__init__()
        self.reads: list[str] = []

    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        if func in self.READS:
            self.reads.append(func.__name__)
        if func in (torch.Tensor.__getitem__, torch.Tensor.__setitem__) and _has_bool_index(args[1]):
            self.reads.append("boolean-mask indexing")
        return func(*args, **kwargs)


def _has_bool_index(index) -> bool:
    parts = index if isinstance(index, tuple) else (index,)
    return any(isinstance(p, torch.Tensor) and p.dtype == torch.bool for p in parts)


class FakeV2Runner:
    """vLLM V2's request slots and committed tokens, reduced to what a logits processor observes."""

    def __init__(self, state: TandemSlotState, rng: random.Random, max_reqs: int = 8):
        self.state, self.rng = state, rng
        self.free = list(range(max_reqs))
        self.slot_of: dict[str, int] = {}
        self.outputs: dict[str, list[int]] = {}  # committed output tokens per request
        self.authors: dict[str, list[int]] = {}
        self.counter = DeviceReads()

    def add(self, rid: str, solo: bool = False) -> None:
        """A new request, or a resumed one (its tokens so far come back with it)."""
        slot = self.free.pop(self.rng.randrange(len(self.free)))
        self.slot_of[rid] = slot
        self.outputs.setdefault(rid, [])
        self.authors.setdefault(rid, [])
        self.state.add(slot, tandem_extra_args(request_key(rid, 0), solo=solo))

    def remove(self, rid: str) -> None:  # finished or preempted: the processor is not told
        self.free.append(self.slot_of.pop(rid))

    def read_span(self, slots, starts, ends) -> torch.Tensor:
        """The runner's committed tokens (`all_token_ids`), left-aligned per slot."""
        rid_of = {s: r for r, s in self.slot_of.items()}
        width = int((ends - starts).max())
        rows = [self.outputs[rid_of[s]][a:b] for s, a, b in zip(slots.tolist(), starts.tolist(), ends.tolist())]
        return torch.tensor([r + [0] * (width - len(r)) for r in rows], dtype=torch.int64)

    def step(self) -> None:
        """Rows in a new order -> the processor's step (authors of the rows) -> sample and commit one token each."""
        rids = list(self.slot_of)
        self.rng.shuffle(rids)
        slots = np.array([self.slot_of[r] for r in rids], dtype=np.int64)
        lens = np.array([len(self.outputs[r]) for r in rids], dtype=np.int64)
        # the token fed at each row's position: its newest output token (a prompt token before the first)
        newest = torch.tensor([self.outputs[r][-1] if self.outputs[r] else VOCAB - 1 for r in rids], dtype=torch.int32)
        with self.counter:
            senior = self.state.step(slots, lens, newest, self.read_span)
        for row, rid in enumerate(rids):
            self.authors[rid].append(int(senior[row]))
            self.outputs[rid].append(self.rng.randrange(VOCAB))


def simulate(cfg: TandemConfig, seed: int) -> tuple[FakeV2Runner, int]:
    """STEPS steps of requests arriving, finishing, preempted and resumed on recycled slots."""
    rng = random.Random(seed)
    sim = FakeV2Runner(TandemSlotState(cfg, BOUNDARY, max_num_reqs=8, max_tokens=MAX_TOKENS), rng)
    live, parked, next_id, resumed = [], [], 0, 0
    for _ in range(STEPS):
        if len(live) < 5 and rng.random() < 0.4:
            sim.add(f"r{next_id}")
            live.append(f"r{next_id}")
            next_id += 1
        if live and rng.random() < 0.1:  # finished: the slot goes back to the free list
            sim.remove(live.pop(rng.randrange(len(live))))
        if live and rng.random() < 0.15:  # preempted: leaves with its tokens
            rid = live.pop(rng.randrange(len(live)))
            sim.remove(rid)
            parked.append(rid)
        if parked and len(live) < 5 and rng.random() < 0.3:  # resumed, likely on another slot
            rid = parked.pop(0)
            sim.add(rid)
            live.append(rid)
            resumed += 1
        if live:
            sim.step()
    return sim, resumed


STRATEGY_SETTINGS = {"word": dict(prob_senior=0.5, max_gap_tokens=4), "bernoulli": dict(prob_senior=0.5),
                     "sentence": dict(first_author="senior"), "step": dict(first_author="junior"),
                     "alternating": dict(first_author="junior"), "chunk": dict(chunk_size=3)}


@pytest.mark.parametrize("strategy", sorted(STRATEGY_SETTINGS))
@pytest.mark.parametrize("seed", [0, 1])
def test_slot_state_authors_equal_replay_under_recycled_slots_reordering_and_preemption(strategy, seed):
    cfg = TandemConfig(selection_strategy=strategy, seed=7, **STRATEGY_SETTINGS[strategy])
    sim, resumed = simulate(cfg, seed)
    checked = 0
    for rid, authors in sim.authors.items():
        tokens = sim.outputs[rid][: len(authors)]
        if tokens:
            expected = replay_mask(cfg, BOUNDARY, torch.tensor([tokens]), [request_key(rid, 0)])[0].tolist()
            assert authors == expected, rid
            checked += 1
    assert checked >= 5 and resumed >= 2


def test_a_step_reads_nothing_back_from_the_device():
    """The processor's step decides every author on the device: 0 device-to-host reads in 120 steps,
    resumed requests (their tokens caught up from the committed tokens) included."""
    sim, resumed = simulate(word_cfg(), seed=0)
    assert resumed >= 2 and sim.counter.reads == []
    control = DeviceReads()
    with control:  # the counter sees the reads the processor used to make each step
        torch.arange(3)[torch.tensor([0, 1])].tolist()
        bool(torch.tensor([True]).all())
        torch.arange(3)[torch.tensor([True, False, True])]
    assert control.reads == ["tolist", "__bool__", "boolean-mask indexing"]


def new_state(cfg=None, n=4) -> TandemSlotState:
    return TandemSlotState(cfg or word_cfg(), BOUNDARY, n, MAX_TOKENS)


def authors(state, slots, lens, newest) -> list[bool]:
    got = state.step(np.array(slots), np.array(lens), torch.tensor(newest), lambda *a: None)
    return got.tolist()


def test_solo_requests_are_always_senior_and_ask_for_no_processing():
    state = new_state(word_cfg(prob_senior=0.0))
    assert state.add(0, tandem_extra_args(request_key("solo", 0), solo=True)) is False
    assert state.add(1, tandem_extra_args(request_key("team", 0))) is True
    assert authors(state, [0, 1], [0, 0], [5, 5]) == [True, False]  # prob_senior 0: the junior writes


def test_junior_solo_requests_are_always_the_juniors_and_fold_nothing():
    """The transfer reward's receiver: every token the junior's, the coins (prob_senior 1) unread, and the junior runs."""
    state = new_state(word_cfg(prob_senior=1.0))
    assert state.add(0, tandem_extra_args(None, junior_solo=True)) is True  # its logits change: the junior's
    assert state.add(1, tandem_extra_args(request_key("team", 0))) is True
    assert state.add(2, tandem_extra_args(None, solo=True)) is False
    for n in range(4):
        assert authors(state, [0, 1, 2], [n, n, n], [5, 5, 5]) == [False, True, True]
    assert state.folded[0] == 0 and state.folded[1] == 3
    assert not state.all_solo() and state.any_tandem(np.array([0, 2]))
    state.add(0, tandem_extra_args(request_key("next", 0)))  # the slot's next request is a team's again
    assert authors(state, [0], [0], [5]) == [True]


def test_a_junior_solo_request_with_a_penalty_is_refused_on_v2():
    """V2 applies penalties before the junior's logits are put in: the receiver's tokens would ignore them."""
    with pytest.raises(TandemRequestError, match="V2 model runner"):
        check_v2_penalties(params(tandem_extra_args(None, junior_solo=True), repetition_penalty=1.2))


def test_a_slot_is_restarted_for_its_next_request():
    state = new_state(word_cfg(prob_senior=0.0), n=2)
    state.add(0, tandem_extra_args(request_key("a", 0), solo=True))
    state.add(0, tandem_extra_args(request_key("b", 0)))
    assert authors(state, [0], [0], [5]) == [False] and state.folded[0] == 0


@pytest.mark.parametrize("strategy", ["bernoulli", "word"])
def test_a_request_draws_its_coins_up_to_its_own_max_tokens(strategy):
    """Coins are drawn at admission for the request's `max_tokens` only: its last token still gets its coin."""
    cfg = TandemConfig(selection_strategy=strategy, seed=3, **STRATEGY_SETTINGS[strategy])
    state, rng = TandemSlotState(cfg, BOUNDARY, 2, MAX_TOKENS), random.Random(0)
    tokens = [rng.randrange(VOCAB) for _ in range(6)]
    state.add(1, tandem_extra_args(11), max_tokens=len(tokens))
    got = [authors(state, [1], [i], [tokens[i - 1] if i else 0])[0] for i in range(len(tokens))]
    assert got == replay_mask(cfg, BOUNDARY, torch.tensor([tokens]), [11])[0].bool().tolist()


def test_rows_still_reading_their_prompt_fold_nothing():
    """A chunked prefill's rows (sequence shorter than the prompt: output length <= 0) keep the first author."""
    state = new_state(word_cfg(prob_senior=0.0))
    state.add(2, tandem_extra_args(7))
    assert authors(state, [2], [-5], [3]) == [False] and state.folded[2] == 0


def test_vllms_own_key_less_requests_are_solo_and_leave_no_state():
    """vLLM's warm-up and profiling requests carry no tandem entry and skip validate_params."""
    state = new_state(word_cfg(prob_senior=0.0))
    assert state.add(0, None) is False and state.add(1, {}) is False and state.add(2, {"other": 1}) is False
    assert state.started == 0 and not state.any_tandem(np.array([0, 1, 2, 3]))  # slot 3: never used
    assert authors(state, [0, 1, 2, 3], [3, 3, 0, 0], [1, 2, 3, 4]) == [True] * 4
    state.add(3, tandem_extra_args(7))
    assert state.any_tandem(np.array([0, 3])) and state.started == 1
    state.add(3, {})  # a slot recycled for vLLM's own request forgets the tandem one
    assert not state.any_tandem(np.array([3])) and state.folded[3] == 0


def test_a_user_request_without_a_key_a_bad_key_and_lost_tokens_are_refused():
    with pytest.raises(TandemRequestError, match=EXTRA_KEY) as err:
        check_tandem_params(params())  # validate_params: a user's key-less request, at admission
    assert "\n" not in str(err.value)
    state = new_state(n=2)
    with pytest.raises(TandemRequestError, match=EXTRA_KEY):
        state.add(0, {EXTRA_KEY: -1})
    state.add(0, tandem_extra_args(7))
    state.step(np.array([0]), np.array([2]), torch.tensor([2]), lambda s, a, b: torch.tensor([[1]]))
    with pytest.raises(TandemError, match="lost output tokens"):
        state.step(np.array([0]), np.array([1]), torch.tensor([1]), lambda *a: None)


def params(extra_args=None, **kw) -> SimpleNamespace:
    """The fields of `vllm.SamplingParams` the admission checks read, at vLLM's defaults."""
    base = dict(extra_args=extra_args, n=1, logit_bias=None, prompt_logprobs=None, repetition_penalty=1.0,
                frequency_penalty=0.0, presence_penalty=0.0)
    return SimpleNamespace(**{**base, **kw})


@pytest.mark.parametrize("penalty", [dict(repetition_penalty=1.2), dict(frequency_penalty=0.5),
                                     dict(presence_penalty=-0.5)])
def test_penalties_on_a_v2_tandem_request_are_refused_in_one_line_and_allowed_solo(penalty):
    """V2 applies penalties before the tandem processor: the junior's rows would not see them."""
    with pytest.raises(TandemRequestError) as err:
        check_v2_penalties(params(tandem_extra_args(7), **penalty))
    line = str(err.value)
    assert "\n" not in line and line.startswith(f"{next(iter(penalty))}=") and "V2 model runner" in line
    check_v2_penalties(params(tandem_extra_args(None, solo=True), **penalty))  # the senior writes every token
    check_v2_penalties(params(tandem_extra_args(7)))  # neutral values pass


def test_dummy_runs_are_told_apart_until_the_first_request():
    state = new_state(n=2)
    assert state.batch_size == 0 and state.all_solo() is False
    state.add(0, {})  # vLLM's warm-up
    assert state.batch_size == 0
    state.add(1, tandem_extra_args(7))
    assert state.batch_size > 0


def test_the_junior_is_skipped_only_while_every_slots_latest_request_is_solo():
    """`all_solo` decides before the forward whether the pair runs the junior's trunk: never before the first
    request (profiling and CUDA graph capture must hold the junior), never while a tandem request may be live."""
    state = new_state(n=3)
    state.add(0, {})  # vLLM's own request: not a user's, the junior still runs
    assert state.all_solo() is False
    state.add(0, tandem_extra_args(request_key("solo", 0), solo=True))
    assert state.all_solo() is True  # a validation batch: every slot solo
    state.add(1, tandem_extra_args(request_key("team", 0)))
    assert state.all_solo() is False
    state.add(2, tandem_extra_args(request_key("solo", 1), solo=True))
    assert state.all_solo() is False  # slot 1's tandem request may still be in the step (V2 reports no removal)
    state.add(1, tandem_extra_args(request_key("solo", 2), solo=True))
    assert state.all_solo() is True  # its slot now holds a solo request


@pytest.mark.parametrize("runner, value", [("v1", "0"), ("v2", "1")])
def test_both_arms_are_pinned_to_the_runner_tandem_runs_on_with_the_installed_vllm(runner, value):
    env: dict = {}
    assert pin_runner("0.x", env, runner=runner) == runner and env[RUNNER_ENV] == value
    assert pin_runner("0.x", {RUNNER_ENV: value}, runner=runner) == runner  # a setting that agrees stands


def test_the_pin_follows_the_installed_vllms_interface():
    env: dict = {}
    assert pin_runner("0.x", env) == tandem_runner() and env[RUNNER_ENV] == {"v1": "0", "v2": "1"}[tandem_runner()]


@pytest.mark.parametrize("version, runner, value, names", [("0.28.0", "v1", "1", "V2 model runner"),
                                                           ("0.32.0", "v2", "0", "V1 model runner"),
                                                           ("0.33.0", "v2", "", "V1 model runner")])
def test_a_runner_setting_against_this_vllm_is_refused_in_one_line(version, runner, value, names):
    with pytest.raises(TandemError) as err:
        pin_runner(version, {RUNNER_ENV: value}, runner=runner)
    line = str(err.value)
    assert "\n" not in line and f"{RUNNER_ENV}={value} asks for vLLM {version}'s {names}" in line
    assert f"unset {RUNNER_ENV}" in line


def test_the_processor_interface_follows_the_runner_in_both_placements():
    for placement in ("shared", "split"):
        cfg = word_cfg(placement=placement)
        assert tandem_engine_kwargs(cfg, "m")["logits_processors"] == [PROCESSOR_CLASS]
        v2 = tandem_engine_kwargs(cfg, "m", tandem_runner="v2")
        assert v2["logits_processors"] == [PROCESSOR_CLASS_V2]
        assert v2["hf_overrides"] == tandem_engine_kwargs(cfg, "m")["hf_overrides"]
    with pytest.raises(TandemError, match="tandem_runner must be one of v1, v2"):
        tandem_engine_kwargs(cfg, "m", tandem_runner="v3")


def test_vllm_032_is_admitted_for_the_engine_and_named_when_another_release_is_refused():
    release = check_vllm_version("0.32.0+cpu")
    assert release.minor == "0.32" and "V2" in release.status
    assert "never run" in check_vllm_version("0.33.0").status
    with pytest.raises(TandemError, match=r"engine and eval only: 0\.32\.0"):
        check_vllm_version("0.31.0")
