"""The writer who sees the solution in Hugging Face TRL (`tandem_rollout_func(partner_reward=...)`).

A training batch is written from RLT's teacher prompt (question and solution) and TRL's loss
gets those prompt ids; evaluation keeps the plain prompt; the partner score reads the plain
prompt (a co-writing junior's log-probs of the response read again after it); a dataset
without solutions is refused when the rollout binds to the trainer.
"""

from __future__ import annotations

import math
import os

import pytest
import torch

trl = pytest.importorskip("trl")  # the main suite installs it ([dev] extra)
os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

from datasets import Dataset  # noqa: E402
from trl import GRPOConfig, GRPOTrainer  # noqa: E402

from hf_grpo import rewards  # noqa: E402
from hf_grpo.tandem_rollout import tandem_rollout_func  # noqa: E402
from tandem.errors import TandemError  # noqa: E402
from tandem.models.loading import load_model, load_tokenizer  # noqa: E402
from tandem.io.metric_log import PARTNER_SCORE  # noqa: E402
from tandem.rewards.partner_config import PartnerRewardConfig  # noqa: E402
from tandem.rewards.solution_prompt import writer_prompt_ids  # noqa: E402
from tandem_app.task import generate_problems  # noqa: E402

from test_partner_reward_training import recomputed  # noqa: E402

PROMPTS, G, MAX_NEW = 2, 4, 12
SEES = PartnerRewardConfig(weight=0.1, target="solution", writer_sees_solution=True)


def rows(n=PROMPTS, solution=True):
    return [{"prompt": [{"role": "user", "content": p.prompt}], "answer": p.answer,
             **({"solution": p.solution} if solution else {})} for p in generate_problems("train", n, 0)]


def senior_share_reward(completions, senior_fraction, **kwargs):
    return [float(f) for f in senior_fraction]


class Recording:
    """Wraps the rollout function and keeps what TRL gave it and got back."""

    def __init__(self, inner):
        self.inner, self.calls = inner, []

    def __call__(self, prompts, trainer):
        out = self.inner(prompts, trainer)
        self.calls.append((prompts, out))
        return out


def make_trainer(tiny_dir, tmp_path, rollout, data=None, steps=1):
    senior = load_model(tiny_dir)
    senior.requires_grad_(True)
    args = GRPOConfig(output_dir=str(tmp_path / "trl"), per_device_train_batch_size=PROMPTS * G, num_generations=G,
                      max_completion_length=MAX_NEW, report_to=[], use_cpu=True, save_strategy="no", seed=0,
                      bf16=False, max_steps=steps, logging_steps=1, disable_tqdm=True)
    inner = getattr(rollout, "inner", rollout)
    return GRPOTrainer(model=senior, reward_funcs=[senior_share_reward, inner.partner_reward_func()], args=args,
                       train_dataset=Dataset.from_list(data or rows()), processing_class=load_tokenizer(tiny_dir),
                       rollout_func=rollout)


@pytest.mark.parametrize("solo", [False, True], ids=["trl-scored-by-the-junior", "grpo-scored-by-the-base"])
def test_training_writes_from_the_solution_and_trls_loss_sees_that_prompt(tiny_dir, tmp_path, monkeypatch, solo):
    rollout = Recording(tandem_rollout_func(solo=solo, partner_reward=SEES))
    trainer = make_trainer(tiny_dir, tmp_path, rollout, steps=2)
    by_prompt = {r["prompt"][0]["content"]: r["solution"] for r in rows()}
    loss_prompts = []
    compute_loss = trainer._compute_loss

    def spy(model, inputs):
        loss_prompts.extend(ids[mask.bool()].tolist() for ids, mask in zip(inputs["prompt_ids"], inputs["prompt_mask"]))
        return compute_loss(model, inputs)

    monkeypatch.setattr(trainer, "_compute_loss", spy)
    trainer.train()
    tok = trainer.processing_class
    for prompts, out in rollout.calls:
        for prompt, ids, plain in zip(prompts, out["prompt_ids"], out["plain_prompt_ids"]):
            question = prompt[-1]["content"]
            assert ids == writer_prompt_ids(tok, question, by_prompt[question])
            assert plain == list(trainer._tokenize_prompts([prompt])[0][0])
    written = [ids for _, out in rollout.calls for ids in out["prompt_ids"]]
    assert loss_prompts and all(p in written for p in loss_prompts)
    logged = [h for h in trainer.state.log_history if PARTNER_SCORE in h]
    assert len(logged) == 2 and all(math.isfinite(h[PARTNER_SCORE]) for h in logged)


