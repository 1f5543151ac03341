"""`scripts/hf_trl_tandem.py`'s settings: `tandem-rlvr train`'s TrainConfig, parsed by the CLI's functions, mapped
onto TRL's GRPOConfig key by key (`tandem_app.train.hf_trl_settings`); a key TRL cannot honour is refused in one line.
No model is trained here (tests/test_hf_trl_example.py runs the script)."""

from __future__ import annotations

import json
import runpy
from pathlib import Path

import pytest

pytest.importorskip("trl")

from tandem_app.commands.config_args import config_keys  # noqa: E402
from tandem_app.commands.train import COMMAND as TRAIN  # noqa: E402
from tandem_app.train import hf_trl_settings as trl_settings  # noqa: E402
from tandem_app.train.hf_trl_run import synthetic_rows, tandem_trainer  # noqa: E402
from tandem_app.train.train_config import TrainConfig  # noqa: E402

REPO = Path(__file__).resolve().parents[1]
SCRIPT = runpy.run_path(str(REPO / "scripts" / "hf_trl_tandem.py"))


def settings(tmp_path, *words: str):
    return SCRIPT["settings"](SCRIPT["parse_args"](["--out", str(tmp_path / "run"), *words]))


def refusal(tmp_path, capsys, *words: str) -> list[str]:
    assert SCRIPT["main"](["--out", str(tmp_path / "run"), *words]) == 2
    assert not (tmp_path / "run").exists()  # refused before the folder
    return capsys.readouterr().err.strip().splitlines()


def test_key_value_overrides_reach_grpo_config_and_the_rollout(tmp_path):
    cfg = settings(tmp_path, "steps=3", "sampling.temperature=0.7", "tandem.prob_senior=0.3", "prompts_per_step=3",
                   "group_size=5", "lr=1e-4", "sampling.max_new_tokens=40", "sampling.top_p=0.9", "seed=7",
                   "loss.clip_ratio_high=0.28", "norm_adv_by_std=false", "warmup_steps=2", "engine_mode=lockstep",
                   "ppo_mini_batches=1")
    args = trl_settings.grpo_config(cfg)
    assert (args.max_steps, args.temperature, args.learning_rate, args.max_completion_length) == (3, 0.7, 1e-4, 40)
    assert (args.per_device_train_batch_size, args.num_generations, args.top_p, args.seed) == (15, 5, 0.9, 7)
    assert (args.epsilon, args.epsilon_high, args.scale_rewards, args.warmup_steps) == (0.2, 0.28, "none", 2)
    assert (args.loss_type, str(args.lr_scheduler_type.value), args.use_cpu) == ("dapo", "constant_with_warmup", True)
    rollout = trl_settings.tandem_rollout(cfg)
    assert (rollout.tandem.prob_senior, rollout.tandem.seed, rollout.engine_mode, rollout.solo) == (0.3, 7, "lockstep",
                                                                                                   False)
    assert rollout.sampling is cfg.sampling and rollout.sampling.seed == 7  # stop strings and ids too
    assert trl_settings.tandem_rollout(settings(tmp_path, "--method", "grpo")).solo


