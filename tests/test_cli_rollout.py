"""`tandem-rlvr rollout` takes `tandem.KEY=VALUE` overrides as `train` does; a flag given wins."""

from __future__ import annotations

import json

import pytest

from tandem_app.commands.cli import main


@pytest.fixture
def prompts_file(tmp_path):
    path = tmp_path / "prompts.jsonl"
    path.write_text('{"id": "p1", "prompt": "Mia has 3 apples."}\n{"id": 2, "prompt": "Leo has 7 coins."}\n')
    return path


def _rollout(tiny_dir, tiny_dir_seed1, prompts_file, out, *extra) -> list[dict]:
    assert main(["rollout", "--senior", str(tiny_dir), "--junior", str(tiny_dir_seed1), "--prompts", str(prompts_file),
                 "--out", str(out), "--n", "2", "--max-new-tokens", "6", "--strategy", "bernoulli", *extra]) == 0
    return [json.loads(line) for line in out.read_text().splitlines()]


def test_an_override_takes_effect_and_a_given_flag_wins_over_it(tiny_dir, tiny_dir_seed1, prompts_file, tmp_path):
    senior_only = _rollout(tiny_dir, tiny_dir_seed1, prompts_file, tmp_path / "a.jsonl", "tandem.prob_senior=1.0")
    assert all(r["authorship_mask"] == [1] * len(r["token_ids"]) for r in senior_only)
    junior_only = _rollout(tiny_dir, tiny_dir_seed1, prompts_file, tmp_path / "b.jsonl", "tandem.prob_senior=0.0")
    assert all(r["authorship_mask"] == [0] * len(r["token_ids"]) for r in junior_only)
    flag_wins = _rollout(tiny_dir, tiny_dir_seed1, prompts_file, tmp_path / "c.jsonl", "tandem.prob_senior=0.0",
                         "--prob-senior", "1.0")
    assert [r["authorship_mask"] for r in flag_wins] == [r["authorship_mask"] for r in senior_only]


def test_the_seed_override_keys_the_coins_and_the_sampling_as_the_flag_does(tiny_dir, tiny_dir_seed1, prompts_file,
                                                                            tmp_path):
    by_override = _rollout(tiny_dir, tiny_dir_seed1, prompts_file, tmp_path / "a.jsonl", "tandem.seed=7")
    by_flag = _rollout(tiny_dir, tiny_dir_seed1, prompts_file, tmp_path / "b.jsonl", "--seed", "7")
    assert by_override == by_flag


def test_a_misspelt_override_fails_with_the_suggestion_line(tiny_dir, tiny_dir_seed1, prompts_file, tmp_path, capsys):
    code = main(["rollout", "--senior", str(tiny_dir), "--junior", str(tiny_dir_seed1), "--prompts", str(prompts_file),
                 "--out", str(tmp_path / "out.jsonl"), "tandem.prob_senor=0.3"])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and not (tmp_path / "out.jsonl").exists()
    assert err[-1] == "error: unknown config key 'tandem.prob_senor': did you mean tandem.prob_senior?"


def test_an_override_that_is_not_a_tandem_key_is_refused(tiny_dir, prompts_file, tmp_path, capsys):
    code = main(["rollout", "--senior", str(tiny_dir), "--solo", "--prompts", str(prompts_file),
                 "--out", str(tmp_path / "out.jsonl"), "prob_senior=0.3"])
    assert code == 2
    assert "did you mean tandem.prob_senior?" in capsys.readouterr().err
