"""RLTR's transfer reward (`partner_reward.kind=transfer`) on the embedded trainer, as a specification.

- The project's leak-free cut (`cut_rule=before_answer`) never shows the gold answer, not even its
  leading digits, on the toy task's real worked solutions for many golds and every fraction; a
  gold too short to locate is not cut. (RLTR's own rules, the default: tests/test_transfer_rltr.py.)
- reward = verifier_weight * verifier + weight * mean(receiver verifier scores); under the
  project's variant (`PROJECT_VARIANT`) a response with no room for a cut scores 0 and costs no
  receiver call.
- The receiver writes a step's continuations in one batched call at the largest remaining budget,
  each then cut to its own: exact, because the reference engine gives a keyed request the same
  tokens in any batch and under any cap, and the batched reward equals the one-call-per-budget one.
- `tandem-rlvr train ... partner_reward.kind=transfer` runs 2 steps on the tiny model and logs
  the receiver's accuracy, tokens and the cuts used; the batch the actor's loss reads holds the
  writer's tokens only.
- Bad input is one line each, before any work; verl refuses the kind in one line (HF TRL runs it:
  tests/test_hf_trl.py).
"""

from __future__ import annotations

import json
import re
from dataclasses import replace

import pytest

from tandem.errors import TandemError
from tandem.models.loading import load_tokenizer
from tandem.rewards.partner_config import PartnerRewardConfig
from tandem.rollout.contract import Rollout
from tandem.rewards.transfer_config import PROJECT_VARIANT, TransferConfig
from tandem.rewards.transfer_cut import NO_ROOM, UNDETERMINED, Cut, transfer_cut
from tandem.rewards.transfer_reward import (
    TransferResult,
    combined,
    drawn_fraction,
    merged_result,
    result_record,
    run_transfer,
    transfer_reward,
    transfer_score,
)
from tandem.rollout.sampling import SamplingConfig
from tandem_app.task import generate_problems

FRACTIONS = (0.1, 0.3, 0.5, 0.7, 0.9, 0.99)


def first_whole_number(text: str, digits: str) -> int | None:
    """Where `digits` first stands as a whole number in `text` (an independent reading, not the rule's)."""
    m = re.search(rf"(?<![\d.]){digits}(?![\d])", text)
    return m.start() if m else None


def test_the_cut_never_shows_the_answer_or_its_leading_digits(tiny_dir):
    tok = load_tokenizer(tiny_dir)
    checked = undetermined = moved = 0
    for p in generate_problems("train", 300, seed=0):
        ids = tok(p.solution, add_special_tokens=False)["input_ids"]
        full = tok.decode(ids, skip_special_tokens=True)
        for f in FRACTIONS:
            cut = transfer_cut(ids, p.answer, f, tok)
            if len(p.answer.lstrip("-")) < 2:  # a single digit shows anywhere: never located, never cut
                assert cut.why_none == UNDETERMINED and cut.tokens == 0
                undetermined += 1
                continue
            assert cut.tokens <= int(f * len(ids))
            if p.answer.startswith("-"):
                continue  # a negative gold's sign rules are tandem_eval.core.leak's (tests/test_eval_leak.py)
            shown = tok.decode(ids[: cut.tokens], skip_special_tokens=True)
            at = first_whole_number(full, p.answer)
            assert at is not None and full.startswith(shown)
            assert len(shown) <= at, (p.answer, f, shown[-20:])  # ends before the answer's first digit
            checked += 1
            moved += cut.moved_back
    assert checked > 1000 and moved > 50  # many golds, and the rule did move cuts back


def test_a_response_that_opens_with_the_answer_has_no_room(tiny_dir):
    tok = load_tokenizer(tiny_dir)
    ids = tok("42 apples in all. The answer is \\boxed{42}.", add_special_tokens=False)["input_ids"]
    cut = transfer_cut(ids, "42", 0.5, tok)
    assert (cut.tokens, cut.why_none, cut.usable) == (0, NO_ROOM, False)


def test_reward_arithmetic():
    assert transfer_score([1.0, 0.0, 1.0, 1.0]) == 0.75
    assert transfer_score([]) == 0.0
    assert transfer_reward(1.0, [1.0, 0.0], weight=0.5) == 1.25
    assert transfer_reward(0.0, [1.0, 1.0], weight=2.0, verifier_weight=0.0) == 2.0
    assert combined(1.0, 0.25, weight=4.0, verifier_weight=0.5) == 1.5


