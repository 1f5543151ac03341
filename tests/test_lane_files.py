"""The scale lane leaves some of its files to the main suite; those must really run here.

`scripts/test_scale.sh` skips the files it names in IN_MAIN_SUITE (the main suite runs them
whole, with the same verl). A file there that needs vLLM, or a main venv without verl,
would turn them into skips: both are checked here, and `conftest.pytest_sessionfinish`
fails the main suite on any skip in those files, but for one cause outside CI: a checkout
without the real data (`conftest.lane_skip_failure`, checked here on made-up skips).
"""

from __future__ import annotations

from pathlib import Path

from conftest import DATA_ABSENT, data_absent_note, in_main_suite

REPO = Path(__file__).resolve().parents[1]


def test_the_files_the_lane_leaves_to_the_main_suite_exist_and_need_no_vllm():
    names = in_main_suite()
    assert names
    for name in names:
        text = (REPO / "tests" / name).read_text()
        assert 'importorskip("vllm"' not in text and "mark.vllm" not in text, name


def test_the_main_suite_has_the_verl_those_files_test():
    import verl

    pins = (REPO / "scripts" / "scale" / "install.sh").read_text() + (REPO / "pyproject.toml").read_text()
    assert f"verl=={verl.__version__}" in pins


def _finish(skipped: list[str], monkeypatch, reason: str = "Skipped: absent", ci: str = "") -> int:
    """conftest's session end over reports skipped in these files; the exit status it leaves."""
    import types

    import conftest

    monkeypatch.delenv("TANDEM_REQUIRE_SCALE", raising=False)
    monkeypatch.setenv("CI", ci)
    reports = [types.SimpleNamespace(nodeid=n, longrepr=("f", 1, reason)) for n in skipped]
    reporter = types.SimpleNamespace(stats={"skipped": reports})
    session = types.SimpleNamespace(config=types.SimpleNamespace(
        pluginmanager=types.SimpleNamespace(get_plugin=lambda name: reporter)), exitstatus=0)
    conftest.pytest_sessionfinish(session, 0)
    return session.exitstatus


def test_a_skip_in_a_file_the_lane_leaves_to_the_main_suite_fails_it_and_others_do_not(monkeypatch):
    owned = in_main_suite()[0]
    assert _finish(["tests/test_scale_vllm_engine.py"], monkeypatch) == 0  # the lane runs that one
    assert _finish([f"tests/{owned}::test_x"], monkeypatch) == 1


DATA_SKIP = f"Skipped: {DATA_ABSENT} (the fetch command is at the end of the run)"
IMPORT_SKIP = "Skipped: verl's verl-core extras are not installed (fastapi)"


def test_a_checkout_without_the_real_data_passes_with_its_data_tests_skipped(monkeypatch, capsys):
    owned = in_main_suite()[0]
    assert _finish([f"tests/{owned}::test_x", "tests/test_boundaries.py::test_y"], monkeypatch, DATA_SKIP) == 0
    assert "main suite:" not in capsys.readouterr().out


def test_a_ci_run_fails_on_any_skip_in_the_lane_files_and_names_its_cause(monkeypatch, capsys):
    owned = in_main_suite()[0]
    assert _finish([f"tests/{owned}::test_x"], monkeypatch, DATA_SKIP, ci="true") == 1
    assert DATA_ABSENT in capsys.readouterr().out
    assert _finish([f"tests/{owned}::test_x"], monkeypatch, IMPORT_SKIP, ci="true") == 1
    out = capsys.readouterr().out
    assert f"1 test(s) skipped in tests/{owned}" in out and "verl-core extras are not installed (fastapi)" in out
    assert "install what" not in out  # the old line blamed an import whatever the cause


def test_outside_ci_a_skip_for_another_cause_still_fails_the_main_suite(monkeypatch, capsys):
    owned = in_main_suite()[0]
    assert _finish([f"tests/{owned}::test_x"], monkeypatch, IMPORT_SKIP, ci="false") == 1
    assert "fix the cause: verl's verl-core extras are not installed (fastapi)" in capsys.readouterr().out


def test_the_data_absent_skips_are_named_once_with_the_fetch_command(tmp_path):
    skips = [("tests/test_boundaries.py::test_a", DATA_SKIP.removeprefix("Skipped: ")),
             ("tests/test_boundaries.py::test_b", DATA_SKIP.removeprefix("Skipped: ")),
             ("tests/test_scale_prepare_data.py::test_c", DATA_SKIP.removeprefix("Skipped: ")),
             ("tests/test_engine.py::test_gpu", "CUDA is not available")]
    note = data_absent_note(skips, tmp_path / "shared" / "data")
    assert note.startswith(f"3 test(s) in 2 file(s) skipped: the real test data is absent at {tmp_path}/shared/data")
    assert "(tests/test_boundaries.py, tests/test_scale_prepare_data.py)" in note
    assert "`python scripts/fetch_shared_data.py`" in note and "test_engine" not in note
    assert data_absent_note(skips[3:], tmp_path) is None
