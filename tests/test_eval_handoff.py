"""The handoff protocol: senior first, one step each, exact switches at `\\n\\n`, shared budget, EOS."""

from __future__ import annotations

import shutil
import sys

import pytest
import torch

from tandem.errors import TandemError
from tandem.rollout.contract import Rollout
from tandem.rollout.sampling import SamplingConfig
from tandem_eval.core.backends import EvalBackend
from tandem_backends.settings import EngineSettings
from tandem_eval.core.sampling import eval_sampling
from tandem_eval.core.handoff import run_step_handoff
from tandem_eval.core.prompts import chat_prompt_ids, chat_prompt_text
from vllm_source.runtime import VLLM_MISSING

BUDGET = 40


def _nudge(model, step_ids: list[int], eos_id: int) -> None:
    """Make step breaks and EOS likely, so short runs of a random tiny model exercise both."""
    head = torch.nn.Linear(model.lm_head.in_features, model.lm_head.out_features, bias=True)
    head.weight = model.lm_head.weight
    with torch.no_grad():
        head.bias.zero_()
        head.bias[step_ids] = 3.0
        head.bias[eos_id] = 1.5
    model.lm_head = head


@pytest.fixture(scope="module")
def handoff_run(tiny_dir, tiny_dir_seed1):
    sampling = SamplingConfig(temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=BUDGET, seed=0)
    backend = EvalBackend(EngineSettings(tiny_dir, tiny_dir_seed1), sampling)
    tok = backend.tokenizer
    step_ids = [i for i in range(len(tok)) if "\n\n" in tok.decode([i])]
    for role in ("senior", "junior"):
        _nudge(backend.model(role), step_ids, tok.eos_token_id)
    prompt = chat_prompt_ids(tok, "Mia has 4 apples and buys 3 more. How many apples does she have?")
    samples = backend.handoff([prompt] * 24, list(range(24)))
    return samples, set(step_ids), tok.eos_token_id


def test_senior_writes_the_first_token(handoff_run):
    samples, _, _ = handoff_run
    assert all(s.authorship_mask[0] == 1 for s in samples)


def test_author_switches_exactly_after_each_step_token(handoff_run):
    samples, step_ids, _ = handoff_run
    switches = 0
    for s in samples:
        for t in range(len(s.token_ids) - 1):
            switched = s.authorship_mask[t + 1] != s.authorship_mask[t]
            assert switched == (s.token_ids[t] in step_ids)
            switches += switched
    assert switches >= 10  # the run really exercised handoffs


def test_number_of_handoffs_counts_author_changes(handoff_run):
    samples, step_ids, _ = handoff_run
    for s in samples:
        assert s.num_handoffs == sum(t in step_ids for t in s.token_ids[:-1])


def test_both_models_share_one_token_budget(handoff_run):
    samples, _, _ = handoff_run
    assert all(len(s.token_ids) <= BUDGET for s in samples)
    assert all(len(s.token_ids) == BUDGET for s in samples if s.finish_reason == "length")
    assert any(s.finish_reason == "length" for s in samples)


def test_a_response_ends_at_its_first_eos(handoff_run):
    samples, _, eos = handoff_run
    stopped = [s for s in samples if s.finish_reason == "stop"]
    assert stopped, "no response emitted EOS"
    for s in stopped:
        assert s.token_ids[-1] == eos and eos not in s.token_ids[:-1]


class _ScriptedWriter:
    """A fake one-model backend: each call writes the next scripted turn (ids, how it ended) for its chain."""

    def __init__(self, name, turns, tokenizer=None):
        self.name, self.turns, self.tokenizer, self.calls = name, turns, tokenizer or _FakeTok(), []

    def generate(self, prompts, sampling, request_keys, solo=False):
        out = []
        for ctx in prompts:
            cap = sampling.max_new_tokens
            self.calls.append((list(ctx), cap))
            ids, ended = self.turns.pop(0)
            finish = "length" if len(ids) > cap or ended == "length" else "stop"
            out.append(Rollout(list(ctx), ids[:cap], [1] * len(ids[:cap]), "", finish))
        return out


