"""CPU tests of the vLLM backend's pure parts (no vLLM needed).

The centre piece drives `TandemBatchState` the way vLLM V1's persistent batch does —
rows added into freed slots, removed, condensed (one-way moves), swapped, requests
preempted and resumed, the newest token a `-1` placeholder until just before sampling —
and checks that the author used for every token equals `tandem.process.authorship.replay_mask`.
"""

from __future__ import annotations

import random
import subprocess
import sys
from types import SimpleNamespace as NS

import pytest
import torch

from tandem.process.boundaries import boundary_lookup
from tandem.process.config import TandemConfig
from tandem.errors import TandemError
from tandem.process.coins import request_key
from tandem.process.authorship import replay_mask, response_authorship_mask
from vllm_source.batch_state import PLACEHOLDER, TandemBatchState
from vllm_source.engine_config import (
    ARCHITECTURE,
    PROCESSOR_CLASS,
    tandem_config_from_hf,
    tandem_engine_kwargs,
)
from vllm_source.handoff import JuniorLogitsSlot, merge_junior_rows
from vllm_source.requests import (
    EXTRA_KEY,
    TandemRequestError,
    parse_tandem_extra_args,
    tandem_extra_args,
)
from vllm_source.weights import split_stream

VOCAB = 40
BOUNDARY = boundary_lookup(list(range(0, VOCAB, 3)), VOCAB)
UNIDIRECTIONAL, SWAP = NS(name="UNIDIRECTIONAL"), NS(name="SWAP")


def word_cfg(**kw) -> TandemConfig:
    return TandemConfig(**{"selection_strategy": "word", "prob_senior": 0.5, "max_gap_tokens": 4, "seed": 7, **kw})


class FakePersistentBatch:
    """vLLM V1's InputBatch bookkeeping, reduced to what logits processors observe."""

    def __init__(self, state: TandemBatchState, rng: random.Random):
        self.state, self.rng = state, rng
        self.rows: list[str | None] = []
        self.removed: list[int] = []
        self.added, self.moved = [], []
        self.outputs: dict[str, list[int]] = {}
        self.authors: dict[str, list[int]] = {}

    def add(self, rid: str, solo: bool = False, junior_solo: bool = False) -> None:
        index = min(self.removed) if self.removed else len(self.rows)
        if self.removed:
            self.removed.remove(index)
            self.rows[index] = rid
        else:
            self.rows.append(rid)
        out = self.outputs.setdefault(rid, [])
        self.authors.setdefault(rid, [])
        params = NS(extra_args=tandem_extra_args(request_key(rid, 0), solo=solo, junior_solo=junior_solo))
        self.added.append((index, params, [1, 2, 3], out))

    def remove(self, rid: str) -> None:
        index = self.rows.index(rid)
        self.rows[index] = None
        self.removed.append(index)

    def condense_and_shuffle(self) -> None:
        for empty in sorted(self.removed):
            last = max((i for i, r in enumerate(self.rows) if r is not None), default=-1)
            if last > empty:
                self.rows[empty], self.rows[last] = self.rows[last], None
                self.moved.append((last, empty, UNIDIRECTIONAL))
        while self.rows and self.rows[-1] is None:
            self.rows.pop()
        self.removed = []
        if len(self.rows) >= 2 and self.rng.random() < 0.5:
            a, b = self.rng.sample(range(len(self.rows)), 2)
            self.rows[a], self.rows[b] = self.rows[b], self.rows[a]
            self.moved.append((a, b, SWAP))

    def step(self) -> None:
        """update_state -> fill placeholders -> apply (record authors) -> sample (placeholder)."""
        self.condense_and_shuffle()
        update = NS(batch_size=len(self.rows), removed=[], added=self.added, moved=self.moved)
        self.state.update(update)
        self.added, self.moved = [], []
        for rid in self.rows:  # vLLM's update_async_output_token_ids, just before sampling
            out = self.outputs[rid]
            if out and out[-1] == PLACEHOLDER:
                out[-1] = self.rng.randrange(VOCAB)
        self.state.catch_up()
        assert self.state.pending_placeholders() == []
        senior = self.state.senior_rows()
        for row, rid in enumerate(self.rows):
            self.authors[rid].append(int(senior[row]))
            self.outputs[rid].append(PLACEHOLDER)

    def finish(self) -> None:
        for out in self.outputs.values():
            if out and out[-1] == PLACEHOLDER:
                out[-1] = self.rng.randrange(VOCAB)


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_batch_state_authors_equal_replay_under_add_remove_move_swap_preempt(seed):
    rng = random.Random(seed)
    cfg = word_cfg()
    sim = FakePersistentBatch(TandemBatchState(cfg, BOUNDARY, max_num_reqs=16), rng)
    live, parked, next_id = [], [], 0
    for _ in range(120):
        if len(live) < 6 and rng.random() < 0.4:
            sim.add(f"r{next_id}")
            live.append(f"r{next_id}")
            next_id += 1
        if live and rng.random() < 0.15:  # preempt: leave the batch, keep its tokens
            rid = live.pop(rng.randrange(len(live)))
            sim.remove(rid)
            parked.append(rid)
        if parked and rng.random() < 0.3:  # resume with the tokens emitted so far
            rid = parked.pop(0)
            sim.add(rid)
            live.append(rid)
        if live:
            sim.step()
    sim.finish()
    checked = 0
    for rid, authors in sim.authors.items():
        tokens = sim.outputs[rid][: len(authors)]
        if not tokens:
            continue
        expected = replay_mask(cfg, BOUNDARY, torch.tensor([tokens]), [request_key(rid, 0)])[0].tolist()
        assert authors == expected, rid
        checked += 1
    assert checked >= 5


