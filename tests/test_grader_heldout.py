"""The held-out runner counts both error sides, by class, and refuses a malformed case in one line."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))
import grader_heldout  # noqa: E402

CASES = [
    {"id": "p1", "class": "braced", "gold": "\\frac{29}4", "response": "\\boxed{\\frac{29}{4}}", "expect": "pay"},
    {"id": "p2", "class": "braced", "gold": "7", "response": "\\boxed{8}", "expect": "pay"},  # mislabelled: refused
    {"id": "n1", "class": "unit", "gold": "24 \\text{ m}", "response": "\\boxed{24 \\text{ km}}", "expect": "refuse"},
    {"id": "n2", "class": "unit", "gold": "24", "response": "\\boxed{24}", "expect": "refuse"},  # mislabelled: paid
]


def write(tmp_path: Path, rows: list[dict]) -> Path:
    path = tmp_path / "cases.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def test_wrong_verdicts_are_counted_on_each_side_with_their_ids(tmp_path, capsys):
    out = tmp_path / "counts.json"
    assert grader_heldout.main([str(write(tmp_path, CASES)), "--out", str(out)]) == 0
    counts = json.loads(out.read_text())["this_checkout"]
    assert (counts["pay"]["cases"], counts["pay"]["wrong"], counts["pay"]["wrong_ids"]) == (2, 1, ["p2"])
    assert (counts["refuse"]["cases"], counts["refuse"]["wrong"], counts["refuse"]["wrong_ids"]) == (2, 1, ["n2"])
    assert counts["refuse"]["classes"] == {"unit": {"cases": 2, "wrong": 1}}
    assert "right answers refused 1 of 2; wrong answers paid 1 of 2" in capsys.readouterr().out


def test_a_case_without_a_side_is_refused_with_its_line(tmp_path):
    bad = [CASES[0], {**CASES[1], "expect": "maybe"}]
    with pytest.raises(SystemExit, match=r"cases.jsonl:2: .*expect 'pay' or 'refuse'"):
        grader_heldout.main([str(write(tmp_path, bad))])
