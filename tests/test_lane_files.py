"""The scale lane leaves some of its files to the main suite; those must really run here.

`scripts/test_scale.sh` skips the files it names in IN_MAIN_SUITE (the main suite runs them
whole, with the same verl). A file there that needs vLLM, or a main venv without verl,
would turn them into skips: both are checked here, and `conftest.pytest_sessionfinish`
fails the main suite on any skip in those files.
"""

from __future__ import annotations

from pathlib import Path

from conftest import in_main_suite

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


def _finish(skipped: list[str], monkeypatch) -> int:
    """conftest's session end over reports skipped in these files; the exit status it leaves."""
    import types

    import conftest

    monkeypatch.delenv("TANDEM_REQUIRE_SCALE", raising=False)
    reports = [types.SimpleNamespace(nodeid=n, longrepr=("f", 1, "Skipped: absent")) for n in skipped]
    reporter = types.SimpleNamespace(stats={"skipped": reports})
    session = types.SimpleNamespace(config=types.SimpleNamespace(
        pluginmanager=types.SimpleNamespace(get_plugin=lambda name: reporter)), exitstatus=0)
    conftest.pytest_sessionfinish(session, 0)
    return session.exitstatus


def test_a_skip_in_a_file_the_lane_leaves_to_the_main_suite_fails_it_and_others_do_not(monkeypatch):
    owned = in_main_suite()[0]
    assert _finish(["tests/test_scale_vllm_engine.py"], monkeypatch) == 0  # the lane runs that one
    assert _finish([f"tests/{owned}::test_x"], monkeypatch) == 1
