"""Config files and `key=value` overrides: the one line each mistake gets (tandem.io.config_files, tandem.io.strict)."""

import pytest

from tandem.io.config_files import load_config, read_config_file
from tandem.errors import TandemError
from tandem_app.train.train_config import TrainConfig


@pytest.mark.parametrize("override, suggestion", [
    ("prob_senor=0.5", "tandem.prob_senior"),  # a section's key typed at the top
    ("prob_senior=0.5", "tandem.prob_senior"),  # right name, section left out
    ("tandem.prob_senor=0.5", "tandem.prob_senior"),
    ("task.max_stpes=3", "task.max_steps"),
    ("clip_ratio_hihg=0.28", "loss.clip_ratio_high"),
    ("stpes=3", "steps"),
])
def test_a_misspelt_key_gets_the_full_dotted_key_to_type(override, suggestion):
    key = override.split("=")[0]
    with pytest.raises(TandemError) as e:
        load_config(TrainConfig, None, [override])
    assert str(e.value) == f"unknown config key {key!r}: did you mean {suggestion}?"


def test_a_misspelt_key_in_a_file_gets_the_full_dotted_key_too(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("steps: 4\ntandem:\n  prob_senor: 0.5\n")
    with pytest.raises(TandemError, match=r"^unknown config key 'tandem.prob_senor': did you mean tandem.prob_senior\?$"):
        load_config(TrainConfig, path)


@pytest.mark.parametrize("text, line", [
    ("steps: [1, 2\nlr: 0.1\n", "{path}:2:3: expected ',' or ']', but got ':' (while parsing a flow sequence)"),
    ("tandem:\n  prob_senior: 0.5\n seed: 1\n",
     "{path}:3:2: expected <block end>, but found '<block mapping start>' (while parsing a block mapping)"),
    ("steps: 4\nlr: 0.1\nsteps: 8\n", "{path}:3:1: duplicate key 'steps'; set it once"),
    ("just a string\n", "config file {path} must be a mapping of keys to values (key: value lines), "
                        "got the value 'just a string'"),
    ("- steps\n- lr\n", "config file {path} must be a mapping of keys to values (key: value lines), got a list"),
])
def test_a_bad_file_is_named_with_its_line_and_column_and_what_is_wrong(tmp_path, text, line):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    with pytest.raises(TandemError) as e:
        read_config_file(path)
    assert str(e.value) == line.format(path=path)


def test_a_json_file_with_a_key_twice_names_the_key(tmp_path):
    path = tmp_path / "run.json"
    path.write_text('{"steps": 4, "steps": 8}')
    with pytest.raises(TandemError, match=rf"^{path}:1:14: duplicate key 'steps'; set it once$"):
        read_config_file(path)


def test_an_empty_file_is_an_empty_config_and_a_good_one_reads(tmp_path):
    (tmp_path / "empty.yaml").write_text("")
    (tmp_path / "run.yaml").write_text("steps: 4\ntandem:\n  prob_senior: 0.25\n")
    assert read_config_file(tmp_path / "empty.yaml") == {}
    cfg = load_config(TrainConfig, tmp_path / "run.yaml", ["lr=0.001"])
    assert (cfg.steps, cfg.tandem.prob_senior, cfg.lr) == (4, 0.25, 0.001)


def test_a_byte_that_is_not_utf8_is_named_as_in_the_data_files(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_bytes(b"steps: 4\n# caf\xe9 au lait\nlr: 0.1\n")
    with pytest.raises(TandemError) as e:
        read_config_file(path)
    assert str(e.value) == f"{path}:2: not UTF-8 (byte 0xE9 at column 6); save the file as UTF-8"


def test_a_config_file_that_is_not_utf8_is_refused_in_one_line_before_any_folder(tiny_dir, tmp_path, capsys):
    from tandem_app.commands.cli import main

    path, out = tmp_path / "run.json", tmp_path / "run"
    path.write_bytes(b'{"steps": 1,\n "wandb_project": "\xff"}\n')
    assert main(["train", "--config", str(path), "--model", str(tiny_dir), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert err.splitlines() == [f"error: {path}:2: not UTF-8 (byte 0xFF at column 20); save the file as UTF-8"]
    assert not out.exists()


def test_a_byte_order_mark_before_the_first_key_is_accepted(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_bytes(b"\xef\xbb\xbfsteps: 4\n")
    assert read_config_file(path) == {"steps": 4}
