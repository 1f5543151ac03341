"""README's CI table is the two measured `.ci/run`s, digit for digit, with their commits.

Each cell of the table under `## Tests` comes from `model_spec/bench/ci_times_cold.json` or
`ci_times_warm.json` (written by `scripts/ci_report.py` at the end of `.ci/run`): the phase
seconds, the whole run and the tests per lane, and each column's header names its file's commit.
The budget line above it stays the one the project keeps itself to.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
RUNS = {"cold": "ci_times_cold.json", "warm": "ci_times_warm.json"}


def table() -> dict[str, list[str]]:
    """{first cell: the other cells} of the table whose header starts `| phase (seconds)`."""
    block = README[README.index("| phase (seconds)"):].split("\n\n")[0]
    rows = [[c.strip() for c in line.strip("|").split("|")] for line in block.splitlines()]
    return {r[0]: r[1:] for r in rows if not set(r[0]) <= set("-")}


def expected(run: dict) -> dict[str, str]:
    cells = {p["phase"]: str(p["seconds"]) for p in run["phases"]}
    cells["whole `.ci/run`"] = str(run["total_seconds"])
    lanes = run["tests_per_lane"]
    cells["tests: main / scale / V2"] = f"{lanes['main']} / {lanes['scale']} / {lanes['v2']}"
    return cells


@pytest.mark.parametrize("column, name", enumerate(RUNS.values()), ids=list(RUNS))
def test_each_column_is_its_measured_run(column, name):
    run = json.loads((ROOT / "model_spec" / "bench" / name).read_text())
    rows = table()
    assert rows["phase (seconds)"][column].endswith(run["commit"]), f"the header does not name {name}'s commit"
    assert f"model_spec/bench/{name}" in README
    for phase, seconds in expected(run).items():
        assert rows[phase][column] == seconds, f"{phase}: README {rows[phase][column]}, {name} {seconds}"


def test_the_measured_runs_keep_the_budget_the_readme_states():
    assert re.search(r"whole `\.ci/run` at most 45\s+minutes on the 2-core CI machine, the main suite at most 12", README)
    warm = json.loads((ROOT / "model_spec" / "bench" / RUNS["warm"]).read_text())
    main_suite = next(p["seconds"] for p in warm["phases"] if p["phase"] == "main suite")
    assert warm["total_seconds"] <= 45 * 60 and main_suite <= 12 * 60
