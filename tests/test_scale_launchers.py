"""The DeepScaleR launchers: syntax, every override a real verl 0.9.1 key, identical hyper-parameters.

Each launcher is run with a stub `python` first on PATH that records its arguments; the
recorded overrides are then composed with Hydra onto the config the real entry point
uses (verl's packaged `ppo_trainer` for the baseline, `verl/config/tandem_trainer.yaml`
for tandem). Hydra rejects any override whose key does not exist, and verl's own
`validate_config` checks the batch-size arithmetic.
"""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest

pytest.importorskip("verl", reason="verl 0.9.1 is not installed")

from hydra import compose, initialize_config_dir, initialize_config_module  # noqa: E402

from tandem_verl.wiring import apply_tandem  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
TANDEM = REPO / "verl" / "run_tandem_native_grpo_deepscaler.sh"
VANILLA = REPO / "verl" / "run_vanilla_grpo_deepscaler.sh"
COMMON = REPO / "verl" / "deepscaler_common.sh"
RUN_NAMING = ("trainer.project_name", "trainer.experiment_name", "trainer.default_local_dir")


def launcher_args(script: Path, tmp_path: Path, **env) -> list[str]:
    """The argv the launcher passes to python (after the entry point)."""
    stub = tmp_path / "bin" / "python"
    stub.parent.mkdir(exist_ok=True)
    stub.write_text('#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "$ARGV_OUT"\n')
    stub.chmod(0o755)
    out = tmp_path / f"{script.stem}.argv"
    full_env = {**os.environ, "PATH": f"{stub.parent}:{os.environ['PATH']}", "ARGV_OUT": str(out), **env}
    full_env.pop("WANDB_API_KEY", None)
    subprocess.run(["bash", str(script)], check=True, env=full_env, timeout=60)
    argv = out.read_text().splitlines()
    return argv[2:] if argv[0] == "-m" else argv[1:]


@pytest.fixture(scope="module")
def argvs(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("launch")
    return {"tandem": launcher_args(TANDEM, tmp), "vanilla": launcher_args(VANILLA, tmp)}


def as_dict(args: list[str]) -> dict[str, str]:
    return dict(a.split("=", 1) for a in args)


@pytest.mark.parametrize("script", [TANDEM, VANILLA, COMMON])
def test_launcher_bash_syntax(script):
    subprocess.run(["bash", "-n", str(script)], check=True, timeout=30)


def test_every_tandem_override_is_a_key_of_the_tandem_config(argvs):
    with initialize_config_dir(config_dir=str(REPO / "verl" / "config"), version_base=None):
        cfg = compose(config_name="tandem_trainer", overrides=argvs["tandem"])
    assert apply_tandem(cfg).tandem.enable
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))


def test_every_vanilla_override_is_a_key_of_verls_ppo_trainer(argvs):
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=argvs["vanilla"])
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))


def test_runs_differ_only_in_the_tandem_switch(argvs):
    tandem, vanilla = as_dict(argvs["tandem"]), as_dict(argvs["vanilla"])
    shared_t = {k: v for k, v in tandem.items() if not k.startswith("tandem.") and k not in RUN_NAMING}
    shared_v = {k: v for k, v in vanilla.items() if k not in RUN_NAMING}
    assert shared_t == shared_v
    assert not any(k.startswith("tandem.") for k in vanilla)


@pytest.mark.parametrize("script", [TANDEM, VANILLA])
def test_val_set_heldout_validates_on_the_held_out_rows_at_the_newest_releases_n(script, tmp_path):
    args = as_dict(launcher_args(script, tmp_path, VAL_SET="heldout", DATA_DIR="/data"))
    assert args["data.val_files"] == "[/data/deepscaler/heldout.parquet]"
    assert args["actor_rollout_ref.rollout.val_kwargs.n"] == "1"
    assert as_dict(launcher_args(script, tmp_path, VAL_SET="heldout", VAL_N="4"))[
        "actor_rollout_ref.rollout.val_kwargs.n"] == "4"


def test_an_unknown_val_set_fails_in_one_line_before_verl_starts(tmp_path):
    res = subprocess.run(["bash", str(TANDEM)], env={**os.environ, "VAL_SET": "test"}, capture_output=True,
                         text=True, timeout=60)
    assert res.returncode == 2 and res.stderr.strip() == "error: VAL_SET must be benchmarks or heldout, not test"


def test_launchers_set_the_canonical_run(argvs):
    t = as_dict(argvs["tandem"])
    assert t["actor_rollout_ref.model.path"] == "Qwen/Qwen3-4B-Instruct-2507"
    assert t["algorithm.adv_estimator"] == "grpo"
    assert t["actor_rollout_ref.rollout.temperature"] == "0.6"
    assert t["actor_rollout_ref.actor.use_kl_loss"] == "False"
    assert t["actor_rollout_ref.actor.entropy_coeff"] == "0"
    assert t["actor_rollout_ref.rollout.val_kwargs.n"] == "4"
    assert t["data.train_files"].endswith("deepscaler/train.parquet")
    assert all(b in t["data.val_files"] for b in ("amc_23_25", "aime_24_26", "minerva"))
    assert (t["tandem.selection_strategy"], t["tandem.prob_senior"]) == ("word", "0.5")
    assert (t["tandem.max_gap_tokens"], t["tandem.junior_token_loss_weight"]) == ("32", "0")
    assert t["tandem.loss_denominator"] == "all_response_tokens"  # the release's token-mean (SPEC §8)
    assert t["tandem.junior_model"] == t["actor_rollout_ref.model.path"]  # self-paired
    # as released: verl's default flash_attention_2 needs flash-attn, which verl[vllm] does not install
    assert t["++actor_rollout_ref.model.override_config.attn_implementation"] == "sdpa"


