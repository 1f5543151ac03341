"""The partner score reads the explanation on a real base: the quick demo's SFT base, scored by the
validity benchmark (scripts/partner_score_validity.py) on 64 of its test problems.

Target `answer`: after the problem's own worked solution the base must predict the answer far better
than after another problem's, on at least 90% of problems (measured 0.984 at seed 0). Target
`solution` does not reach that bar on this base (measured 0.656: a base trained on question ->
solution predicts the solution from the question alone), so only its direction is asserted here
and the docs state the number (model_spec/RESULTS.md, SPEC §13)."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[1] / "scripts" / "partner_score_validity.py"
N = 64


@pytest.fixture(scope="module")
def validity():
    spec = importlib.util.spec_from_file_location("partner_score_validity", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def test_rows(tmp_path_factory) -> Path:
    from tandem_app.task import generate_problems
    from tandem_app.experiments.demo import demo_config

    cfg = demo_config(quick=True)
    path = tmp_path_factory.mktemp("validity") / "quick_test.jsonl"
    rows = [{"question": p.prompt, "answer": p.answer, "solution": p.solution}
            for p in generate_problems("test", N, cfg.seed, cfg.task)]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _measure(validity, quick_demo, data, target, tmp_path) -> dict:
    out = tmp_path / f"{target}.json"
    argv = ["--scorer", str(quick_demo / "sft" / "model"), "--data", str(data), "--target", target,
            "--out", str(out), "--n", str(N)]
    assert validity.main(argv) == 0
    return json.loads(out.read_text())


def test_the_answer_target_reads_the_explanation_on_the_demo_base(validity, quick_demo, test_rows, tmp_path):
    got = _measure(validity, quick_demo, test_rows, "answer", tmp_path)
    assert got["n"] == N
    assert got["own_beats_shuffled_fraction"] >= 0.9, got
    assert got["mean_score"]["own"] > got["mean_score"]["empty"] > got["mean_score"]["shuffled"], got


def test_the_solution_target_leans_the_right_way_but_is_not_validated(validity, quick_demo, test_rows, tmp_path):
    got = _measure(validity, quick_demo, test_rows, "solution", tmp_path)
    assert got["own_minus_shuffled_mean"] > 0, got
    # the question alone predicts the solution best: the instrument's known limit on this base
    assert got["mean_score"]["empty"] > got["mean_score"]["own"], got
