"""The Maj@k experiment's table (`tandem_app.experiments.majority_demo`): per seed, per arm, and against GRPO and TRL."""

from __future__ import annotations

import json

import pytest

from tandem_app.experiments.majority_demo import main, write_table


def arm(pass1: float, maj: float) -> dict:
    return {"pass@1": pass1, "maj@8": maj}


def test_the_table_gives_each_arms_maj_and_its_difference_to_grpo_and_trl_per_seed(tmp_path):
    per_seed = {s: {"grpo": arm(0.80, 0.85 + s / 100), "tandem": arm(0.97, 0.99), "transfer": arm(0.95, 1.0)}
                for s in (0, 1)}
    text = write_table(tmp_path, [0, 1], 8, per_seed).read_text()
    assert "| GRPO | 0.800 / 0.850 | 0.800 / 0.860 | +0.055 |" in text
    saved = json.loads((tmp_path / "majority.json").read_text())
    assert saved["differences"]["transfer-grpo"]["per_seed"] == pytest.approx([0.15, 0.14])
    assert saved["differences"]["transfer-tandem"]["per_seed"] == pytest.approx([0.01, 0.01])
    assert "tandem-tandem" not in saved["differences"] and "grpo-grpo" not in saved["differences"]


def test_bad_arguments_are_one_line(tmp_path, capsys):
    assert main(["--out", str(tmp_path), "--seeds", "0", "--k", "0"]) == 2
    assert main(["--out", str(tmp_path), "--seeds", "0", "--arms", "grpo"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 2 and "--k 0" in err[0] and "--arms grpo: no finished model" in err[1]
