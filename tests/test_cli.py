"""The `tandem-rlvr` command line: the issue's contract flags, output fields, and bad input."""

import argparse
import json

import pytest

from tandem_app.commands.cli import main

ROLLOUT_FIELDS = {"prompt_id", "sample", "token_ids", "authorship_mask", "text", "finish_reason"}


@pytest.fixture()
def prompts_file(tmp_path):
    path = tmp_path / "prompts.jsonl"
    path.write_text('{"id": "p1", "prompt": "Mia has 3 apples."}\n{"id": 2, "prompt": "Leo has 7 coins."}\n')
    return path


def test_rollout_writes_one_object_per_sample_with_the_contract_fields(tiny_dir, tiny_dir_seed1, prompts_file, tmp_path):
    out = tmp_path / "out.jsonl"
    rc = main(["rollout", "--senior", str(tiny_dir), "--junior", str(tiny_dir_seed1), "--prompts", str(prompts_file),
               "--strategy", "word", "--prob-senior", "0.5", "--max-gap-tokens", "32", "--n", "3",
               "--max-new-tokens", "16", "--temperature", "0.6", "--seed", "1", "--out", str(out)])
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert rc == 0 and len(rows) == 6
    assert all(ROLLOUT_FIELDS <= set(r) and len(r["authorship_mask"]) == len(r["token_ids"]) for r in rows)
    assert sorted((str(r["prompt_id"]), r["sample"]) for r in rows)[:3] == [("2", 0), ("2", 1), ("2", 2)]
    assert all(r["junior_logprobs"] is None for r in rows)  # only on request (--junior-logprobs)


def test_rollout_reports_the_juniors_logprobs_on_request(tiny_dir, tiny_dir_seed1, prompts_file, tmp_path):
    out = tmp_path / "out.jsonl"
    assert main(["rollout", "--senior", str(tiny_dir), "--junior", str(tiny_dir_seed1), "--prompts", str(prompts_file),
                 "--max-new-tokens", "8", "--junior-logprobs", "--out", str(out)]) == 0
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert all(len(r["junior_logprobs"]) == len(r["token_ids"]) for r in rows)


def test_rollout_solo_marks_every_token_senior(tiny_dir, prompts_file, tmp_path):
    out = tmp_path / "solo.jsonl"
    assert main(["rollout", "--senior", str(tiny_dir), "--solo", "--prompts", str(prompts_file),
                 "--max-new-tokens", "8", "--out", str(out)]) == 0
    assert all(set(json.loads(line)["authorship_mask"]) == {1} for line in out.read_text().splitlines())


def test_build_tiny_writes_a_loadable_model_directory(tmp_path):
    assert main(["build-tiny", "--out", str(tmp_path / "m"), "--seed", "3"]) == 0
    assert (tmp_path / "m" / "config.json").is_file() and (tmp_path / "m" / "tokenizer.json").is_file()


def test_boundaries_prints_the_count_last_and_writes_the_sorted_ids(tiny_dir, tmp_path, capsys):
    out = tmp_path / "ids.json"
    assert main(["boundaries", "--tokenizer", str(tiny_dir), "--strategy", "word", "--out", str(out)]) == 0
    ids = json.loads(out.read_text())
    assert capsys.readouterr().out.strip().splitlines()[-1] == str(len(ids)) and ids == sorted(ids)


def test_boundaries_loads_a_gpt2_style_directory_without_a_tokenizer_config(shared_data, capsys):
    tokenizer = shared_data / "tokenizers" / "gpt2"  # vocab.json + merges.txt only
    assert main(["boundaries", "--tokenizer", str(tokenizer), "--strategy", "word"]) == 0
    assert capsys.readouterr().out.strip().splitlines()[-1] == "33135"


