"""The transfer reward as RLTR defines it (`partner_reward.preset=rltr`, `kind=transfer`'s default), as a specification.

- RLTR's draw: one fraction per response, uniform over the request keys the trainers use
  (Kolmogorov-Smirnov and a 10-bin chi-square at alpha = 0.001, fixed keys), replayed per key.
- RLTR's cut is floor(f * n) tokens wherever the answer is: a response that opens with its answer is
  cut at floor(f * n), and shows it; a gold too short to locate (a single digit) still gets its
  receiver call; a cut of 0 tokens is continued from the question alone.
- The receiver may write the writer's whole budget (`receiver_budget=full`), or what the prefix
  left (`rest`); the embedded trainer and HF TRL's reward function hand the receiver those caps.
- The project's earlier variant, `TransferConfig(**PROJECT_VARIANT)`, plans and scores bit for bit as
  the code before the options did (`old_plan_transfer` below is that code, verbatim in substance).
- `preset` follows `kind`; a preset of the other kind, and a bad option, are refused in one line
  naming the key.
"""

from __future__ import annotations

import math
from collections import Counter
from types import SimpleNamespace

import pytest

from tandem.errors import TandemError
from tandem.io.config_files import load_config
from tandem.models.loading import load_tokenizer
from tandem.process.coins import request_key
from tandem.rewards.partner_config import PartnerRewardConfig
from tandem.rewards.transfer_config import PROJECT_VARIANT, TransferConfig
from tandem.rewards.transfer_cut import NO_ROOM, UNDETERMINED, Cut, transfer_cut
from tandem.rewards.transfer_reward import (
    TransferPlan,
    _continuation_key,
    drawn_fraction,
    fractions_for,
    plan_transfer,
    run_transfer,
    score_transfer,
    within_cap,
)
from tandem.rollout.contract import Rollout
from tandem.rollout.sampling import SamplingConfig
from tandem_app.task import generate_problems

RLTR = TransferConfig()
VARIANT = TransferConfig(**PROJECT_VARIANT)


def old_plan_transfer(cfg, tokenizer, prompts, responses, golds, request_keys, budget) -> TransferPlan:
    """`plan_transfer` before the named options (issue 63): the leak-free cut, both skips, the rest of the budget."""
    cuts = [[transfer_cut(ids, gold, f, tokenizer) for f in fractions_for(cfg, key)]
            for ids, gold, key in zip(responses, golds, request_keys)]
    todo = [(i, j * cfg.samples + s, c) for i, row in enumerate(cuts) for j, c in enumerate(row) if c.usable
            for s in range(cfg.samples)]
    return TransferPlan(cuts, todo, [prompts[i] + responses[i][: c.tokens] for i, _, c in todo],
                        [max(1, budget - c.tokens) for _, _, c in todo],
                        [_continuation_key(request_keys[i], k) for i, k, _ in todo])


def train_keys(n: int) -> list[int]:
    """Request keys as the trainers make them (`train/<step>/<problem>`, one per group member)."""
    return [request_key(f"train/{k // 8}/p{k % 97}", k % 8) for k in range(n)]


class ScriptedReceiver:
    """A `RolloutBackend` that writes `\\boxed{gold}` after any context, recording each call's cap and size."""

    def __init__(self, tok, gold: str):
        self.tokenizer, self.calls = tok, []
        self.ids = tok(f" so \\boxed{{{gold}}}.", add_special_tokens=False)["input_ids"]

    def generate(self, prompts, sampling, request_keys, solo=False):
        self.calls.append((len(prompts), sampling.max_new_tokens, solo))
        return [Rollout(list(p), list(self.ids), [1] * len(self.ids), "", "stop") for p in prompts]


def _grade(text: str, gold: str) -> float:
    return float(f"\\boxed{{{gold}}}" in text)


def _toy(tok, n: int = 40):
    """Real worked solutions of the toy task, single-digit golds included, and one that opens with its answer."""
    problems = generate_problems("train", n, seed=0)
    responses = [tok(p.solution, add_special_tokens=False)["input_ids"] for p in problems]
    golds = [p.answer for p in problems]
    responses.append(tok(f"{golds[0]} in all. The answer is \\boxed{{{golds[0]}}}.", add_special_tokens=False)["input_ids"])
    golds.append(golds[0])
    return [[1, 2, 3]] * len(responses), responses, golds


# --- RLTR's draw ------------------------------------------------------------------------------------