def test_data_dir_and_wandb_come_from_the_environment(tmp_path):
    args = as_dict(launcher_args(TANDEM, tmp_path, DATA_DIR="/data/x", WANDB_MODE="offline"))
    assert args["data.train_files"] == "/data/x/deepscaler/train.parquet"
    assert args["trainer.logger"] == "[console,wandb]"


@pytest.mark.parametrize("script", [TANDEM, VANILLA, COMMON])
def test_launchers_hold_no_secrets_or_machine_paths(script):
    text = script.read_text()
    assert not re.search(r"(API_KEY|TOKEN|SECRET)\s*=", text)
    assert not re.search(r"/(datadrive|home|Users|mnt|scratch)/", text)


def test_entry_point_composes_verls_config_with_the_tandem_block():
    import sys

    entry = REPO / "verl" / "main_tandem_ppo.py"
    cmd = [sys.executable, str(entry), "--cfg", "job", "actor_rollout_ref.rollout.name=vllm"]
    res = subprocess.run(cmd, capture_output=True, text=True, timeout=120, cwd=REPO)
    assert res.returncode == 0, res.stderr[-2000:]
    assert "tandem:\n  enable: true" in res.stdout and "adv_estimator:" in res.stdout  # ours + verl's


def test_cpu_overrides_compose_onto_the_launchers_arguments(argvs):
    """scripts/scale_smoke.sh appends verl/cpu_overrides.sh's CPU_ARGS: no key may be added twice."""
    script = f'source "{REPO / "verl" / "cpu_overrides.sh"}"; printf "%s\\n" "${{CPU_ARGS[@]}}"'
    cpu = subprocess.run(["bash", "-c", script], check=True, capture_output=True, text=True).stdout.splitlines()
    with initialize_config_module(config_module="verl.trainer.config", version_base=None):
        cfg = compose(config_name="ppo_trainer", overrides=argvs["vanilla"] + cpu)
    assert cfg.actor_rollout_ref.model.override_config.attn_implementation == "sdpa"


@pytest.mark.parametrize("device, gpus, tp, workers", [("cpu", "1", "1", 1), ("gpu", "1", "1", 1), ("gpu", "2", "1", 2),
                                                      ("cpu", "1", "2", 2)])
def test_the_smoke_launch_composes_into_a_valid_tandem_config(tmp_path, device, gpus, tp, workers):
    """scripts/scale/smoke_launch.sh (the CPU smoke, the crash test and gpu_check.sh's launcher runs)."""
    script = REPO / "scripts" / "scale" / "smoke_launch.sh"
    env = {"SMOKE_DEVICE": device, "SMOKE_N_GPUS": gpus, "SMOKE_ROLLOUT_TP": tp, "JUNIOR_MODEL": "Qwen/Qwen3-1.7B"}
    stub = tmp_path / "bin" / "python"
    stub.parent.mkdir()
    stub.write_text('#!/usr/bin/env bash\nprintf "%s\\n" "$@" > "$ARGV_OUT"\n')
    stub.chmod(0o755)
    out = tmp_path / "argv"
    full_env = {**os.environ, "PATH": f"{stub.parent}:{os.environ['PATH']}", "ARGV_OUT": str(out), **env}
    subprocess.run(["bash", str(script), str(tmp_path), "Qwen/Qwen3-0.6B", "tandem", "1", "2"], check=True,
                   env=full_env, timeout=60)
    args = [a for a in out.read_text().splitlines()[1:] if not a.startswith("hydra.")]
    with initialize_config_dir(config_dir=str(REPO / "verl" / "config"), version_base=None):
        cfg = compose(config_name="tandem_trainer", overrides=args)
    apply_tandem(cfg)
    from verl.trainer.ppo.utils import need_critic, need_reference_policy
    from verl.utils.config import validate_config

    validate_config(config=cfg, use_reference_policy=need_reference_policy(cfg), use_critic=need_critic(cfg))
    assert cfg.trainer.n_gpus_per_node == workers and cfg.trainer.total_training_steps == 2
    assert cfg.actor_rollout_ref.rollout.tensor_model_parallel_size == int(tp)
    assert cfg.actor_rollout_ref.model.path == "Qwen/Qwen3-0.6B" and cfg.tandem.junior_model == "Qwen/Qwen3-1.7B"
    assert (cfg.trainer.device == "cpu") == (device == "cpu")
    assert cfg.data.max_response_length == (64 if device == "cpu" else 512)


def test_a_tensor_parallel_smoke_rollout_is_for_the_tandem_run_only(tmp_path):
    script = REPO / "scripts" / "scale" / "smoke_launch.sh"
    res = subprocess.run(["bash", str(script), str(tmp_path), "m", "vanilla", "1", "2"], capture_output=True, text=True,
                         env={**os.environ, "SMOKE_ROLLOUT_TP": "2"}, timeout=60)
    assert res.returncode == 2 and "SMOKE_ROLLOUT_TP=2 is for RUN tandem" in res.stderr


def test_the_smoke_refuses_a_split_junior_that_is_not_a_model_before_any_work(tmp_path):
    out = tmp_path / "smoke"
    res = subprocess.run(["bash", str(REPO / "scripts" / "scale_smoke.sh"), "--out", str(out), "--split-junior",
                          str(tmp_path / "nothing-here")], capture_output=True, text=True, timeout=60)
    assert res.returncode == 2 and "--split-junior" in res.stderr and "pass a model directory" in res.stderr
    assert not out.exists()
