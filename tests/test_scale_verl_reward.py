"""verl's custom reward function (`tandem_verl.reward.compute_score`) on strings."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

from tandem.errors import TandemError
from tandem_verl.reward import compute_score

pytest.importorskip("math_verify", reason="the grader needs math-verify (pip install tandem-rlvr[eval])")


HEALTHY = {"grader_timeouts": 0.0, "grader_too_long": 0.0, "grader_errors": 0.0, "grader_unparsed": 0.0,
           "grader_hedged": 0.0}


def test_right_boxed_answer_scores_one():
    assert compute_score("amc_23_25", "So the total is \\boxed{27}.", "27") == {"score": 1.0, "acc": 1.0, **HEALTHY}


def test_an_answer_over_the_grader_cap_scores_zero_and_says_so():
    result = compute_score("deepscaler", "\\boxed{" + "9" * 5000 + "}", "27")
    assert result == {"score": 0.0, "acc": 0.0, **HEALTHY, "grader_too_long": 1.0}


def test_wrong_answer_scores_zero():
    assert compute_score("amc_23_25", "So the total is \\boxed{26}.", "27")["score"] == 0.0


def test_equivalent_forms_score_one():
    assert compute_score("minerva", "Hence \\boxed{\\frac{1}{2}}", "0.5")["score"] == 1.0


def test_empty_ground_truth_is_an_error():
    with pytest.raises(TandemError, match="ground truth"):
        compute_score("deepscaler", "\\boxed{1}", "  ")


def test_verl_loads_it_from_the_pkg_path_in_the_launchers():
    pytest.importorskip("verl", reason="verl 0.9.1 is not installed")
    from verl.trainer.ppo.reward import get_custom_reward_fn

    fn_cfg = {"path": "pkg://tandem_verl.reward", "name": "compute_score"}
    cfg = OmegaConf.create({"reward": {"custom_reward_function": fn_cfg}})
    fn = get_custom_reward_fn(cfg)
    assert fn(data_source="aime_24_26", solution_str="\\boxed{70}", ground_truth="70", extra_info={})["score"] == 1.0


def test_the_steps_health_sums_each_samples_reward_extra_info():
    from tandem_verl.reward import health_metrics

    class Stored:  # how TransferQueue may hand a field back: the dict under `.data`
        def __init__(self, data):
            self.data = data

    rows = [compute_score("deepscaler", text, "27") for text in ("\\boxed{27}", "\\boxed{" + "9" * 5000 + "}")]
    samples = [{"reward_extra_info": rows[0]}, Stored({"reward_extra_info": rows[1]}), {"other": 1}]
    assert health_metrics(samples) == {**HEALTHY, "grader_too_long": 1.0}