@pytest.mark.parametrize("words, slices, epochs", [([], 2, 1), (["ppo_mini_batches=4", "ppo_epochs=3"], 4, 3)])
def test_a_step_is_one_generation_batch_cut_into_ppo_mini_batches_for_ppo_epochs(words, slices, epochs, tmp_path):
    """As the embedded trainer: `steps` generation batches of prompts_per_step * group_size responses, each cut into
    ppo_mini_batches equal mini-batches, ppo_epochs passes; TRL counts optimizer steps (max_steps, warm-up, logs)."""
    cfg = settings(tmp_path, "steps=5", "prompts_per_step=8", "group_size=4", "warmup_steps=2", *words)
    args, per_step = trl_settings.grpo_config(cfg), slices * epochs
    assert (args.steps_per_generation, args.num_iterations, args.gradient_accumulation_steps) == (slices, epochs, 1)
    assert (args.generation_batch_size, args.per_device_train_batch_size) == (32, 32 // slices)
    assert (args.max_steps, args.warmup_steps, args.logging_steps) == (5 * per_step, 2 * per_step, per_step)


def test_a_config_file_then_overrides_then_flags(tmp_path):
    path = tmp_path / "run.json"
    path.write_text(json.dumps({"steps": 5, "lr": 2e-5, "method": "grpo",
                                "loss": {"loss_agg_mode": "seq-mean-token-mean"}}))
    cfg = settings(tmp_path, "--config", str(path), "lr=3e-5", "--method", "tandem")
    args = trl_settings.grpo_config(cfg)
    assert (cfg.steps, args.learning_rate, cfg.method, args.loss_type) == (5, 3e-5, "tandem", "grpo")


def test_a_misspelt_key_is_refused_in_one_line_naming_it(tmp_path, capsys):
    assert refusal(tmp_path, capsys, "stpes=3") == ["error: unknown config key 'stpes': did you mean steps?"]
    assert refusal(tmp_path, capsys, "sampling.temprature=1") == [
        "error: unknown config key 'sampling.temprature': did you mean sampling.temperature?"]


@pytest.mark.parametrize("words, line", [
    (["ppo_mini_batches=3"], "HF TRL cannot honour ppo_mini_batches=3: TRL splits a step's 128 responses "
                             "(prompts_per_step * group_size) into equal mini-batches; set ppo_mini_batches to one of "
                             "1, 2, 4, 8, 16, 32, 64, 128, or change prompts_per_step"),
    (["loss.entropy_coeff=0.1", "save_every=3"],
     "HF TRL cannot honour loss.entropy_coeff=0.1 (TRL's GRPO loss has no entropy bonus); save_every=3 (this script "
     "keeps no checkpoints; --save-model saves the final senior); leave them at the default"),
    (["loss.loss_denominator=all_response_tokens"],
     "HF TRL cannot honour loss.loss_denominator=all_response_tokens (TRL's tool_mask drops junior tokens from the "
     "denominator too); use senior_tokens"),
    (["tandem.placement=split"], "tandem.placement=split: HF TRL cannot place the senior and the junior that way; "
                                 "use verl, or tandem.placement=shared"),
])
def test_a_key_trl_cannot_honour_is_refused_in_one_line(words, line, tmp_path, capsys):
    assert refusal(tmp_path, capsys, *words) == [f"error: {line}"]


def test_the_synthetic_task_keys_are_refused_beside_a_dataset(tmp_path, capsys):
    assert refusal(tmp_path, capsys, "--dataset", "d.jsonl", "task.max_steps=2") == [
        "error: task.max_steps set the synthetic task, but --dataset d.jsonl is the task; drop one"]


def test_every_train_config_key_is_read_or_refused_never_both():
    keys = config_keys(TrainConfig)
    leaves = {k for k in keys if not any(other.startswith(k + ".") for other in keys)}
    reads, not_read = trl_settings.is_read, trl_settings.NOT_READ
    assert set(not_read) <= leaves
    assert not [k for k in leaves if not reads(k) and k not in not_read]
    assert not [k for k in not_read if reads(k)]
    assert set(trl_settings.ONLY) <= leaves


def test_the_script_declares_no_default_that_train_config_declares():
    """Its flags are the CLI's config flags (default None: they set their key only when given) and what TrainConfig
    has no key for; no option's dest, nor its name, is a TrainConfig key with a second default."""
    parser = SCRIPT["build_parser"]()
    keys = config_keys(TrainConfig)
    options = [a for a in parser._actions if a.option_strings and a.dest != "help"]
    as_keys = {a.dest for a in options} | {s.lstrip("-").replace("-", "_") for a in options for s in a.option_strings}
    assert as_keys & keys == set(TRAIN.config_flags)
    assert all(a.default is None for a in options if a.dest in keys)
    assert {a.dest for a in options} - keys == {"config", "dataset", "split", "val_split", "base_steps", "save_model"}


def test_a_retired_flag_names_its_key(capsys):
    with pytest.raises(SystemExit) as e:
        SCRIPT["parse_args"](["--out", "x", "--max-steps", "2"])
    assert e.value.code == 2
    assert "--max-steps is now the config key steps: use steps=VALUE" in capsys.readouterr().err


def test_the_default_model_trains_on_its_own_task_and_task_keys_choose_another(tmp_path):
    from tandem_app.task import generate_problems
    from tandem_app.train.tiny_base import SMOKE_TASK

    rows = synthetic_rows(settings(tmp_path), "validation", 3)
    assert [r["answer"] for r in rows] == [p.answer for p in generate_problems("validation", 3, 0, SMOKE_TASK)]
    harder = synthetic_rows(settings(tmp_path, "task.min_steps=3", "task.max_steps=3"), "validation", 3)
    assert all(r["solution"].count("\n\n") >= 2 for r in harder) and harder != rows


def test_the_trainer_takes_the_mapped_config_and_the_partner_reward(tmp_path, tiny_dir, monkeypatch):
    from tandem.models.loading import load_model, load_tokenizer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")  # rollout_func is TRL-experimental (the script sets it too)
    cfg = settings(tmp_path, "--model", str(tiny_dir), "steps=2", "prompts_per_step=2", "group_size=2",
                   "partner_reward.weight=0.5", "tandem.junior_update=sync:1")
    rows = synthetic_rows(cfg, "train", 4)
    tokenizer = load_tokenizer(str(tiny_dir))
    trainer, rollout = tandem_trainer(cfg, rows, tokenizer, load_model(str(tiny_dir)))
    assert (trainer.args.max_steps, trainer.num_generations) == (4, 2)  # ppo_mini_batches=2: 2 optimizer steps a step
    assert len(trainer.reward_funcs) == 2 and rollout.partner_reward.weight == 0.5  # grader + partner score
    assert rollout.trainer is trainer and rollout.tandem.junior_update == "sync:1"


def test_trl_takes_ppo_mini_batches_times_ppo_epochs_optimizer_steps_per_generation(tmp_path, tiny_dir, monkeypatch):
    """One step, trained: the rollout generates once, TRL steps the optimizer 2 mini-batches x 2 epochs = 4 times."""
    from tandem.models.loading import load_model, load_tokenizer

    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")
    cfg = settings(tmp_path, "--model", str(tiny_dir), "steps=1", "prompts_per_step=2", "group_size=2",
                   "ppo_mini_batches=2", "ppo_epochs=2", "sampling.max_new_tokens=8", "threads=1")
    trainer, rollout = tandem_trainer(cfg, synthetic_rows(cfg, "train", 4), load_tokenizer(str(tiny_dir)),
                                      load_model(str(tiny_dir)))
    trainer.train()
    assert trainer.state.global_step == 4
    assert [(s.mode, s.responses) for s in rollout.history] == [("train", 4)]  # one generation batch of 2 x 2
