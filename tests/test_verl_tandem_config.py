"""verl's `tandem:` block parsed strictly (TandemVerlConfig imports without vLLM or a GPU)."""

from __future__ import annotations

import pytest
from omegaconf import OmegaConf

pytest.importorskip("verl", reason="verl 0.9.1 is not installed")

from tandem.errors import TandemError  # noqa: E402
from tandem_verl.hydra_settings import run_settings  # noqa: E402
from tandem_verl.tandem_block import TandemVerlConfig  # noqa: E402


def test_typo_in_the_tandem_block_names_the_nearest_key():
    config = OmegaConf.create({"tandem": {"enable": True, "prob_senoir": 0.9}})
    with pytest.raises(TandemError, match=r"^unknown config key 'tandem.prob_senoir': did you mean tandem.prob_senior\?$"):
        run_settings(config)


@pytest.mark.parametrize(
    "key, near",
    [("loss_denominater", "loss_denominator"), ("junior_token_los_weight", "junior_token_loss_weight"),
     ("enabel", "enable")],
)
def test_typo_in_a_loss_key_or_the_switch_names_the_nearest_key(key, near):
    with pytest.raises(TandemError, match=rf"'tandem.{key}': did you mean tandem.{near}\?"):
        TandemVerlConfig.from_dict({key: 1})


def test_block_splits_into_process_and_loss_settings():
    t = TandemVerlConfig.from_dict(
        {"enable": True, "prob_primary": 0.3, "tandem_jr_tkn_weight": 1, "loss_denominator": "all_response_tokens",
         "junior_model": "1e3"}
    )
    assert t.enable and t.process.prob_senior == 0.3 and t.process.junior_model == "1e3"
    assert (t.loss.junior_token_loss_weight, t.loss.loss_denominator) == (1.0, "all_response_tokens")
    assert TandemVerlConfig.from_dict({"enable": True}).loss.loss_denominator == "senior_tokens"


@pytest.mark.parametrize(
    "block, fragment",
    [
        ({"enable": "yes"}, "tandem.enable must be true or false"),
        ({"max_gap_tokens": 3.5}, "tandem.max_gap_tokens must be an integer"),
        ({"junior_model": 1000.0}, "tandem.junior_model must be a string"),
        ({"loss_denominator": "junior"}, "loss_denominator must be one of"),
        ({"enable": True, "junior_token_loss_weight": 0.5}, "0 \\(paper\\) or 1"),
    ],
)
def test_values_are_refused_by_their_declared_type(block, fragment):
    with pytest.raises(TandemError, match=fragment):
        TandemVerlConfig.from_dict(block)