def test_batch_state_solo_rows_are_always_senior():
    sim = FakePersistentBatch(TandemBatchState(word_cfg(prob_senior=0.0), BOUNDARY, 4), random.Random(0))
    sim.add("solo", solo=True)
    sim.add("tandem")
    for _ in range(10):
        sim.step()
    assert set(sim.authors["solo"]) == {1}
    assert set(sim.authors["tandem"]) == {0}  # prob_senior 0: the junior writes everything


def test_batch_state_junior_solo_rows_are_the_juniors_through_moves_and_swaps():
    """The transfer reward's receiver: the junior writes every token, whatever the coins and the row moves."""
    sim = FakePersistentBatch(TandemBatchState(word_cfg(prob_senior=1.0), BOUNDARY, 9), random.Random(1))
    for i in range(3):
        sim.add(f"receiver{i}", junior_solo=True)
        sim.add(f"solo{i}", solo=True)
        sim.add(f"team{i}")
    for step in range(12):
        sim.step()
        if step == 4:
            sim.remove("solo0")
            sim.remove("team1")
    for i in range(3):
        assert set(sim.authors[f"receiver{i}"]) == {0}
        assert set(sim.authors[f"solo{i}"]) == {1}
        assert set(sim.authors[f"team{i}"]) == {1}  # prob_senior 1: the coins give the senior every token
    assert not sim.state.all_solo()  # a junior-solo row needs the junior's forward


def test_extra_args_name_one_author_at_most():
    from vllm_source.requests import EXTRA_JUNIOR_SOLO, EXTRA_SOLO, is_junior_solo, is_vllm_own_request

    assert tandem_extra_args(None, junior_solo=True) == {EXTRA_JUNIOR_SOLO: True}
    assert parse_tandem_extra_args({EXTRA_JUNIOR_SOLO: True}) == (0, False)  # not the senior's, no coins
    assert is_junior_solo({EXTRA_JUNIOR_SOLO: True}) and not is_junior_solo(tandem_extra_args(3))
    assert not is_vllm_own_request({EXTRA_JUNIOR_SOLO: True})
    with pytest.raises(TandemRequestError, match="one author"):
        parse_tandem_extra_args({EXTRA_SOLO: True, EXTRA_JUNIOR_SOLO: True})
    with pytest.raises(TandemRequestError, match="not both"):
        tandem_extra_args(3, solo=True, junior_solo=True)