def test_rltr_draw_is_uniform_in_the_open_interval_and_replays():
    draws = [drawn_fraction(k) for k in range(2000)]
    assert all(0.0 < d < 1.0 for d in draws) and draws == [drawn_fraction(k) for k in range(2000)]
    assert 0.45 < sum(draws) / len(draws) < 0.55


class ScriptedReceiver:
    """A `RolloutBackend` that finishes each prefix with the rest of the true solution or a wrong answer."""

    def __init__(self, tok, rests: dict[tuple[int, ...], list[int]], right: bool):
        self.tokenizer, self.rests, self.right, self.calls = tok, rests, right, []

    def generate(self, prompts, sampling, request_keys, solo=False):
        self.calls.append((len(prompts), sampling.max_new_tokens, list(request_keys), solo))
        wrong = self.tokenizer("The answer is \\boxed{1}.", add_special_tokens=False)["input_ids"]
        out = []
        for p in prompts:
            ids = self.rests[tuple(p)] if self.right else wrong
            out.append(Rollout(list(p), ids, [1] * len(ids), "", "stop"))
        return out


def _grade(text: str, gold: str) -> float:
    return float(f"\\boxed{{{gold}}}" in text)


@pytest.mark.parametrize("right", [True, False])
def test_run_transfer_averages_the_receiver_grades_and_skips_responses_with_no_room(tiny_dir, right):
    tok = load_tokenizer(tiny_dir)
    problems = [p for p in generate_problems("train", 40, seed=0) if len(p.answer) >= 2][:3]
    responses = [tok(p.solution, add_special_tokens=False)["input_ids"] for p in problems]
    responses.append(tok(f"{problems[0].answer} in all.", add_special_tokens=False)["input_ids"])  # no room
    golds = [p.answer for p in problems] + [problems[0].answer]
    prompts = [[1, 2, 3]] * len(responses)
    cfg = TransferConfig(cuts=(0.3, 0.6), samples=2, **PROJECT_VARIANT)
    cuts = {(i, f): transfer_cut(r, g, f, tok) for i, (r, g) in enumerate(zip(responses, golds)) for f in cfg.cuts}
    rests = {tuple(prompts[i] + responses[i][: c.tokens]): responses[i][c.tokens:] for (i, _), c in cuts.items()}
    receiver = ScriptedReceiver(tok, rests, right)
    got = run_transfer(cfg, receiver, tok, prompts, responses, golds, list(range(len(responses))),
                       SamplingConfig(max_new_tokens=200), 200, _grade)
    assert got.scores == [float(right)] * 3 + [0.0]  # the mean grade; no room: 0, untested
    assert len(got.receiver_scores) == 3 * 2 * 2  # responses with room x cuts x samples
    assert all(solo for *_, solo in receiver.calls)  # the receiver writes alone
    keys = [k for _, _, ks, _ in receiver.calls for k in ks]
    assert len(set(keys)) == len(keys)  # every continuation has its own sampling key
    assert got.metrics()["transfer/no_room_frac"] == pytest.approx(2 / 8)
    assert got.metrics()["transfer/receiver_acc"] == float(right)


# --- one receiver call per step ------------------------------------------------------------------

def _receiver_setup(tiny_dir, n: int = 12):
    """A float32 solo engine (the trainer's dtype) and `n` plain prompts with a part of their solution."""
    from tandem.reference.engine import TandemEngine
    from tandem.models.loading import load_model

    tok = load_tokenizer(tiny_dir)
    engine = TandemEngine(load_model(tiny_dir), None, tok)
    problems = [p for p in generate_problems("train", 60, seed=0) if len(p.answer) >= 2][:n]
    return tok, engine, problems


def _frequent_token(engine, prompts, keys) -> int:
    """A token the untrained model writes often: used as an EOS so that some continuations stop early."""
    from collections import Counter

    out = engine.generate(prompts, SamplingConfig(temperature=1.0, max_new_tokens=48, seed=3), keys, solo=True)
    return Counter(t for r in out for t in r.token_ids).most_common(1)[0][0]


