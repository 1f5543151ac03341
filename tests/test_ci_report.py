"""`scripts/ci_report.py`: where `.ci/run`'s time went, and which slow tests nobody has explained.

The report is built from what `.ci/run` leaves behind (phases.tsv, each pytest process's test
times); tests/slow_tests.toml names every test over 20 s with why, and each entry must name a
test that exists, so the list cannot outlive what it explains.
"""

from __future__ import annotations

import ast
import importlib.util
import json
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
spec = importlib.util.spec_from_file_location("ci_report", REPO / "scripts" / "ci_report.py")
ci_report = importlib.util.module_from_spec(spec)
spec.loader.exec_module(ci_report)

LANES = {"main", "scale", "v2"}  # .ci/run's three test runs


def functions_in(path: Path) -> set[str]:
    return {node.name for node in ast.walk(ast.parse(path.read_text())) if isinstance(node, ast.FunctionDef)}


@pytest.mark.parametrize("entry", ci_report.read_slow_list(), ids=lambda e: e["test"])
def test_every_listed_slow_test_exists_in_a_known_lane_with_a_reason(entry):
    file, _, rest = entry["test"].partition("::")
    assert (REPO / file).is_file(), f"{file} is listed in tests/slow_tests.toml but does not exist"
    if rest:
        assert rest.split("[")[0] in functions_in(REPO / file), entry["test"]
    assert set(ci_report._lanes(entry)) <= LANES and len(entry["why"].split()) >= 8


def write_run(directory: Path, phases: list[tuple], lanes: dict[str, dict[str, float]]) -> None:
    (directory / "tests").mkdir(parents=True)
    (directory / "phases.tsv").write_text("".join("\t".join(map(str, p)) + "\n" for p in phases))
    for i, (lane, tests) in enumerate(lanes.items()):
        (directory / "tests" / f"{lane}-{i}.json").write_text(json.dumps({"lane": lane, "tests": tests}))


def test_the_report_gives_each_phase_each_lanes_count_and_the_slowest_tests_first(tmp_path):
    write_run(tmp_path, [("main venv", "main", 3, 0), ("main suite", "main", 40, 0), ("scale lane", "scale", 90, 1)],
              {"main": {"t::a": 1.0, "t::b": 30.0, "t::c": 5.0}, "scale": {"s::x": 80.0}})
    record = ci_report.report(tmp_path, top=2, listed=[])
    assert record["total_seconds"] == 133
    assert [p["phase"] for p in record["phases"]] == ["main venv", "main suite", "scale lane"]
    assert record["phases"][2]["exit_status"] == 1
    assert record["tests_per_lane"] == {"main": 3, "scale": 1}
    assert [t["test"] for t in record["slowest_tests"]] == ["s::x", "t::b"]
    text = ci_report.render(record)
    assert "(exit 1)" in text and "133 s" in text


def test_a_test_over_twenty_seconds_is_reported_unless_the_list_names_it_in_its_lane():
    lanes = {"main": {"tests/a.py::slow": 21.0, "tests/a.py::fast": 19.9, "tests/b.py::slow[x]": 50.0},
             "scale": {"tests/a.py::slow": 25.0}}
    listed = [{"test": "tests/b.py", "lane": "main", "why": "-"}, {"test": "tests/a.py::slow", "lane": ["scale"], "why": "-"}]
    assert [(t["lane"], t["test"]) for t in ci_report.unlisted_slow(lanes, listed)] == [("main", "tests/a.py::slow")]
    assert ci_report.unlisted_slow(lanes, []) == [
        {"seconds": 21.0, "lane": "main", "test": "tests/a.py::slow"},
        {"seconds": 50.0, "lane": "main", "test": "tests/b.py::slow[x]"},
        {"seconds": 25.0, "lane": "scale", "test": "tests/a.py::slow"}]


def test_main_writes_the_json_beside_the_runs_files(tmp_path, capsys):
    write_run(tmp_path, [("main suite", "main", 7, 0)], {"main": {"tests/z.py::t": 30.0}})
    assert ci_report.main([str(tmp_path)]) == 0
    record = json.loads((tmp_path / "ci_times.json").read_text())
    assert record["slow_unlisted"] == [{"seconds": 30.0, "lane": "main", "test": "tests/z.py::t"}]
    assert "1 test(s) over 20 s not in tests/slow_tests.toml" in capsys.readouterr().out


def test_an_entry_without_a_reason_is_refused(tmp_path):
    path = tmp_path / "slow.toml"
    path.write_text('[[slow]]\ntest = "tests/a.py"\nlane = "main"\n')
    with pytest.raises(SystemExit, match=r"lacks \['why'\]"):
        ci_report.read_slow_list(path)