def test_batch_state_refuses_request_without_key():
    state = TandemBatchState(word_cfg(), BOUNDARY, 4)
    update = NS(batch_size=1, removed=[], added=[(0, NS(extra_args=None), [1], [])], moved=[])
    with pytest.raises(TandemRequestError, match=EXTRA_KEY):
        state.update(update)


def test_batch_state_reports_unmaterialised_placeholder():
    state = TandemBatchState(word_cfg(), BOUNDARY, 4)
    out = [5, PLACEHOLDER]
    state.update(NS(batch_size=1, removed=[], added=[(0, NS(extra_args=tandem_extra_args(3)), [1], out)], moved=[]))
    state.catch_up()
    assert state.pending_placeholders() == [0]


def test_merge_junior_rows_swaps_only_junior_rows_and_keeps_masks():
    logits = torch.tensor([[1.0, 2.0, float("-inf")], [3.0, float("-inf"), 4.0]])
    junior = torch.tensor([[9.0, 9.0, 9.0], [7.0, 8.0, 6.0]], dtype=torch.bfloat16)
    out = merge_junior_rows(logits.clone(), junior, torch.tensor([True, False]))
    assert out[0].tolist() == [1.0, 2.0, float("-inf")]  # senior row untouched
    assert out[1].tolist() == [7.0, float("-inf"), 6.0]  # junior row; the -inf mask survives


def test_junior_logits_slot_refuses_missing_or_mismatched_logits():
    slot = JuniorLogitsSlot()
    with pytest.raises(TandemError, match="TandemForCausalLM"):
        slot.take(2)
    slot.put(torch.zeros(3, 5))
    with pytest.raises(TandemError, match="3 rows"):
        slot.take(2)


def test_split_stream_routes_senior_then_junior_without_prefix():
    stream = [("a", torch.zeros(1)), ("b", torch.ones(1)), ("junior.a", torch.full((1,), 2.0))]
    senior, junior = split_stream(stream)
    assert [n for n, _ in senior] == ["a", "b"]
    assert [(n, t.item()) for n, t in junior] == [("a", 2.0)]


def test_split_stream_refuses_senior_weight_after_junior():
    senior, junior = split_stream([("junior.a", torch.zeros(1)), ("b", torch.zeros(1))])
    assert list(senior) == []
    with pytest.raises(TandemError, match="after junior"):
        list(junior)


def test_extra_args_round_trip_and_solo():
    assert parse_tandem_extra_args(tandem_extra_args(11)) == (11, False)
    assert parse_tandem_extra_args(tandem_extra_args(None, solo=True)) == (0, True)
    with pytest.raises(ValueError):  # vLLM's validate_params contract
        parse_tandem_extra_args({EXTRA_KEY: -1})


def test_response_mask_replays_the_core_process():
    cfg = word_cfg()
    tokens = [1, 3, 4, 5, 6, 9, 10, 11, 12, 13]
    key = request_key("p", 2)
    expected = replay_mask(cfg, BOUNDARY, torch.tensor([tokens]), [key])[0].tolist()
    assert response_authorship_mask(cfg, BOUNDARY, tokens, key, solo=False) == expected
    assert response_authorship_mask(cfg, BOUNDARY, tokens, key, solo=True) == [1] * len(tokens)


