"""Typed configs from YAML/JSON plus key=value overrides, and fail-closed errors."""

from __future__ import annotations

import pytest

from tandem.commands.cli import main
from tandem.config import TandemConfig
from tandem.errors import TandemError
from tandem.config_files import load_config
from tandem.train.grpo_trainer import GRPOTrainer, TrainConfig


def test_yaml_file_and_overrides_build_a_typed_config(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("method: grpo\nmodel: base\nout: run\nsteps: 7\nloss:\n  clip_ratio_high: 0.28\n")
    cfg = load_config(TrainConfig, path, ["lr=3e-5", "tandem.prob_senior=1", "task.max_steps=3", "method=tandem"])
    assert cfg.method == "tandem" and cfg.steps == 7
    assert cfg.lr == 3e-5 and isinstance(cfg.lr, float)
    assert isinstance(cfg.tandem, TandemConfig) and cfg.tandem.prob_senior == 1.0
    assert cfg.tandem.selection_strategy == "word" and cfg.tandem.max_gap_tokens == 32
    assert cfg.loss.clip_ratio_high == 0.28 and cfg.loss.clip_ratio == 0.2
    assert cfg.task.max_steps == 3


def test_json_config_file_is_accepted(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{"method": "grpo", "model": "m", "out": "o", "tandem": {"prob_primary": 0.3}}')
    cfg = load_config(TrainConfig, path)
    assert cfg.method == "grpo" and cfg.tandem.prob_senior == 0.3  # legacy alias accepted


def test_unknown_config_key_is_an_error_listing_valid_keys():
    with pytest.raises(TandemError, match=r"unknown config key\(s\) loss.clip_ratoi.*clip_ratio"):
        load_config(TrainConfig, None, ["model=m", "out=o", "loss.clip_ratoi=0.3"])


def test_override_of_the_wrong_type_is_an_error():
    with pytest.raises(TandemError, match="steps must be int"):
        load_config(TrainConfig, None, ["model=m", "out=o", "steps=many"])


def test_trl_is_an_alias_of_the_tandem_method():
    assert load_config(TrainConfig, None, ["model=m", "out=o", "method=trl"]).method == "tandem"
    assert TrainConfig(method="trl", model="m", out="o").is_tandem


def test_unknown_method_is_an_error():
    with pytest.raises(TandemError, match=r"tandem \(alias trl\) or grpo"):
        load_config(TrainConfig, None, ["model=m", "out=o", "method=ppo"])


def test_train_cli_reports_a_missing_base_in_one_line(tmp_path, capsys):
    rc = main(["train", "--method", "tandem", "--model", str(tmp_path / "nope"), "--out", str(tmp_path / "run")])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err.startswith("error:") and len(err.splitlines()) == 1


def test_trainer_refuses_a_tandem_batch_without_authorship_mask(tiny_dir, tmp_path):
    cfg = TrainConfig(
        method="tandem",
        model=str(tiny_dir),
        out=str(tmp_path / "run"),
        prompts_per_step=1,
        group_size=2,
        max_new_tokens=8,
        n_train_problems=4,
        n_val_problems=1,
    )
    trainer = GRPOTrainer(cfg, progress=False)
    batch = trainer.rollout(0)
    assert batch["authorship_mask"].shape == batch["responses"].shape
    del batch["authorship_mask"]
    with pytest.raises(TandemError, match="authorship_mask"):
        trainer.update(batch, 0)


def test_shipped_yaml_configs_match_the_demo_recipe(tmp_path):
    from pathlib import Path

    from tandem.config_files import config_to_dict
    from tandem.train.demo import demo_config, sft_config, train_config
    from tandem.train.sft import SFTConfig

    configs = Path(__file__).resolve().parents[1] / "configs"
    demo = demo_config()
    for method in ("tandem", "grpo"):
        ours = load_config(TrainConfig, configs / "train_tiny.yaml", [f"method={method}", "model=m", "out=o"])
        expected = train_config(demo, tmp_path, method)
        skip = {"model", "out"}
        a, b = config_to_dict(ours), config_to_dict(expected)
        assert {k: v for k, v in a.items() if k not in skip} == {k: v for k, v in b.items() if k not in skip}
    sft = load_config(SFTConfig, configs / "sft_tiny.yaml", ["model=m", "out=o"])
    expected = sft_config(demo, tmp_path)
    for key in ("steps", "batch_size", "lr", "task", "demos", "max_new_tokens", "n_val_problems"):
        assert getattr(sft, key) == getattr(expected, key), key
