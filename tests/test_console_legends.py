"""Every console table the eval prints ends with a one-line legend saying what its numbers are."""

from __future__ import annotations

import json

from tandem_eval.MATH.eval_step_handoff import LEAK_LEGEND, print_leak_table
from tandem_eval.core.resume import file_stem
from tandem_eval.core.runner import print_table


def test_the_pass_at_k_table_ends_with_its_legend_naming_n(capsys):
    scores = {"pass@1": 0.5, "pass@2": 0.75}
    print_table({"ks": [1, 2], "config": {"n": 2}, "benchmarks": {"toy": scores}, "macro": scores, "micro": scores})
    lines = capsys.readouterr().out.strip().splitlines()
    assert lines[0].startswith("benchmark") and [l.split()[0] for l in lines[1:4]] == ["toy", "macro", "micro"]
    assert len(lines) == 5 and "n=2 samples per problem" in lines[-1] and "macro" in lines[-1] and "micro" in lines[-1]


def test_the_leak_controlled_table_explains_its_columns_and_the_left_out_count(tmp_path, capsys):
    summary = {"leak_controlled": {"pass@1": 0.25, "left_out": {"pass@1": 1}},
               "answer_visible": {"visible_rate": 0.1, "undetermined_rate": None}, "hit_budget": {"rate": 0.0}}
    (tmp_path / f"{file_stem('toy')}.summary.json").write_text(json.dumps(summary))
    print_leak_table(tmp_path, {"ks": [1], "benchmarks": {"toy": {}}})
    lines = capsys.readouterr().out.strip().splitlines()
    assert "(-1)" in lines[1] and "—" in lines[1] and lines[-1] == LEAK_LEGEND
    for column in ("(-N)", "visible", "undet.", "budget", "—"):
        assert column in LEAK_LEGEND and (column in lines[0] or column in ("(-N)", "—"))