def test_an_unloadable_tokenizer_directory_gives_one_error_line(tmp_path, capsys):
    (tmp_path / "tokenizer_config.json").write_text('{"tokenizer_class": "NoSuchTokenizer"}')
    assert main(["boundaries", "--tokenizer", str(tmp_path), "--strategy", "word"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith(f"error: cannot load a tokenizer from {tmp_path}")


@pytest.mark.parametrize("argv, fragment", [
    (["rollout", "--senior", "{tiny}", "--prompts", "{prompts}", "--out", "{out}"], "--junior is required"),
    (["rollout", "--senior", "{tiny}", "--solo", "--prompts", "{missing}", "--out", "{out}"], "no such file"),
    (["rollout", "--senior", "{missing}", "--solo", "--prompts", "{prompts}", "--out", "{out}"], "is missing"),
    (["rollout", "--senior", "{tiny}", "--junior", "{missing}", "--prompts", "{prompts}", "--out", "{out}"],
     "model directory {missing} is missing (no such file or directory)"),
    (["rollout", "--senior", "{prompts}", "--solo", "--prompts", "{prompts}", "--out", "{out}"], "not a Hugging Face"),
    (["rollout", "--senior", "{tiny}", "--solo", "--prompts", "{bad}", "--out", "{out}"], "not valid JSON"),
    (["rollout", "--senior", "{tiny}", "--solo", "--prompts", "{noid}", "--out", "{out}"], "missing key"),
    (["rollout", "--senior", "{tiny}", "--junior", "{tiny}", "--prompts", "{prompts}", "--prob-senior", "2",
      "--out", "{out}"], "prob_senior"),
    (["rollout", "--senior", "{tiny}", "--solo", "--prompts", "{prompts}", "--max-new-tokens", "5000",
      "--out", "{out}"], "context"),
    (["rollout", "--senior", "{tiny}", "--solo", "--junior-logprobs", "--prompts", "{prompts}", "--out", "{out}"],
     "--junior-logprobs needs"),
])
def test_bad_input_gives_one_clear_line_and_exit_code_2(argv, fragment, tiny_dir, prompts_file, tmp_path, capsys):
    (tmp_path / "bad.jsonl").write_text('{"id": 1, "prompt": "ok"}\n{oops\n')
    (tmp_path / "noid.jsonl").write_text('{"prompt": "no id"}\n')
    names = {"tiny": tiny_dir, "prompts": prompts_file, "out": tmp_path / "o.jsonl", "missing": tmp_path / "nope",
             "bad": tmp_path / "bad.jsonl", "noid": tmp_path / "noid.jsonl"}
    assert main([a.format(**names) for a in argv]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error:") and fragment.format(**names) in err[0]


@pytest.mark.parametrize("command, flags", [
    ("build-tiny", ["--out", "--seed"]),
    ("boundaries", ["--tokenizer", "--strategy", "--out"]),
    ("rollout", ["--senior", "--junior", "--prompts", "--out", "--strategy", "--prob-senior", "--max-gap-tokens",
                 "--n", "--max-new-tokens", "--temperature", "--seed", "--backend", "--solo"]),
])
def test_every_subcommand_explains_its_flags(command, flags, capsys):
    with pytest.raises(SystemExit) as e:
        main([command, "--help"])
    out = capsys.readouterr().out
    assert e.value.code == 0
    missing = [f for f in flags if f"  {f} " not in out and f"  {f}\n" not in out]
    assert not missing, f"{command} --help does not describe {missing}"


def test_rollout_defaults_are_the_configs_own(capsys):
    from tandem.process.config import TandemConfig
    from tandem.rollout.sampling import SamplingConfig

    with pytest.raises(SystemExit):
        main(["rollout", "--help"])
    out = " ".join(capsys.readouterr().out.split())
    t, s = TandemConfig(), SamplingConfig()
    for flag, default in [("--prob-senior", t.prob_senior), ("--max-gap-tokens", t.max_gap_tokens),
                          ("--chunk-size", t.chunk_size), ("--first-author", t.first_author),
                          ("--temperature", s.temperature), ("--max-new-tokens", s.max_new_tokens)]:
        described = out.split(f"{flag} ", 2)[-1].split(" --", 1)[0]
        assert f"(default {default}" in described, (flag, described)


# ---------------------------------------------------------------- start-up: index, version, overrides, paths

def _in_a_fresh_python(code: str) -> str:
    import subprocess
    import sys

    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_the_command_line_starts_without_torch_for_help_version_and_a_mistyped_command():
    # An unknown flag of a config-driven command is not here: its error reads the command's config keys
    # (`--steps 2`: "use steps=2"), and the config classes import torch.
    heavy = "[m for m in ('torch', 'transformers', 'tandem_eval') if m in sys.modules]"
    assert _in_a_fresh_python(f"import sys, tandem_app.commands.cli; print({heavy})") == "[]"
    answers = _in_a_fresh_python(
        "import contextlib, io, sys\nfrom tandem_app.commands.cli import main\n"
        "for argv in (['--help'], ['--version'], ['trian'], []):\n"
        "    with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):\n"
        "        try:\n            main(argv)\n        except SystemExit:\n            pass\n"
        f"print({heavy})")
    assert answers == "[]"


def test_the_index_lists_each_command_as_its_module_registers_it():
    from tandem_app.commands.cli import COMMANDS, build_parser

    sub = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction))
    assert {a.dest: a.help for a in sub._choices_actions} == {name: line for name, (_, line) in COMMANDS.items()}


def test_version_is_the_installed_packages(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.strip() == f"tandem-rlvr {version('tandem-rlvr')}"


@pytest.mark.parametrize("argv", [
    ["train", "--out", "run1", "steps=4", "--method", "grpo", "lr=0.001"],
    ["train", "steps=4", "--out", "run1", "lr=0.001", "--method", "grpo"],
    ["train", "steps=4", "lr=0.001", "--out", "run1", "--method", "grpo"],
])
def test_overrides_may_come_before_between_or_after_the_flags(argv):
    from tandem_app.commands.cli import parse
    from tandem_app.commands.config_args import config_from_args
    from tandem_app.train.train_config import TrainConfig

    args = parse(argv)
    assert args.overrides == ["steps=4", "lr=0.001"]
    cfg = config_from_args(TrainConfig, args, ("method", "model", "out"))
    assert (cfg.steps, cfg.lr, cfg.out, cfg.method) == (4, 0.001, "run1", "grpo")


@pytest.mark.parametrize("argv, unrecognized", [
    (["train", "--out", "run1", "steps=4", "--bogus"], "--bogus"),
    (["build-tiny", "--out", "tiny", "seed=1"], "seed=1"),  # a command without overrides takes no key=value
])
def test_a_word_after_the_flags_that_is_no_override_is_refused_by_its_command(argv, unrecognized, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    err = capsys.readouterr().err.strip().splitlines()
    assert e.value.code == 2 and err[-1] == f"tandem-rlvr {argv[0]}: error: unrecognized arguments: {unrecognized}"


@pytest.mark.parametrize("command", ["train", "sft"])
def test_a_missing_model_directory_is_called_missing_in_one_line(command, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "run1").mkdir()
    for model in (tmp_path / "run1" / "model", "run1/model"):  # absolute, and one slash beside an existing run1
        assert main([command, "--model", str(model), "--out", "out", "steps=1"]) == 2
        err = capsys.readouterr().err.strip().splitlines()
        assert err == [f"error: model directory {model} is missing (no such file or directory); pass an existing "
                       "directory or a Hugging Face hub name"]
        assert not (tmp_path / "out").exists()


def test_train_help_still_lists_every_config_field_once_printed(capsys):
    with pytest.raises(SystemExit):
        main(["train", "--help"])
    assert "partner_reward.weight=0.0" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["train", "sft"])
def test_the_help_explains_the_logging_keys(command, capsys):
    with pytest.raises(SystemExit):
        main([command, "--help"])
    out = capsys.readouterr().out
    assert "metrics_format=flat" in out and "tensorboard=False" in out and "tensorboard_dir=" in out
    for key in ("metrics_format", "tensorboard", "tensorboard_dir", "wandb"):
        assert f"\n  {key} " in out, key
    assert "`pip install tensorboard`" in out and "{\"step\": s, \"data\":" in out


def test_a_run_folder_given_for_a_model_points_at_the_model_inside_it(tiny_dir, tmp_path, capsys):
    """`train --model runs/x/sft` (the run, not its model/): the one line names runs/x/sft/model."""
    import shutil

    run = tmp_path / "sft-run"
    shutil.copytree(tiny_dir, run / "model")
    (run / "metrics.jsonl").write_text("")
    assert main(["train", "--model", str(run), "--out", str(tmp_path / "out"), "steps=1"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("error: ") and err[0].endswith(f"pass {run / 'model'}"), err
    assert not (tmp_path / "out").exists()