def test_a_keyed_request_writes_the_same_tokens_in_any_batch_and_under_any_cap(tiny_dir):
    from tandem.rewards.transfer_reward import within_cap

    tok, engine, problems = _receiver_setup(tiny_dir)
    prompts = [tok(p.prompt)["input_ids"] + tok(p.solution, add_special_tokens=False)["input_ids"][: 4 * i]
               for i, p in enumerate(problems)]  # contexts of many lengths, as cut prefixes are
    keys = list(range(700, 700 + len(prompts)))
    eos = _frequent_token(engine, prompts, keys)
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=96, seed=3, eos_token_ids=(eos,))
    big = engine.generate(prompts, sampling, keys, solo=True)
    assert {r.finish_reason for r in big} == {"stop", "length"}  # both endings are exercised
    mixed = [5, 0, 9, 2]  # another batch: fewer rows, another order, another longest prompt
    for cap in (3, 17, 40):
        small = replace(sampling, max_new_tokens=cap)
        alone = [engine.generate([p], small, [k], solo=True)[0] for p, k in zip(prompts, keys)]
        other = engine.generate([prompts[i] for i in mixed], small, [keys[i] for i in mixed], solo=True)
        for i, (a, b) in enumerate(zip(alone, big)):
            assert a.token_ids == b.token_ids[:cap]  # alone under a small cap == the prefix in the big batch
            cut = within_cap(b, cap, tok)  # and cutting the big call's rollout gives the small call's, exactly
            assert (cut.token_ids, cut.text, cut.finish_reason) == (a.token_ids, a.text, a.finish_reason)
            assert cut.senior_logprobs == pytest.approx(a.senior_logprobs, abs=1e-5)
        for i, r in zip(mixed, other):
            assert (r.token_ids, r.finish_reason) == (alone[i].token_ids, alone[i].finish_reason)


def per_budget_transfer(cfg, receiver, tok, prompts, responses, golds, keys, sampling, budget, reward_fn):
    """The reference: one receiver call per distinct remaining budget (the code before batching)."""
    from tandem.rewards.transfer_reward import _continuation_key, fractions_for

    cuts = [[transfer_cut(ids, g, f, tok) for f in fractions_for(cfg, k)] for ids, g, k in zip(responses, golds, keys)]
    groups: dict[int, list] = {}
    for i, row in enumerate(cuts):
        for j, c in enumerate(row):
            for s in range(cfg.samples) if c.usable else ():
                groups.setdefault(max(1, budget - c.tokens), []).append((i, j * cfg.samples + s, c))
    per, tokens = [[] for _ in responses], 0
    for cap, items in sorted(groups.items()):
        got = receiver.generate([prompts[i] + responses[i][: c.tokens] for i, _, c in items],
                                replace(sampling, max_new_tokens=cap),
                                [_continuation_key(keys[i], k) for i, k, _ in items], solo=True)
        for (i, _, c), r in zip(items, got):
            per[i].append(reward_fn(tok.decode(responses[i][: c.tokens] + r.token_ids, skip_special_tokens=True),
                                    golds[i]))
            tokens += len(r.token_ids)
    scores = [transfer_score(s + [0.0] * sum(not c.usable for c in row) * cfg.samples) for s, row in zip(per, cuts)]
    return scores, per, tokens, len(groups)


class CountingReceiver:
    """The engine, with its calls counted."""

    def __init__(self, engine):
        self.engine, self.tokenizer, self.context_length, self.calls = engine, engine.tokenizer, \
            engine.context_length, []

    def generate(self, prompts, sampling, request_keys, solo=False):
        self.calls.append((len(prompts), sampling.max_new_tokens))
        return self.engine.generate(prompts, sampling, request_keys, solo=solo)


def test_one_batched_receiver_call_scores_exactly_as_one_call_per_budget(tiny_dir):
    tok, engine, problems = _receiver_setup(tiny_dir, n=8)
    prompts = [tok(p.prompt)["input_ids"] for p in problems]
    responses = [tok(p.solution, add_special_tokens=False)["input_ids"] for p in problems]
    golds, keys = [p.answer for p in problems], list(range(40, 40 + len(problems)))
    eos = _frequent_token(engine, prompts, keys)
    sampling = SamplingConfig(temperature=1.0, max_new_tokens=64, seed=3, eos_token_ids=(eos,))
    graded: dict[str, list[str]] = {"batched": [], "reference": []}

    def grader(name):  # a verifier whose grade depends on every character: any token that differs shows
        return lambda text, gold: graded[name].append(text) or float(len(text) % 3 == 0)

    cfg = TransferConfig(samples=2, **PROJECT_VARIANT)  # the draw, under `rest`: nearly one budget per response
    ref_scores, ref_per, ref_tokens, ref_calls = per_budget_transfer(cfg, engine, tok, prompts, responses, golds,
                                                                     keys, sampling, 64, grader("reference"))
    receiver = CountingReceiver(engine)
    got = run_transfer(cfg, receiver, tok, prompts, responses, golds, keys, sampling, 64, grader("batched"))
    assert ref_calls > 3 and receiver.calls == [(got.metrics()["transfer/continuations"], 64 - min(
        c.tokens for row in got.cuts for c in row if c.usable))]  # one call, at the largest remaining budget
    assert got.scores == ref_scores and sorted(got.receiver_scores) == sorted(s for p in ref_per for s in p)
    assert sorted(graded["batched"]) == sorted(graded["reference"])  # the very same texts were graded
    assert got.receiver_tokens == ref_tokens < got.receiver_tokens_decoded  # kept after the cut < decoded
    assert got.metrics()["transfer/receiver_tokens_decoded"] == got.receiver_tokens_decoded
    assert got.metrics()["transfer/receiver_calls"] == 1


