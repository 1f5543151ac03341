"""The partner score on the embedded trainer: TRL scored by its junior, GRPO by its base (the RLT setting).

Two steps each on the tiny zoo; the logged terms are finite, the reward the advantages see
is the verifier's plus `weight` times the score, and the score equals the core formula
applied to the same tokens with every log-prob recomputed from scratch (to 1e-4: the
engine's KV-cached log-probs differ from a full forward by ~1e-5 in float32).
"""

from __future__ import annotations

import pytest
import torch

from tandem.errors import TandemError
from tandem.io.metric_log import PARTNER_SCORE
from tandem.rewards.partner_config import TERMS, PartnerRewardConfig
from tandem.rewards.partner_score import partner_score, partner_terms, target_sequences
from tandem.loss.logprobs import pad_right
from tandem_app.train.grpo_trainer import GRPOTrainer
from tandem.rewards.partner_score import partner_rewards

from test_train_resume import _cfg, _rows, _text_reward  # noqa: E402

PARTNER = PartnerRewardConfig(weight=0.1)


@pytest.mark.parametrize("method", ["tandem", "grpo"])
def test_two_steps_log_the_partner_score_and_each_term(tiny_dir, tmp_path, method):
    cfg = _cfg(tiny_dir, tmp_path / method, method=method, steps=2, partner_reward=PARTNER)
    GRPOTrainer(cfg, reward_fn=_text_reward, progress=False).train()
    rows = _rows(tmp_path / method)[1:]
    assert len(rows) == 2
    for r in rows:
        term = {t: r[f"{PARTNER_SCORE}/{t}"] for t in TERMS}
        assert all(torch.isfinite(torch.tensor(v)) for v in [r[PARTNER_SCORE], *term.values()])
        assert r["reward_with_partner_mean"] == pytest.approx(r["reward_mean"] + 0.1 * r[PARTNER_SCORE], abs=1e-5)
        assert term["kl_max"] >= term["kl_mean"] and term["logprob_min"] <= term["logprob_mean"]


def recomputed(model, prompt, ids):
    """log p(ids | prompt) by one full forward, float64."""
    full = torch.tensor([prompt + ids])
    with torch.no_grad():
        lp = torch.log_softmax(model(full).logits[0, len(prompt) - 1 : -1].double(), -1)
    return lp.gather(-1, torch.tensor(ids)[:, None]).squeeze(-1).tolist()


@pytest.mark.parametrize("target", ["answer", "solution"])
def test_the_score_equals_the_formula_on_log_probs_recomputed_from_scratch(tiny_dir, tmp_path, target):
    cfg = _cfg(tiny_dir, tmp_path / "run", partner_reward=PartnerRewardConfig(weight=1.0, target=target))
    trainer = GRPOTrainer(cfg, reward_fn=_text_reward, progress=False)
    problems = trainer.train_problems[:4]
    prompts = trainer.train_prompts[:4]
    rollouts = trainer.engine.generate(prompts, trainer.sampling, junior_logprobs=True)
    golds = [p.answer if target == "answer" else p.solution for p in problems]
    got, _ = partner_rewards(cfg.partner_reward, trainer.junior, trainer.tokenizer, prompts, rollouts, golds,
                             trainer.sampling.logprob_temperature, scorer_wrote_with_engine=True)
    rows = []
    for p, r, g in zip(prompts, rollouts, golds):
        context, scored = target_sequences(trainer.tokenizer, p, r.token_ids, g, target)
        rows.append((recomputed(trainer.junior, context, scored), recomputed(trainer.senior, p, r.token_ids),
                     recomputed(trainer.junior, p, r.token_ids), r.authorship_mask))
    T, S = max(len(x[0]) for x in rows), max(len(x[1]) for x in rows)
    terms = partner_terms(pad_right([x[0] for x in rows], 0.0, torch.float64, T),
                          pad_right([[1] * len(x[0]) for x in rows], 0, length=T).double(),
                          pad_right([x[1] for x in rows], 0.0, torch.float64, S),
                          pad_right([x[2] for x in rows], 0.0, torch.float64, S),
                          pad_right([x[3] for x in rows], 0, length=S).double())
    want = partner_score(terms, cfg.partner_reward.coefficients())
    torch.testing.assert_close(got, want, rtol=0, atol=1e-4)


def test_a_scorer_whose_context_cannot_hold_the_row_is_named_not_truncated(tiny_dir, tmp_path):
    cfg = _cfg(tiny_dir, tmp_path / "run", partner_reward=PartnerRewardConfig(weight=1.0, target="solution"))
    trainer = GRPOTrainer(cfg, reward_fn=_text_reward, progress=False)
    prompts = trainer.train_prompts[:2]
    rollouts = trainer.engine.generate(prompts, trainer.sampling, junior_logprobs=True)
    long_solution = " ".join(["Mia has 3 apples."] * 400)
    with pytest.raises(TandemError, match=r"partner score: row 0 needs \d+ tokens .* the scorer's context holds 1024"):
        partner_rewards(cfg.partner_reward, trainer.junior, trainer.tokenizer, prompts, rollouts,
                        [long_solution, "1"], 1.0, scorer_wrote_with_engine=True)


def test_the_section_is_read_from_key_value_overrides_strictly():
    from tandem.io.config_files import load_config
    from tandem_app.train.train_config import TrainConfig

    cfg = load_config(TrainConfig, None, ["model=m", "out=o", "partner_reward.weight=0.5",
                                          "partner_reward.target=solution", "partner_reward.kl_max=0"])
    assert cfg.partner_reward == PartnerRewardConfig(weight=0.5, target="solution", kl_max=0.0)
    with pytest.raises(TandemError, match="unknown config key 'partner_reward.wieght': did you mean partner_reward.weight"):
        load_config(TrainConfig, None, ["model=m", "out=o", "partner_reward.wieght=0.5"])
