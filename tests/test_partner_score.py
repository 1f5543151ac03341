"""The partner score (`tandem.rewards.partner_score`): RLT's student-scores-teacher reward on a tandem response.

Hand-built log-prob tensors give the formula's value exactly; the masked reductions agree
with RLT's (`trainers/teacher_base.py`: mean = masked sum / mask count; min and max over
the masked positions, an empty row giving the dtype's extreme) computed element by element.
"""

from __future__ import annotations

import math

import pytest
import torch

from tandem.errors import TandemError
from tandem.io.metric_log import PARTNER_SCORE
from tandem.rewards.partner_config import PRESETS, PartnerRewardConfig
from tandem.rewards.partner_score import (
    combined_reward,
    masked_reduce,
    partner_score,
    partner_terms,
    step_metrics,
)
from tandem.io.strict import build

NEG = -1e9  # a padding value that must never be read


def t(rows):
    return torch.tensor(rows, dtype=torch.float64)


def rlt_reduction(values: list[float], mask: list[int], op: str) -> float:
    """RLT's masked reduction of one row, element by element."""
    kept = [v for v, m in zip(values, mask) if m]
    if op == "mean":
        return sum(kept) / len(kept) if kept else math.nan
    if not kept:
        return torch.finfo(torch.float64).max if op == "min" else torch.finfo(torch.float64).min
    return min(kept) if op == "min" else max(kept)


def test_the_rlt_preset_holds_rlts_coefficients():
    assert PartnerRewardConfig().coefficients() == {"logprob_mean": 1.0, "logprob_min": 0.01, "kl_mean": 3.0,
                                                    "kl_max": 0.03} == PRESETS["rlt"]
    assert PartnerRewardConfig(kl_mean=1.5).coefficients()["kl_mean"] == 1.5  # one coefficient overridden


def test_the_score_on_hand_built_tensors_is_the_formula_exactly():
    # row 0: target lp [-1, -3] (mean -2, min -3); senior wrote tokens 0 and 2: kl 0.5 and 1.5 (mean 1, max 1.5)
    # row 1: target lp [-0.5] (mean = min = -0.5); senior wrote token 1 only: kl 2 (mean = max = 2)
    target = t([[-1.0, -3.0], [-0.5, NEG]])
    target_mask = t([[1, 1], [1, 0]])
    senior = t([[-0.5, -9.0, -0.5], [-7.0, -1.0, NEG]])
    junior = t([[-1.0, -2.0, -2.0], [-1.0, -3.0, NEG]])
    senior_mask = t([[1, 0, 1], [0, 1, 0]])
    terms = partner_terms(target, target_mask, senior, junior, senior_mask)
    assert {k: v.tolist() for k, v in terms.items()} == {
        "logprob_mean": [-2.0, -0.5], "logprob_min": [-3.0, -0.5], "kl_mean": [1.0, 2.0], "kl_max": [1.5, 2.0]}
    score = partner_score(terms, PartnerRewardConfig().coefficients())
    expected = [1.0 * -2.0 + 0.01 * -3.0 - 3.0 * 1.0 - 0.03 * 1.5, 1.0 * -0.5 + 0.01 * -0.5 - 3.0 * 2.0 - 0.03 * 2.0]
    assert score.tolist() == pytest.approx(expected, abs=1e-12)
    assert combined_reward(t([1.0, 0.0]), score, 0.1).tolist() == pytest.approx(
        [1.0 + 0.1 * expected[0], 0.1 * expected[1]], abs=1e-12)
    metrics = step_metrics(terms, score)
    assert metrics[PARTNER_SCORE] == pytest.approx(sum(expected) / 2) and metrics[f"{PARTNER_SCORE}/kl_max"] == 1.75


@pytest.mark.parametrize("op", ["mean", "min", "max"])
def test_masked_reductions_reproduce_rlts_on_the_same_numbers(op):
    g = torch.Generator().manual_seed(0)
    values = torch.randn(6, 9, generator=g, dtype=torch.float64)
    mask = (torch.rand(6, 9, generator=g) < 0.5).to(torch.float64)
    mask[4] = 0  # an empty row: RLT's NaN mean and extreme min/max
    got = masked_reduce(values, mask, op).tolist()
    want = [rlt_reduction(v, m, op) for v, m in zip(values.tolist(), mask.int().tolist())]
    for a, b in zip(got, want):
        assert (math.isnan(a) and math.isnan(b)) or a == pytest.approx(b, abs=1e-12)