def test_a_prefix_that_would_overrun_the_receivers_context_at_the_shared_cap_waits_for_its_own_call():
    from tandem.rewards.transfer_reward import shared_calls

    assert shared_calls([10, 30, 20], [50, 50, 50], limit=None) == [(30, [0, 1, 2])]
    # row 0's context (90) + the shared cap (30) > 100: it waits for a call at its own cap, 10
    assert shared_calls([10, 30, 20], [90, 50, 70], limit=100) == [(30, [1, 2]), (10, [0])]
    assert shared_calls([], [], limit=100) == []


# --- bad input: one line each, before any work -------------------------------------------------

@pytest.mark.parametrize("transfer, says", [
    (dict(cuts=(0.0,)), "outside (0, 1)"), (dict(cuts=(1.0,)), "outside (0, 1)"),
    (dict(cuts=(float("nan"),)), "outside (0, 1)"), (dict(samples=0), "samples must be an integer >= 1"),
    (dict(cut_rule="random"), "partner_reward.transfer.cut_rule='random' is unknown; choose uniform"),
    (dict(skip_undetermined="yes"), "partner_reward.transfer.skip_undetermined must be true or false"),
    (dict(skip_no_room=1), "partner_reward.transfer.skip_no_room must be true or false"),
    (dict(receiver_budget="half"), "partner_reward.transfer.receiver_budget='half' is unknown; choose full"),
])
def test_bad_transfer_settings_are_refused_in_one_line(transfer, says):
    with pytest.raises(TandemError, match=re.escape(says)) as e:
        TransferConfig(**transfer)
    assert "\n" not in str(e.value)


@pytest.mark.parametrize("kw, says", [
    (dict(kind="transfer"), "weight=0 adds nothing"),
    (dict(kind="transfer", weight=1.0, student="m"), "does not read student"),
    (dict(kind="likelihood", weight=1.0, transfer=TransferConfig(samples=2)), "read by kind=transfer only"),
    (dict(kind="rltr", weight=1.0), "choose likelihood or transfer"),
    (dict(preset="rltr"), "preset=rltr is RLTR's transfer reward; set partner_reward.kind=transfer"),
    (dict(kind="transfer", weight=1.0, preset="rlt"), "preset=rlt names the likelihood score's coefficients"),
    (dict(kind="transfer", weight=1.0, preset="rlt2"), "preset='rlt2' is unknown; choose one of rlt, rltr"),
])
def test_bad_partner_settings_are_refused_in_one_line(kw, says):
    with pytest.raises(TandemError, match=re.escape(says)) as e:
        PartnerRewardConfig(**kw)
    assert "\n" not in str(e.value)


def test_a_backend_that_cannot_continue_the_receiver_refuses_the_kind_in_one_line(monkeypatch):
    from tandem import trainers

    lacking = trainers.Trainer("other", "a backend", "a backend", replace(
        trainers.REGISTRY["verl"].capabilities, partner_reward_kinds=("likelihood",)))
    monkeypatch.setitem(trainers.REGISTRY, "other", lacking)
    with pytest.raises(TandemError, match="HF TRL over the reference engine and verl; a backend cannot") as e:
        trainers.require_partner_reward("other", PartnerRewardConfig(kind="transfer", weight=1.0))
    assert "\n" not in str(e.value)
    for trainer in ("embedded", "hf_trl", "verl"):
        trainers.require_partner_reward(trainer, PartnerRewardConfig(kind="transfer", weight=1.0))