def test_the_draw_is_uniform_over_the_trainers_request_keys():
    n = 5000
    draws = sorted(drawn_fraction(k) for k in train_keys(n))
    assert all(0.0 < d < 1.0 for d in draws)
    ks = max(max((i + 1) / n - d, d - i / n) for i, d in enumerate(draws))
    assert ks < 1.95 / math.sqrt(n)  # KS critical value at alpha = 0.001 (asymptotic)
    bins = Counter(min(9, int(d * 10)) for d in draws)
    chi2 = sum((bins[b] - n / 10) ** 2 / (n / 10) for b in range(10))
    assert chi2 < 27.88  # chi-square, 9 degrees of freedom, alpha = 0.001
    assert [drawn_fraction(k) for k in train_keys(50)] == [drawn_fraction(k) for k in train_keys(50)]


def test_under_rltr_every_cut_is_the_floor_of_its_drawn_fraction(tiny_dir):
    tok = load_tokenizer(tiny_dir)
    prompts, responses, golds = _toy(tok)
    keys = train_keys(len(responses))
    plan = plan_transfer(RLTR, tok, prompts, responses, golds, keys, budget=82)
    for ids, row, key in zip(responses, plan.cuts, keys):
        (cut,) = row
        assert cut == Cut(int(drawn_fraction(key) * len(ids)), drawn_fraction(key), int(drawn_fraction(key) * len(ids)))
        assert cut.usable and not cut.moved_back
    assert len(plan.todo) == len(responses)  # nothing skipped


# --- no rule about where the answer appears, no skipped golds ------------------------------------

