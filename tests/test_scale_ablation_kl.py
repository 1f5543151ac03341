"""The release's KL ablation launcher (`verl/run_kl_reg_grpo_deepscaler.sh`), run for real on CPU.

GRPO with a `low_var_kl` penalty toward the frozen base, which verl loads as the reference
policy (a forward-only FSDP2 engine): 2 GRPO steps at `KL_COEF=0.001`. At step 1 the actor
is the base, so the KL term is exactly 0 (float32 on both sides); after one update it is not.
The launcher's override list is checked against verl's Hydra config in the main suite
(`tests/test_ablation_launchers.py`).
"""

from __future__ import annotations

import pytest

pytest.importorskip("vllm", reason="vLLM is not installed; the scale lane (bash scripts/test_scale.sh) runs this")
pytest.importorskip("verl", reason="verl is not installed")
pytestmark = pytest.mark.vllm

from launch_once import launch_two_steps  # noqa: E402


@pytest.fixture(scope="module")
def steps(scale_senior, tmp_path_factory) -> list[dict]:
    return launch_two_steps(tmp_path_factory.mktemp("verl-kl"), scale_senior, "kl_reg")[0]


def test_the_kl_ablation_trains_two_steps_with_the_swept_coefficient(steps):
    assert [int(s["training/global_step"]) for s in steps] == [1, 2]
    assert all(s["actor/kl_coef"] == 0.001 and s["actor/grad_norm"] > 0 for s in steps)
    assert not any(k.startswith("actor/tandem/") for s in steps for k in s)  # solo rollouts, no gate


def test_the_reference_is_the_base_so_kl_starts_at_zero_and_grows(steps):
    assert steps[0]["actor/kl_loss"] == 0.0
    assert steps[1]["actor/kl_loss"] > 1e-4