def test_a_receiver_of_another_vocabulary_is_refused_before_any_step(tiny_dir, tmp_path):
    from test_distill import _other_vocab
    from test_train_resume import _cfg, _text_reward
    from tandem_app.train.grpo_trainer import GRPOTrainer

    other = _other_vocab(tiny_dir, tmp_path)
    partner = PartnerRewardConfig(kind="transfer", weight=1.0, transfer=TransferConfig(receiver=str(other)))
    with pytest.raises(TandemError, match="partner_reward.transfer.receiver .*vocabularies differ") as e:
        GRPOTrainer(_cfg(tiny_dir, tmp_path / "run", method="grpo", partner_reward=partner), reward_fn=_text_reward,
                    progress=False)
    assert "\n" not in str(e.value) and not (tmp_path / "run" / "metrics.jsonl").exists()


# --- the embedded trainer -----------------------------------------------------------------------

def test_two_step_train_logs_the_transfer_and_the_loss_reads_the_writer_only(tiny_dir, tmp_path):
    from tandem_app.commands.cli import main
    from test_train_resume import _cfg, _text_reward
    from tandem_app.train.grpo_trainer import GRPOTrainer

    out = tmp_path / "run"
    assert main(["train", f"model={tiny_dir}", f"out={out}", "method=grpo", "steps=2", "prompts_per_step=2",
                 "group_size=2", "sampling.max_new_tokens=16", "val_every=0", "n_val_problems=2",
                 "partner_reward.kind=transfer", "partner_reward.weight=0.5", "partner_reward.transfer.cuts=[0.5]",
                 "partner_reward.transfer.samples=2", "--no-progress"]) == 0
    rows = [json.loads(line) for line in (out / "metrics.jsonl").read_text().splitlines()]
    steps = [r for r in rows if "transfer/receiver_acc" in r]
    assert len(steps) == 2
    for r in steps:
        assert {"transfer/receiver_tokens", "transfer/cut_fraction_asked", "transfer/cut_fraction_used",
                "transfer/no_room_frac", "transfer/reward_mean"} <= set(r)
        assert r["transfer/cut_fraction_asked"] == pytest.approx(0.5)
        assert r["reward_with_partner_mean"] == pytest.approx(r["reward_mean"] + 0.5 * r["transfer/reward_mean"],
                                                              abs=1e-5)

    # the batch the update reads: only the writer's tokens, though the receiver wrote some
    partner = PartnerRewardConfig(kind="transfer", weight=0.5, transfer=TransferConfig(cuts=(0.5,), samples=2))
    trainer = GRPOTrainer(_cfg(tiny_dir, tmp_path / "spy", method="grpo", partner_reward=partner),
                          reward_fn=lambda text, gold: 1.0, progress=False)
    writer = trainer.engine.generate
    written = []
    trainer.engine.generate = lambda *a, **k: written.extend(writer(*a, **k)) or written[-len(a[0]):]
    batch = trainer.rollout(0)
    assert batch["response_token_lists"] == [r.token_ids for r in written]
    assert batch["response_mask"].sum() == sum(len(r.token_ids) for r in written)
    assert batch["partner_metrics"]["transfer/receiver_tokens"] > 0
    # every continuation graded 1 by this verifier: 1 + 0.5 * 1 where the response had a cut, 1 + 0 where not
    rewards = batch["token_level_rewards"].sum(-1).tolist()
    assert set(rewards) <= {1.0, 1.5} and 1.5 in rewards


def test_a_batchs_result_is_the_merge_of_its_responses_records():
    """verl hands each response's transfer to the trainer as plain JSON: the merge gives the batch's metrics."""
    one = TransferResult([0.5], [[Cut(3, 0.4, 4), Cut(0, 0.1, 0, NO_ROOM)]], [1.0, 0.0], 9, [10], 12, 2)
    two = TransferResult([1.0], [[Cut(5, 0.6, 6)]], [1.0], 4, [8], 4, 1)
    records = [json.loads(json.dumps(result_record(r))) for r in (one, two)]
    whole = merged_result(records)
    assert whole.scores == [0.5, 1.0] and whole.lengths == [10, 8]
    assert whole.cuts == [one.cuts[0], two.cuts[0]] and whole.receiver_scores == [1.0, 0.0, 1.0]
    assert (whole.receiver_tokens, whole.receiver_tokens_decoded, whole.receiver_calls) == (13, 16, 3)
    assert whole.metrics() == TransferResult([0.5, 1.0], [one.cuts[0], two.cuts[0]], [1.0, 0.0, 1.0], 13, [10, 8],
                                             16, 3).metrics()
    with pytest.raises(ValueError, match="one response"):
        result_record(whole)