def test_a_response_that_opens_with_its_answer_is_cut_at_the_floor_under_rltr(tiny_dir):
    tok = load_tokenizer(tiny_dir)
    ids = tok("42 apples in all. The answer is \\boxed{42}.", add_special_tokens=False)["input_ids"]
    plan = plan_transfer(TransferConfig(cuts=(0.5,)), tok, [[1]], [ids], ["42"], [7], budget=82)
    (cut,) = plan.cuts[0]
    assert (cut.tokens, cut.why_none, cut.moved_back) == (len(ids) // 2, "", False)
    assert "42" in tok.decode(ids[: cut.tokens], skip_special_tokens=True)  # the receiver is shown the answer
    assert plan.contexts == [[1] + ids[: len(ids) // 2]]
    # the project's variant moves it back to 0 tokens and skips it
    old = plan_transfer(TransferConfig(cuts=(0.5,), **PROJECT_VARIANT), tok, [[1]], [ids], ["42"], [7], budget=82)
    assert old.cuts[0][0].why_none == NO_ROOM and old.todo == []


@pytest.mark.parametrize("skip", [False, True])
def test_a_single_digit_gold_gets_its_receiver_call_unless_skip_undetermined(tiny_dir, skip):
    tok = load_tokenizer(tiny_dir)
    ids = tok("3 + 4 = 7 apples. The answer is \\boxed{7}.", add_special_tokens=False)["input_ids"]
    receiver = ScriptedReceiver(tok, "7")
    cfg = TransferConfig(cuts=(0.5,), skip_undetermined=skip)
    got = run_transfer(cfg, receiver, tok, [[1]], [ids], ["7"], [11], SamplingConfig(max_new_tokens=82), 82, _grade)
    if skip:  # R_transfer 0, no call, counted as undetermined
        assert receiver.calls == [] and got.scores == [0.0]
        assert got.metrics()["transfer/undetermined_frac"] == 1.0
    else:
        assert receiver.calls == [(1, 82, True)] and got.scores == [1.0]
        assert got.cuts[0][0] == Cut(len(ids) // 2, 0.5, len(ids) // 2)
        assert got.metrics()["transfer/undetermined_frac"] == 0.0


def test_a_cut_of_no_token_is_continued_from_the_question_unless_skip_no_room(tiny_dir):
    tok = load_tokenizer(tiny_dir)
    ids = tok("\\boxed{42}", add_special_tokens=False)["input_ids"]
    f = 0.5 / len(ids)  # floor(f * n) = 0
    plan = plan_transfer(TransferConfig(cuts=(f,)), tok, [[1, 2]], [ids], ["42"], [3], budget=82)
    assert plan.cuts[0][0] == Cut(0, f, 0) and plan.contexts == [[1, 2]] and plan.caps == [82]
    skipped = plan_transfer(TransferConfig(cuts=(f,), skip_no_room=True), tok, [[1, 2]], [ids], ["42"], [3], 82)
    assert skipped.cuts[0][0].why_none == NO_ROOM and skipped.todo == []


def test_before_answer_without_the_skip_leaves_an_undetermined_gold_at_the_floor(tiny_dir):
    tok = load_tokenizer(tiny_dir)
    ids = tok("3 + 4 = 7 apples. The answer is \\boxed{7}.", add_special_tokens=False)["input_ids"]
    cfg = TransferConfig(cuts=(0.5,), cut_rule="before_answer")
    assert plan_transfer(cfg, tok, [[1]], [ids], ["7"], [1], 82).cuts[0][0] == Cut(len(ids) // 2, 0.5, len(ids) // 2)


# --- the receiver's budget ------------------------------------------------------------------------

@pytest.mark.parametrize("budget_rule", ["full", "rest"])
def test_the_receivers_cap_is_the_whole_budget_or_its_rest(tiny_dir, budget_rule):
    tok = load_tokenizer(tiny_dir)
    prompts, responses, golds = _toy(tok, 12)
    cfg = TransferConfig(receiver_budget=budget_rule, samples=2)
    plan = plan_transfer(cfg, tok, prompts, responses, golds, train_keys(len(responses)), budget=82)
    want = [82 if budget_rule == "full" else max(1, 82 - c.tokens) for _, _, c in plan.todo]
    assert plan.caps == want and len(plan.caps) == 2 * len(responses)
    receiver = ScriptedReceiver(tok, "0")
    run_transfer(cfg, receiver, tok, prompts, responses, golds, train_keys(len(responses)),
                 SamplingConfig(max_new_tokens=82), 82, _grade)
    assert receiver.calls == [(len(plan.todo), max(want), True)]  # one call at the largest cap


def test_hf_trls_reward_function_hands_the_receiver_the_sections_caps(tiny_dir):
    from hf_grpo.rewards import transfer_reward_function

    tok = load_tokenizer(tiny_dir)
    prompts, responses, golds = _toy(tok, 6)
    keys = train_keys(len(responses))
    rows = [Rollout(p, r, [1] * len(r), "", "stop", request_key=k) for p, r, k in zip(prompts, responses, keys)]
    for cfg in (RLTR, VARIANT):
        receiver = ScriptedReceiver(tok, "0")
        rollout = SimpleNamespace(partner_reward=PartnerRewardConfig(kind="transfer", weight=0.5, transfer=cfg),
                                  receiver=receiver, engine=SimpleNamespace(tokenizer=tok),
                                  sampling=SamplingConfig(max_new_tokens=82))
        fn = transfer_reward_function(rollout, verifier=_grade)
        got = fn([""] * len(rows), rows, golds)
        plan = plan_transfer(cfg, tok, prompts, responses, golds, keys, 82)
        assert receiver.calls == [(len(plan.todo), max(plan.caps), True)]
        assert len(got) == len(rows)
    assert max(plan.caps) < 82  # the variant: the rest of the budget; RLTR above: 82


@pytest.mark.parametrize("budget_rule", ["full", "rest"])
def test_the_embedded_trainer_hands_the_receiver_the_sections_caps(tiny_dir, tmp_path, monkeypatch, budget_rule):
    import tandem_app.train.rollout_batch as rollout_batch
    from test_train_resume import _cfg
    from tandem_app.train.grpo_trainer import GRPOTrainer

    caps: list[int] = []
    build = rollout_batch.build_backend

    def recording(*a, **k):
        backend = build(*a, **k)
        generate = backend.generate
        backend.generate = lambda prompts, sampling, *rest, **kw: caps.append(sampling.max_new_tokens) or generate(
            prompts, sampling, *rest, **kw)
        return backend

    monkeypatch.setattr(rollout_batch, "build_backend", recording)
    partner = PartnerRewardConfig(kind="transfer", weight=0.5, transfer=TransferConfig(receiver_budget=budget_rule))
    cfg = _cfg(tiny_dir, tmp_path / "run", method="grpo", partner_reward=partner)
    trainer = GRPOTrainer(cfg, reward_fn=lambda text, gold: 1.0, progress=False)
    batch = trainer.rollout(0)
    budget = cfg.sampling.max_new_tokens
    assert caps, "the receiver was not called"
    if budget_rule == "full":
        assert caps == [budget]
    else:
        lengths = [len(r) for r in batch["response_token_lists"]]
        assert caps[0] == max(max(1, budget - int(drawn_fraction(k) * n))
                              for k, n in zip(_step_keys(trainer, cfg), lengths))


def _step_keys(trainer, cfg) -> list[int]:
    """The request keys step 0's rollouts were written with (as `tandem_app.train.rollout_batch.GroupSampler`)."""
    from tandem_app.train.rollout_batch import batch_indices

    problems = trainer._sample.problems
    idx = batch_indices(len(problems), cfg.prompts_per_step, cfg.seed, 0)
    return [request_key(f"train/0/{problems[i].id}", j) for i in idx for j in range(cfg.group_size)]


# --- the project's earlier variant, bit for bit ----------------------------------------------------

@pytest.mark.parametrize("cuts, samples", [((), 1), ((), 2), ((0.3, 0.6), 2), ((0.05, 0.95), 1)])
def test_the_named_options_reproduce_the_earlier_plan_and_result_bit_for_bit(tiny_dir, cuts, samples):
    tok = load_tokenizer(tiny_dir)
    prompts, responses, golds = _toy(tok)
    keys = train_keys(len(responses))
    cfg = TransferConfig(cuts=cuts, samples=samples, **PROJECT_VARIANT)
    new, old = plan_transfer(cfg, tok, prompts, responses, golds, keys, 82), old_plan_transfer(
        cfg, tok, prompts, responses, golds, keys, 82)
    assert new == old
    assert any(c.why_none == UNDETERMINED for row in new.cuts for c in row)  # single digits were in the case
    assert any(c.why_none == NO_ROOM for row in new.cuts for c in row)
    receiver = ScriptedReceiver(tok, golds[0])
    got = run_transfer(cfg, receiver, tok, prompts, responses, golds, keys, SamplingConfig(max_new_tokens=82), 82,
                       _grade)
    # the earlier run: one call at the largest remaining cap, each continuation then cut to its own
    shared = receiver.generate(old.contexts, SamplingConfig(max_new_tokens=max(old.caps)), old.keys, solo=True)
    written = [within_cap(w, cap, tok) for w, cap in zip(shared, old.caps)]
    want = score_transfer(cfg, old, tok, responses, golds, written, _grade, sum(len(w.token_ids) for w in shared), 1)
    assert got == want and receiver.calls[0] == receiver.calls[1]


def test_rltrs_plan_differs_from_the_variants_where_the_rules_bite(tiny_dir):
    tok = load_tokenizer(tiny_dir)
    prompts, responses, golds = _toy(tok)
    keys = train_keys(len(responses))
    rltr, variant = (plan_transfer(c, tok, prompts, responses, golds, keys, 82) for c in (RLTR, VARIANT))
    assert len(rltr.todo) == len(responses) > len(variant.todo)
    assert set(rltr.caps) == {82} and len(set(variant.caps)) > 1


# --- preset and kind; refusals --------------------------------------------------------------------

def test_the_preset_follows_the_kind_and_rltrs_defaults_are_the_sections():
    assert PartnerRewardConfig().preset_name == "rlt"
    transfer = PartnerRewardConfig(kind="transfer", weight=0.5)
    assert transfer.preset_name == "rltr" == PartnerRewardConfig(kind="transfer", weight=0.5, preset="rltr").preset_name
    assert transfer.preset == ""  # kept as given: written back and read with another kind, it stays valid
    assert transfer.transfer == RLTR and RLTR.is_rltr and not VARIANT.is_rltr
    assert (RLTR.cut_rule, RLTR.skip_undetermined, RLTR.skip_no_room, RLTR.receiver_budget) == (
        "uniform", False, False, "full")
    read = load_config(PartnerRewardConfig, None, overrides=[
        "kind=transfer", "weight=0.5", *(f"transfer.{k}={str(v).lower()}" for k, v in PROJECT_VARIANT.items())])
    assert read.transfer == VARIANT


def test_the_likelihood_kind_refuses_a_transfer_rule_and_has_no_coefficients_under_transfer():
    with pytest.raises(TandemError, match="read by kind=transfer only"):
        PartnerRewardConfig(weight=1.0, transfer=TransferConfig(cut_rule="before_answer"))
    with pytest.raises(TandemError, match="kind=transfer has no likelihood-score coefficients"):
        PartnerRewardConfig(kind="transfer", weight=1.0).coefficients()
