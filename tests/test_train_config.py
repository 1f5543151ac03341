"""Typed configs from YAML/JSON plus key=value overrides, and fail-closed errors."""

from __future__ import annotations

import pytest

from tandem_app.commands.cli import main
from tandem.process.config import TandemConfig
from tandem.errors import TandemError
from tandem.io.config_files import load_config
from tandem.rollout.sampling import SamplingConfig
from tandem_app.train.grpo_trainer import GRPOTrainer
from tandem_app.train.train_config import TrainConfig


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


def test_unknown_config_key_is_an_error_naming_the_nearest_valid_one():
    with pytest.raises(TandemError, match=r"^unknown config key 'loss.clip_ratoi': did you mean loss.clip_ratio\?$"):
        load_config(TrainConfig, None, ["model=m", "out=o", "loss.clip_ratoi=0.3"])
    with pytest.raises(TandemError, match=r"^unknown config key 'task.max_stpes': did you mean task.max_steps\?$"):
        load_config(TrainConfig, None, ["model=m", "out=o", "task.max_stpes=3"])
    with pytest.raises(TandemError, match=r"^unknown config key 'stpes': did you mean steps\?$"):
        load_config(TrainConfig, None, ["model=m", "out=o", "stpes=3"])


def test_typo_in_a_yaml_file_is_an_error_with_the_suggestion(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("model: m\nout: o\ntandem:\n  prob_senoir: 0.9\n")
    with pytest.raises(TandemError, match=r"^unknown config key 'tandem.prob_senoir': did you mean tandem.prob_senior\?$"):
        load_config(TrainConfig, path)


def test_train_cli_refuses_a_typo_before_any_work(tmp_path, capsys):
    run = tmp_path / "run"
    rc = main(["train", "--model", str(tmp_path / "nope"), "--out", str(run), "tandem.prob_senoir=0.9"])
    err = capsys.readouterr().err.strip()
    assert rc == 2 and err == "error: unknown config key 'tandem.prob_senoir': did you mean tandem.prob_senior?"
    assert not run.exists()


@pytest.mark.parametrize(
    "override, fragment",
    [
        ("steps=many", "steps must be an integer, got 'many'"),
        ("steps=1e3", "steps must be an integer, got '1e3'"),
        ("lr=fast", "lr must be a number, got 'fast'"),
        ("wandb=yes", "wandb must be true or false, got 'yes'"),
        ("tandem=3", "tandem is a section; set its keys"),
        ("loss.loss_denominator=all", "loss_denominator must be one of senior_tokens, all_response_tokens"),
    ],
)
def test_override_of_the_wrong_type_is_an_error(override, fragment):
    with pytest.raises(TandemError, match=fragment):
        load_config(TrainConfig, None, ["model=m", "out=o", override])


def test_overrides_are_typed_by_the_field_they_set():
    cfg = load_config(
        TrainConfig, None,
        ["model=m", "out=o", "tandem.junior_model=1e3", "steps=12", "loss.clip_ratio_low=0.1",
         "loss.clip_ratio_c=null", "task.operations=[add, sub]", "tandem.boundary_token_ids=[3, 1]"],
    )
    assert cfg.tandem.junior_model == "1e3" and cfg.steps == 12
    assert cfg.loss.clip_ratio_low == 0.1 and cfg.loss.clip_ratio_c is None
    assert cfg.task.operations == ("add", "sub") and cfg.tandem.boundary_token_ids == [1, 3]


def test_a_number_in_a_yaml_string_field_is_refused_not_converted(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("model: m\nout: o\ntandem:\n  junior_model: 1.0e3\n")
    with pytest.raises(TandemError, match="tandem.junior_model must be a string, got 1000.0"):
        load_config(TrainConfig, path)


@pytest.mark.parametrize(
    "override",
    ["tandem.junior_token_loss_weight=0.25", "tandem.tandem_jr_tkn_weight=0.25", "loss.tandem_jr_tkn_weight=0.25",
     "loss.junior_token_loss_weight=0.25"],
)
def test_junior_weight_legacy_spellings_map_to_the_loss_config(override):
    cfg = load_config(TrainConfig, None, ["model=m", "out=o", override])
    assert cfg.loss.junior_token_loss_weight == 0.25 and not hasattr(cfg.tandem, "junior_token_loss_weight")


def test_junior_weight_set_twice_differently_is_an_error(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("model: m\nout: o\nloss:\n  junior_token_loss_weight: 0.0\n")
    assert load_config(TrainConfig, path, ["tandem.junior_token_loss_weight=0"]).loss.junior_token_loss_weight == 0
    with pytest.raises(TandemError, match="both tandem.junior_token_loss_weight .moved. and loss.junior_token_loss_w"):
        load_config(TrainConfig, path, ["tandem.junior_token_loss_weight=0.5"])


def test_typed_flags_win_over_overrides():
    from argparse import Namespace

    from tandem_app.commands.config_args import config_from_args

    args = Namespace(config=None, overrides=["model=a", "out=o", "method=grpo"], method="tandem", model="1e3", out=None)
    cfg = config_from_args(TrainConfig, args, ("method", "model", "out"))
    assert (cfg.method, cfg.model, cfg.out) == ("tandem", "1e3", "o")


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
        sampling=SamplingConfig(max_new_tokens=8),
        n_train_problems=4,
        n_val_problems=1,
    )
    trainer = GRPOTrainer(cfg, progress=False)
    batch = trainer.rollout(0)
    assert batch["authorship_mask"].shape == batch["responses"].shape
    del batch["authorship_mask"]
    with pytest.raises(TandemError, match="authorship_mask"):
        trainer.update(batch, 0)


def test_rollout_sampling_is_one_section_and_the_flat_keys_still_work():
    nested = load_config(TrainConfig, None, ["model=m", "out=o", "sampling.temperature=0.6", "sampling.max_new_tokens=9"])
    flat = load_config(TrainConfig, None, ["model=m", "out=o", "temperature=0.6", "max_new_tokens=9"])  # the old keys
    assert nested.sampling == flat.sampling and (nested.sampling.temperature, nested.sampling.max_new_tokens) == (0.6, 9)
    with pytest.raises(TandemError, match="did you mean"):
        load_config(TrainConfig, None, ["model=m", "out=o", "sampling.temprature=0.6"])


def test_shipped_yaml_configs_match_the_demo_recipe(tmp_path):
    from pathlib import Path

    from tandem.io.config_files import config_to_dict
    from tandem_app.experiments.demo import demo_config, sft_config, train_config
    from tandem_app.train.sft import SFTConfig

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


def test_one_seed_keys_the_run_and_its_coins():
    cfg = load_config(TrainConfig, None, ["model=m", "out=o", "seed=3"])
    assert cfg.tandem.seed == cfg.sampling.seed == 3
    with pytest.raises(TandemError, match="sampling.seed=2 but seed=1: a run has one seed"):
        load_config(TrainConfig, None, ["model=m", "out=o", "seed=1", "sampling.seed=2"])
    cfg = load_config(TrainConfig, None, ["model=m", "out=o", "tandem.seed=4"])  # a spelling of `seed`
    assert (cfg.seed, cfg.tandem.seed) == (4, 4)
    with pytest.raises(TandemError, match="both tandem.seed .moved. and seed are set with different values"):
        load_config(TrainConfig, None, ["model=m", "out=o", "seed=1", "tandem.seed=2"])
    with pytest.raises(TandemError, match="a run has one seed"):
        TrainConfig(model="m", out="o", seed=1, tandem=TandemConfig(seed=2))


def test_demo_seeds_change_the_coin_seed(tmp_path):
    from tandem_app.experiments.demo import demo_config, train_config

    assert train_config(demo_config(seed=2), tmp_path, "tandem").tandem.seed == 2