def test_a_response_the_junior_wrote_alone_has_kl_terms_zero():
    terms = partner_terms(t([[-1.0]]), t([[1]]), t([[-2.0, -2.0]]), t([[-1.0, -1.0]]), t([[0, 0]]))
    assert terms["kl_mean"].item() == 0.0 and terms["kl_max"].item() == 0.0


def test_a_row_without_target_tokens_and_a_non_finite_score_are_refused_naming_the_row():
    with pytest.raises(TandemError, match="row 1 has no target token"):
        partner_terms(t([[-1.0], [NEG]]), t([[1], [0]]), t([[0.0], [0.0]]), t([[0.0], [0.0]]), t([[1], [1]]))
    terms = partner_terms(t([[-1.0], [-math.inf]]), t([[1], [1]]), t([[0.0], [0.0]]), t([[0.0], [0.0]]), t([[1], [1]]))
    with pytest.raises(TandemError, match=r"partner score of row 1 is -inf .* zero probability"):
        partner_score(terms, PartnerRewardConfig().coefficients())


def test_the_section_is_strict_like_every_section():
    cfg = build(PartnerRewardConfig, {"weight": 0.5, "target": "solution", "kl_max": 0})
    assert cfg.enabled and cfg.coefficients()["kl_max"] == 0.0 and not PartnerRewardConfig().enabled
    with pytest.raises(TandemError, match="did you mean kl_mean"):
        build(PartnerRewardConfig, {"kl_maen": 1.0})
    with pytest.raises(TandemError, match="target='gold': choose answer or solution"):
        PartnerRewardConfig(target="gold")
    with pytest.raises(TandemError, match="preset='rlt2' is unknown"):
        PartnerRewardConfig(preset="rlt2")
    with pytest.raises(TandemError, match="weight must be a number >= 0"):
        PartnerRewardConfig(weight=-1.0)


def _response(tok, text: str) -> list[int]:
    """`text` as a finished rollout: its tokens and the end-of-turn token."""
    return tok(text, add_special_tokens=False)["input_ids"] + [tok.convert_tokens_to_ids("<|im_end|>")]


def test_the_answer_target_is_read_inside_the_students_turn_right_after_its_own_boxed(tok):
    from tandem.rewards.partner_score import target_sequences

    prompt = tok("Mia has 3 apples.", add_special_tokens=False)["input_ids"]
    text = "Mia has 3. She gets 2: 3 + 2 = 5. The answer is \\boxed{5}."
    context, scored = target_sequences(tok, prompt, _response(tok, text), "5", "answer")
    kept = text[: text.rindex("{") + 1]  # the team's own answer opener, not its answer
    assert context == prompt + tok(kept, add_special_tokens=False)["input_ids"] and tok.decode(scored) == "5}"
    # the student reads its own tokens: context + target is the tokenisation of the answered text, nothing between
    assert context + scored == prompt + tok(kept + "5}", add_special_tokens=False)["input_ids"]


def test_the_solution_target_follows_the_explanation_after_a_step_break_with_no_end_of_turn_or_cue(tok):
    from tandem.rewards.partner_score import end_of_turn_ids, target_sequences

    prompt = tok("Mia has 3 apples.", add_special_tokens=False)["input_ids"]
    text, solution = "3 + 2 = 5. \\boxed{5}", "Mia has 3 + 2 = 5."
    context, scored = target_sequences(tok, prompt, _response(tok, text), solution, "solution")
    assert context == prompt + tok(text + "\n\n", add_special_tokens=False)["input_ids"]
    assert tok.decode(scored) == solution and not set(end_of_turn_ids(tok)) & set(context[len(prompt):])


def test_an_empty_explanation_leaves_the_student_its_bare_turn(tok):
    from tandem.rewards.partner_score import target_sequences

    prompt = tok("Mia has 3 apples.", add_special_tokens=False)["input_ids"]
    assert target_sequences(tok, prompt, [], "Mia has 3.", "solution")[0] == prompt
    assert target_sequences(tok, prompt, [], "3", "answer")[0] == prompt + tok("\\boxed{", add_special_tokens=False)["input_ids"]


def test_an_explanation_without_an_answer_gets_the_students_answer_opener(tok):
    from tandem.rewards.partner_score import target_sequences

    context, _ = target_sequences(tok, [], _response(tok, "She has 5"), "5", "answer")
    assert tok.decode(context) == "She has 5 \\boxed{"
