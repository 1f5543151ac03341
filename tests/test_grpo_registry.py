"""The GRPO registries (advantage estimators, policy losses) behave alike, as verl's should."""

import pytest

from tandem.loss import grpo
from tandem.errors import TandemError

REGISTRIES = [
    (grpo.register_adv_est, grpo.get_adv_estimator_fn, grpo.ADV_ESTIMATORS, "advantage estimator", "grpo"),
    (grpo.register_policy_loss, grpo.get_policy_loss_fn, grpo.POLICY_LOSSES, "policy loss", "vanilla"),
]


@pytest.mark.parametrize("register, get, table, kind, known", REGISTRIES)
def test_a_second_function_under_a_registered_name_is_refused(register, get, table, kind, known):
    with pytest.raises(ValueError, match=f"^{kind} '{known}' is already registered$"):
        register(known)(lambda *a: None)
    assert register(known)(table[known]) is table[known]  # the same function again (a module reloaded) is fine


@pytest.mark.parametrize("register, get, table, kind, known", REGISTRIES)
def test_an_unknown_name_is_one_line_listing_the_registered_ones(register, get, table, kind, known):
    assert get(known) is table[known]
    with pytest.raises(TandemError, match=f"^unknown {kind} 'nope'; choose one of .*{known}"):
        get("nope")