class _FakeTok:
    def decode(self, ids, skip_special_tokens=True):
        return " ".join(map(str, ids))

    def __call__(self, text, add_special_tokens=False):
        return {"input_ids": [int(t) for t in text.split()]}


STEP_TOKENS = [2, 3, 4]  # the fake vocabulary's step-break tokens: a turn ending on one hands over


def test_turn_loop_alternates_senior_first_on_shared_history_and_budget():
    senior = _ScriptedWriter("senior", [([1, 2], "step"), ([5], "length"), ([6, 7], "eos")])
    junior = _ScriptedWriter("junior", [([3, 4], "step")])
    [sample] = run_step_handoff(senior, junior, [[100]], ["100"], [0], SamplingConfig(max_new_tokens=10),
                                STEP_TOKENS, progress=False)
    assert sample.token_ids == [1, 2, 3, 4, 5, 6, 7]
    assert sample.authorship_mask == [1, 1, 0, 0, 1, 1, 1]  # a call cut by its cap keeps the same author
    assert sample.finish_reason == "stop"
    assert junior.calls == [([100, 1, 2], 8)]  # the junior sees the senior's token ids, and the budget left
    assert [cap for _, cap in senior.calls] == [10, 6, 5]


def test_turn_loop_ends_when_the_budget_is_spent():
    senior = _ScriptedWriter("senior", [([1, 2, 3], "step")])
    junior = _ScriptedWriter("junior", [([4, 5, 6, 7, 8], "step")])
    [sample] = run_step_handoff(senior, junior, [[100]], ["100"], [0], SamplingConfig(max_new_tokens=5),
                                STEP_TOKENS, progress=False)
    assert sample.token_ids == [1, 2, 3, 4, 5]
    assert sample.finish_reason == "length"


def _mismatched_copy(src, dst):
    from tandem.models.loading import load_tokenizer

    shutil.copytree(src, dst)
    tok = load_tokenizer(dst)
    tok.add_tokens(["<unused-extra-token>"])
    tok.save_pretrained(dst)
    return dst


def test_mismatched_vocabularies_are_refused_without_the_flag(tiny_dir, tiny_dir_seed1, tmp_path):
    junior = _mismatched_copy(tiny_dir_seed1, tmp_path / "junior")
    with pytest.raises(TandemError, match="--allow-vocab-mismatch"):
        EvalBackend(EngineSettings(tiny_dir, junior), eval_sampling(max_new_tokens=8)).handoff([[1]], [0])


def test_mismatched_vocabularies_hand_over_retokenised_text_when_allowed(tiny_dir, tiny_dir_seed1, tmp_path):
    junior = _mismatched_copy(tiny_dir_seed1, tmp_path / "junior")
    sampling = SamplingConfig(temperature=1.0, top_p=1.0, top_k=0, max_new_tokens=12)
    backend = EvalBackend(EngineSettings(tiny_dir, junior, allow_vocab_mismatch=True), sampling)
    text = chat_prompt_text(backend.tokenizer, "What is 2+3?")
    samples = backend.handoff([chat_prompt_ids(backend.tokenizer, "What is 2+3?")] * 2, [0, 1], [text] * 2)
    for s in samples:
        assert len(s.authorship_mask) == len(s.token_ids) > 0
        assert s.authorship_mask[0] == 1


def test_vllm_backend_without_vllm_fails_with_one_clear_error(tiny_dir, monkeypatch):
    monkeypatch.setitem(sys.modules, "vllm", None)  # `import vllm` fails, installed or not
    with pytest.raises(TandemError) as err:
        EvalBackend(EngineSettings(tiny_dir, backend="vllm")).backend("senior")
    assert str(err.value).startswith(VLLM_MISSING)
