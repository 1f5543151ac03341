"""`EvalRun`: an eval tool's flags, filled from the preset, through the project's one strict parse."""

from __future__ import annotations

import pytest

from tandem.errors import TandemError
from tandem_eval.core import tool
from tandem_eval.MATH import eval_solo
from tandem_eval.core.presets import get_preset
from tandem_eval.core.run_config import EvalRun


def run_for(*argv: str) -> EvalRun:
    return EvalRun.from_args(tool.parser(eval_solo).parse_args(["--model", "m", "--out-dir", "o", *argv]))


def test_a_flag_left_out_takes_the_presets_value_and_a_given_flag_wins():
    paper = get_preset("paper")
    run = run_for("--preset", "paper", "--n", "3")
    assert run.n == 3 and run.preset is paper
    assert run.sampling.max_new_tokens == paper.value("max_new_tokens")
    assert run.benchmarks == tuple(paper.value("benchmarks")) and isinstance(run.benchmarks, tuple)


def test_comma_separated_benchmarks_become_a_tuple():
    assert run_for("--benchmarks", "math500, amc23").benchmarks == ("math500", "amc23")


def test_a_value_of_the_wrong_type_is_refused_by_the_strict_parse_naming_its_key():
    args = tool.parser(eval_solo).parse_args(["--model", "m", "--out-dir", "o"])
    args.n = "three"  # a tool that sets a flag without argparse's type
    with pytest.raises(TandemError, match="^n must be an integer, got 'three'$"):
        EvalRun.from_args(args)
    args.n, args.temperature = 2, "hot"
    with pytest.raises(TandemError, match="^sampling.temperature must be a number"):
        EvalRun.from_args(args)


def test_a_checked_value_out_of_range_is_one_line_naming_the_flag():
    with pytest.raises(TandemError, match="--save-every must be >= 1, got 0"):
        run_for("--save-every", "0")
