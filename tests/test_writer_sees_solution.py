"""The writer who sees the solution on the embedded trainer (`partner_reward.writer_sees_solution`).

Training rollouts are written from RLT's teacher prompt (question and solution) and the
update trains on it; validation keeps the plain prompt; the partner score's scorer reads the
plain prompt (its target context and, for a team, its log-probs of the response for the KL
terms); a problem without a solution is one line before any generation.
"""

from __future__ import annotations

from dataclasses import replace

import pytest
import torch

from tandem.reference.engine import TandemEngine
from tandem.errors import TandemError
from tandem.loss.logprobs import pad_right
from tandem.io.metric_log import PARTNER_SCORE
from tandem.rewards.partner_config import PartnerRewardConfig
from tandem.rewards.partner_score import partner_score, partner_terms, target_sequences
from tandem.rewards.solution_prompt import writer_prompt_ids
from tandem_app.train import grpo_trainer, rollout_batch
from tandem_app.train.grpo_trainer import GRPOTrainer
from tandem_app.train.train_config import TrainConfig

from test_partner_reward_training import recomputed
from test_train_resume import _cfg, _rows, _text_reward  # noqa: E402

SEES = PartnerRewardConfig(weight=1.0, target="solution", writer_sees_solution=True)


def _trainer(tiny_dir, out, method="tandem", **kw) -> GRPOTrainer:
    return GRPOTrainer(_cfg(tiny_dir, out, method=method, partner_reward=SEES, **kw), reward_fn=_text_reward,
                       progress=False)


@pytest.mark.parametrize("method", ["tandem", "grpo"])
def test_training_rollouts_read_the_writers_prompt_and_validation_the_plain_one(tiny_dir, tmp_path, monkeypatch,
                                                                               method):
    trainer = _trainer(tiny_dir, tmp_path / method, method=method, steps=1, n_val_problems=2)
    calls = []
    generate = TandemEngine.generate

    def spy(engine, prompts, *args, **kwargs):
        calls.append((engine is trainer.engine, [list(p) for p in prompts]))
        return generate(engine, prompts, *args, **kwargs)

    monkeypatch.setattr(TandemEngine, "generate", spy)
    batches = []
    sample = trainer._sample
    monkeypatch.setattr(trainer, "rollout", lambda step: batches.append(sample(step)) or batches[-1])
    trainer.train()
    train_calls = [p for is_train, p in calls if is_train]
    val_calls = [p for is_train, p in calls if not is_train]
    assert len(train_calls) == 1 and len(val_calls) == 2  # validation at step 0 and after the last step
    by_prompt = {tuple(p): q for p, q in zip(trainer.writer_prompts, trainer.train_problems)}
    for ids in train_calls[0]:
        problem = by_prompt[tuple(ids)]
        assert ids == writer_prompt_ids(trainer.tokenizer, problem.prompt, problem.solution)
    assert batches[0]["prompts"] == train_calls[0]  # the update is conditioned on what the writer read
    plain = [list(p) for p in grpo_trainer.prompt_ids_batch(trainer.tokenizer, trainer.val_problems)]
    assert all(p in plain for p in val_calls[0])


@pytest.mark.parametrize("method", ["tandem", "grpo"])
def test_the_score_reads_the_plain_prompt_as_the_formula_recomputed_from_scratch(tiny_dir, tmp_path, monkeypatch,
                                                                                method):
    trainer = _trainer(tiny_dir, tmp_path / "run", method=method)
    seen = {}
    partner_rewards = rollout_batch.partner_rewards

    def spy(cfg, scorer, tokenizer, prompts, rollouts, *args, **kwargs):
        seen["prompts"] = prompts
        return partner_rewards(cfg, scorer, tokenizer, prompts, rollouts, *args, **kwargs)

    monkeypatch.setattr(rollout_batch, "partner_rewards", spy)
    batch = trainer.rollout(0)
    problems = {q.id: q for q in trainer.train_problems}
    rows = [problems[i] for i in batch["index"]]
    plain = [grpo_trainer.prompt_ids_batch(trainer.tokenizer, [q])[0] for q in rows]
    assert seen["prompts"] == plain and batch["prompts"] != plain
    scorer = trainer.junior if method == "tandem" else trainer.base
    want = []
    for q, writer, p, ids in zip(rows, batch["prompts"], plain, batch["response_token_lists"]):
        context, scored = target_sequences(trainer.tokenizer, p, ids, q.solution, "solution")
        want.append((recomputed(scorer, context, scored), recomputed(trainer.senior, writer, ids),
                     recomputed(scorer, p, ids)))
    T, S = max(len(x[0]) for x in want), batch["responses"].shape[1]
    wrote = batch["authorship_mask"] if method == "tandem" else batch["response_mask"]
    terms = partner_terms(pad_right([x[0] for x in want], 0.0, torch.float64, T),
                          pad_right([[1] * len(x[0]) for x in want], 0, length=T).double(),
                          pad_right([x[1] for x in want], 0.0, torch.float64, S),
                          pad_right([x[2] for x in want], 0.0, torch.float64, S), wrote.double())
    score = partner_score(terms, SEES.coefficients())
    assert batch["partner_metrics"][PARTNER_SCORE] == pytest.approx(float(score.mean()), abs=1e-4)
    got = batch["token_level_rewards"].sum(-1).double() - batch["verifier_scores"].double()
    torch.testing.assert_close(got, score, rtol=0, atol=1e-4)


@pytest.mark.parametrize("method", ["tandem", "grpo"])
def test_two_steps_run_end_to_end_with_the_switch_on(tiny_dir, tmp_path, method):
    _trainer(tiny_dir, tmp_path / method, method=method, steps=2).train()
    rows = _rows(tmp_path / method)[1:]
    assert len(rows) == 2 and all(torch.isfinite(torch.tensor(r[PARTNER_SCORE])) for r in rows)
    assert all(r["reward_with_partner_mean"] == pytest.approx(r["reward_mean"] + r[PARTNER_SCORE], abs=1e-5) for r in rows)
    assert (tmp_path / method / "model" / "config.json").is_file()


def test_a_problem_without_a_solution_is_one_line_before_generation(tiny_dir, tmp_path, monkeypatch):
    made = grpo_trainer.generate_problems

    def blank_one(split, n, seed, task):
        problems = made(split, n, seed, task)
        return [replace(problems[0], solution=" "), *problems[1:]] if split == "train" else problems

    monkeypatch.setattr(grpo_trainer, "generate_problems", blank_one)
    monkeypatch.setattr(TandemEngine, "generate", lambda *a, **k: pytest.fail("generated before refusing"))
    with pytest.raises(TandemError, match=r"^training problem \S+: no reference solution, .*writer_sees_solution=false$"):
        _trainer(tiny_dir, tmp_path / "run")


def test_the_switch_needs_the_partner_score_on():
    with pytest.raises(TandemError, match=r"set partner_reward.weight > 0"):
        TrainConfig(model="m", out="o", partner_reward=replace(SEES, weight=0.0))