def test_evaluation_batches_keep_the_plain_prompt(tiny_dir, tmp_path):
    rollout = tandem_rollout_func(partner_reward=SEES)
    trainer = make_trainer(tiny_dir, tmp_path, rollout)
    rollout.check(trainer)
    prompts = [r["prompt"] for r in rows()]
    trainer.model.eval()
    out = rollout(prompts, trainer)
    assert out["prompt_ids"] == out["plain_prompt_ids"] == [list(p) for p in trainer._tokenize_prompts(prompts)[0]]


def test_the_scorer_reads_the_plain_prompt_and_the_juniors_log_probs_after_it(tiny_dir, tmp_path, monkeypatch):
    rollout = tandem_rollout_func(partner_reward=SEES)
    trainer = make_trainer(tiny_dir, tmp_path, rollout)
    rollout.check(trainer)
    data = rows()
    prompts = [r["prompt"] for r in data for _ in range(G)]
    trainer.model.train()
    out = rollout(prompts, trainer)
    seen = {}
    partner_rewards = rewards.partner_rewards

    def spy(cfg, scorer, tokenizer, prompts, rollouts, *args, **kwargs):
        seen.update(prompts=prompts, rollouts=rollouts, co_wrote=kwargs["scorer_wrote_with_engine"])
        return partner_rewards(cfg, scorer, tokenizer, prompts, rollouts, *args, **kwargs)

    monkeypatch.setattr(rewards, "partner_rewards", spy)
    rollout.partner_reward_func()([""] * len(prompts), tandem_rollout=out["tandem_rollout"],
                                  plain_prompt_ids=out["plain_prompt_ids"],
                                  solution=[r["solution"] for r in data for _ in range(G)])
    assert seen["prompts"] == out["plain_prompt_ids"] and seen["prompts"] != out["prompt_ids"] and seen["co_wrote"]
    for plain, r in zip(seen["prompts"][:2], seen["rollouts"][:2]):
        want = torch.tensor(recomputed(rollout.scorer, plain, r.token_ids), dtype=torch.float64)
        torch.testing.assert_close(torch.tensor(r.junior_logprobs, dtype=torch.float64), want, rtol=0, atol=1e-4)
        assert r.authorship_mask == next(x for x in out["tandem_rollout"] if x.token_ids == r.token_ids).authorship_mask


def test_a_dataset_without_solutions_is_refused_when_the_rollout_binds(tiny_dir, tmp_path):
    rollout = tandem_rollout_func(partner_reward=SEES)
    with pytest.raises(TandemError, match=r"the training dataset has no 'solution' column .*writer_sees_solution=false"):
        rollout.check(make_trainer(tiny_dir, tmp_path, rollout, data=rows(solution=False)))
    blank = rows()
    blank[1]["solution"] = " "
    with pytest.raises(TandemError, match=r"^training dataset row 1: no reference solution"):
        rollout = tandem_rollout_func(partner_reward=SEES)
        rollout.check(make_trainer(tiny_dir, tmp_path, rollout, data=blank))
    with pytest.raises(TandemError, match=r"set partner_reward.weight > 0"):
        tandem_rollout_func(partner_reward=PartnerRewardConfig(target="solution", writer_sees_solution=True))
