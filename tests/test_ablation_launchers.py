"""The release's ablations as launchers (KL regularisation; GRPO with 16 responses per prompt): their full override
lists compose under verl 0.9.1's Hydra config and pass its validation, and they differ from the GRPO baseline in
exactly the documented keys."""

from __future__ import annotations

import os
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("verl", reason="verl 0.9.1 is not installed")

from hydra import compose, initialize_config_module  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
VANILLA = REPO / "verl" / "run_vanilla_grpo_deepscaler.sh"
KL = REPO / "verl" / "run_kl_reg_grpo_deepscaler.sh"
G16 = REPO / "verl" / "run_vanilla_grpo_g16_deepscaler.sh"
RUN_NAMING = ("trainer.project_name", "trainer.experiment_name", "trainer.default_local_dir")


def launcher_argv(script: Path, tmp_path: Path, *extra: str, entry=("-m", "verl.trainer.main_ppo"), **env) -> list[str]:
    """The overrides the launcher hands to its entry point, by default `python -m verl.trainer.main_ppo`
    (a stub python records them)."""
    stub = tmp_path / "bin" / "python"
    stub.parent.mkdir(exist_ok=True)
    stub.write_text('#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "$ARGV_OUT"\n')
    stub.chmod(0o755)
    out = tmp_path / f"{script.stem}.argv"
    full_env = {**os.environ, "PATH": f"{stub.parent}:{os.environ['PATH']}", "ARGV_OUT": str(out), **env}
    full_env.pop("WANDB_API_KEY", None)
    subprocess.run(["bash", str(script), *extra], check=True, env=full_env, timeout=60)
    argv = out.read_text().splitlines()
    assert argv[: len(entry)] == list(entry)
    return argv[len(entry):]


def as_dict(argv: list[str]) -> dict[str, str]:
    keys = [a.split("=", 1)[0] for a in argv]
    assert len(keys) == len(set(keys)), "an override is given twice"
    return dict(a.split("=", 1) for a in argv)


def composed(argv: list[str]):
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=argv)
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    return cfg


@pytest.mark.parametrize("script", [KL, G16])
def test_bash_syntax(script):
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)


def test_kl_launcher_composes_and_adds_only_the_kl_term(tmp_path):
    argv = launcher_argv(KL, tmp_path, KL_COEF="0.001")
    cfg = composed(argv)
    actor = cfg.actor_rollout_ref.actor
    assert actor.use_kl_loss is True and actor.kl_loss_coef == 0.001 and actor.kl_loss_type == "low_var_kl"
    assert cfg.actor_rollout_ref.ref.fsdp_config.param_offload is True
    assert cfg.algorithm.use_kl_in_reward is False
    from verl.trainer.ppo.utils import need_reference_policy

    assert need_reference_policy(cfg)  # the frozen base is loaded as the reference
    kl, vanilla = as_dict(argv), as_dict(launcher_argv(VANILLA, tmp_path))
    changed = {k for k in kl.keys() | vanilla.keys() if kl.get(k) != vanilla.get(k)} - set(RUN_NAMING)
    assert changed == {"actor_rollout_ref.actor.use_kl_loss", "actor_rollout_ref.actor.kl_loss_coef",
                       "actor_rollout_ref.actor.kl_loss_type", "actor_rollout_ref.ref.fsdp_config.param_offload"}
    assert kl["trainer.experiment_name"].endswith("_b0p001")


def test_kl_launcher_takes_another_estimator(tmp_path):
    cfg = composed(launcher_argv(KL, tmp_path, KL_COEF="0.01", KL_LOSS_TYPE="kl"))
    assert cfg.actor_rollout_ref.actor.kl_loss_type == "kl" and cfg.actor_rollout_ref.actor.kl_loss_coef == 0.01


def test_kl_launcher_requires_the_coefficient(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "KL_COEF"}
    res = subprocess.run(["bash", str(KL)], env=env, capture_output=True, text=True, timeout=60)
    assert res.returncode != 0 and "set KL_COEF" in res.stderr


def test_g16_launcher_composes_and_changes_only_n(tmp_path):
    argv = launcher_argv(G16, tmp_path)
    cfg = composed(argv)
    assert cfg.actor_rollout_ref.rollout.n == 16
    g16, vanilla = as_dict(argv), as_dict(launcher_argv(VANILLA, tmp_path))
    changed = {k for k in g16.keys() | vanilla.keys() if g16.get(k) != vanilla.get(k)} - set(RUN_NAMING)
    assert changed == {"actor_rollout_ref.rollout.n"} and vanilla["actor_rollout_ref.rollout.n"] == "8"


def test_a_wrong_key_fails_to_compose(tmp_path):
    from hydra.errors import ConfigCompositionException

    argv = launcher_argv(G16, tmp_path, "actor_rollout_ref.rollout.nn=16")
    with pytest.raises(ConfigCompositionException):
        composed(argv)


@pytest.mark.parametrize("script", [VANILLA, G16])
def test_a_grpo_launcher_asked_for_the_partner_score_runs_through_the_tandem_entry_point(script, tmp_path):
    """RLT's setting: only verl/main_tandem_ppo.py composes `partner_reward` (tandem.enable=False: verl's sync
    trainer plus the score); without the key the launcher keeps verl's stock entry point."""
    stock = launcher_argv(script, tmp_path)
    scored = launcher_argv(script, tmp_path, "partner_reward.weight=0.1",
                           entry=(str(REPO / "verl" / "main_tandem_ppo.py"), "tandem.enable=False"))
    assert scored == [*stock, "partner_reward.weight=0.1"]
