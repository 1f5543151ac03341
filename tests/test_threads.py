"""`threads`: one setting on every command that computes; 0 (auto) is one thread for small models."""

from __future__ import annotations

import json

import pytest
import torch

from tandem.models.threads import SMALL_MODEL_PARAMS, apply_threads, choose_threads, estimated_params

TINY = {"hidden_size": 128, "num_hidden_layers": 4, "vocab_size": 512, "intermediate_size": 384,
        "tie_word_embeddings": True}  # the zoo's tiny shape (tandem_app/zoo.py)
QWEN3_4B = {"hidden_size": 2560, "num_hidden_layers": 36, "vocab_size": 151936, "intermediate_size": 9728,
            "tie_word_embeddings": True}


def model_dir(tmp_path, name, config):
    folder = tmp_path / name
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps(config))
    return folder


@pytest.fixture(autouse=True)
def no_omp_env_and_threads_restored(monkeypatch):
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    before = torch.get_num_threads()
    yield
    torch.set_num_threads(before)


def test_the_estimate_counts_embeddings_attention_and_mlp(tmp_path):
    assert estimated_params(model_dir(tmp_path, "tiny", TINY)) == 512 * 128 + 4 * (4 * 128 * 128 + 3 * 128 * 384)
    untied = {**TINY, "tie_word_embeddings": False}
    assert estimated_params(model_dir(tmp_path, "untied", untied)) == estimated_params(tmp_path / "tiny") + 512 * 128
    qwen = estimated_params(model_dir(tmp_path, "qwen", QWEN3_4B))
    assert 3.5e9 < qwen < 4.5e9  # Qwen3-4B's 4.0B (its q/k norms and biases left out)


def test_auto_is_one_thread_when_every_model_is_small(tmp_path):
    tiny = model_dir(tmp_path, "tiny", TINY)
    assert choose_threads(0, [tiny, tiny]) == 1
    assert apply_threads(0, [tiny]) == 1 == torch.get_num_threads()


def test_auto_leaves_torch_its_default_for_a_large_or_unreadable_model_or_none(tmp_path):
    tiny, large = model_dir(tmp_path, "tiny", TINY), model_dir(tmp_path, "qwen", QWEN3_4B)
    assert choose_threads(0, [tiny, large]) is None
    assert choose_threads(0, [tmp_path / "no-such-model"]) is None
    assert choose_threads(0, ["Qwen/Qwen3-4B-Instruct-2507"]) is None  # a hub id: no local config to read
    assert choose_threads(0, []) is None
    assert estimated_params(tiny) < SMALL_MODEL_PARAMS < estimated_params(large)


def test_a_given_count_is_used_and_omp_num_threads_is_the_users_choice(tmp_path, monkeypatch):
    tiny, large = model_dir(tmp_path, "tiny", TINY), model_dir(tmp_path, "qwen", QWEN3_4B)
    assert choose_threads(3, [large]) == 3 and choose_threads(2, [tiny]) == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    assert choose_threads(0, [tiny]) is None and choose_threads(1, [tiny]) == 1


@pytest.mark.parametrize("argv", [
    ["demo", "--threads", "-1"],
    ["eval-solo", "--model", "m", "--out-dir", "o", "--threads", "-1"],
])
def test_a_negative_thread_count_is_one_line(argv, tmp_path, monkeypatch, capsys):
    from tandem_app.commands.cli import main

    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--threads must be >= 0" in err[0] and err[0].startswith("error:"), err
    assert not any(tmp_path.iterdir())


def test_every_command_that_computes_has_threads():
    """demo, the evals that run a model (flags), and the key=value commands (train, sft, distill) by their configs."""
    from tandem_app.commands.cli import build_parser
    from tandem_app.distill.config import DistillConfig
    from tandem_app.train.sft import SFTConfig
    from tandem_app.train.train_config import TrainConfig

    parser = build_parser()
    subcommands = next(a for a in parser._actions if a.dest == "command").choices
    for name in ("demo", "eval-solo", "eval-handoff", "eval-legibility"):
        assert any("--threads" in a.option_strings for a in subcommands[name]._actions), name
    for config in (TrainConfig, SFTConfig, DistillConfig):
        assert config.threads == 0, config