def test_engine_kwargs_carry_config_and_default_to_self_paired_junior():
    kw = tandem_engine_kwargs(TandemConfig.from_dict({"prob_primary": 0.25}), "org/senior", max_num_seqs=8)
    assert kw["hf_overrides"]["architectures"] == [ARCHITECTURE]
    assert kw["logits_processors"] == [PROCESSOR_CLASS]
    assert kw["max_num_seqs"] == 8
    back = tandem_config_from_hf(NS(tandem=kw["hf_overrides"]["tandem"]))
    assert back.prob_senior == 0.25 and back.junior_model == "org/senior"


@pytest.mark.parametrize(
    "bad",
    [{"load_format": "dummy"}, {"speculative_config": {"method": "ngram"}}, {"hf_overrides": {"x": 1}},
     {"enable_lora": True}, {"pipeline_parallel_size": 2}],
)
def test_engine_kwargs_refuse_unhonourable_settings(bad):
    with pytest.raises(TandemError):
        tandem_engine_kwargs(TandemConfig(), "org/senior", **bad)


def test_config_from_hf_fails_closed_without_config(monkeypatch):
    monkeypatch.delenv("VLLM_TANDEM_CONFIG", raising=False)
    with pytest.raises(TandemError, match="no tandem config"):
        tandem_config_from_hf(NS())
    monkeypatch.setenv("VLLM_TANDEM_CONFIG", '{"prob_primary": 0.75}')
    assert tandem_config_from_hf(NS()).prob_senior == 0.75


def test_package_imports_without_vllm_and_gpu_modules_say_how_to_install():
    code = (
        "import sys; sys.modules['vllm'] = None\n"  # make `import vllm` fail even where it exists
        "import vllm_source\n"
        "from tandem.errors import TandemError\n"
        "for mod in ('vllm_source.logits_processor', 'vllm_source.model'):\n"
        "    try:\n"
        "        __import__(mod)\n"
        "    except TandemError as e:\n"
        "        assert 'pip install tandem-rlvr[vllm]' in str(e), e\n"
        "    else:\n"
        "        raise SystemExit(mod + ' imported without vllm')\n"
        "print('ok')\n"
    )
    res = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert res.returncode == 0 and "ok" in res.stdout, res.stderr


def _fake_vllm(monkeypatch, unspecified: bool, cpu: bool, device_type: str) -> None:
    """A stand-in `vllm` package whose platform answers as vLLM's would."""
    platform = NS(is_unspecified=lambda: unspecified, is_cpu=lambda: cpu, device_type=device_type)
    monkeypatch.setitem(sys.modules, "vllm", NS(__version__="0.28.0", __path__=[]))
    monkeypatch.setitem(sys.modules, "vllm.platforms", NS(current_platform=platform))


@pytest.mark.parametrize("cpu, device_type, want", [(True, "cpu", "cpu"), (False, "cuda", "cuda")])
def test_require_vllm_accepts_a_cpu_build_and_a_gpu(monkeypatch, cpu, device_type, want):
    from vllm_source.runtime import require_vllm, vllm_platform

    _fake_vllm(monkeypatch, unspecified=False, cpu=cpu, device_type=device_type)
    assert require_vllm(device=True) is sys.modules["vllm"]
    assert vllm_platform() == want


def test_require_vllm_refuses_a_cuda_build_without_a_gpu_and_says_what_to_install(monkeypatch):
    from vllm_source.runtime import require_vllm

    _fake_vllm(monkeypatch, unspecified=True, cpu=False, device_type="")
    with pytest.raises(TandemError, match="no device it can run on.*CPU build of vLLM"):
        require_vllm(device=True)


def test_require_vllm_refuses_a_release_outside_the_stack_before_any_engine(monkeypatch):
    from vllm_source.runtime import require_vllm

    _fake_vllm(monkeypatch, unspecified=False, cpu=False, device_type="cuda")
    monkeypatch.setattr(sys.modules["vllm"], "__version__", "0.26.1")
    with pytest.raises(TandemError, match=r"vLLM 0.26.1 is neither tested nor accepted.*install vllm==0.28.0"):
        require_vllm(device=True)
