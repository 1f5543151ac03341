"""The scale lane leaves some of its files to the main suite; those must really run here.

`scripts/test_scale.sh` skips the files it names in IN_MAIN_SUITE (the main suite runs them
whole, with the same verl). A file there that needs vLLM, or a main venv without verl,
would turn them into silent skips: both are checked here.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]


def in_main_suite() -> list[str]:
    text = (REPO / "scripts" / "test_scale.sh").read_text()
    match = re.search(r"^IN_MAIN_SUITE=\(([^)]*)\)", text, re.MULTILINE)
    assert match, "scripts/test_scale.sh names no IN_MAIN_SUITE"
    return match.group(1).split()


def test_the_files_the_lane_leaves_to_the_main_suite_exist_and_need_no_vllm():
    names = in_main_suite()
    assert names
    for name in names:
        text = (REPO / "tests" / f"test_scale_{name}.py").read_text()
        assert 'importorskip("vllm"' not in text and "mark.vllm" not in text, name


def test_the_main_suite_has_the_verl_those_files_test():
    import verl

    pins = (REPO / "scripts" / "scale" / "install.sh").read_text() + (REPO / "pyproject.toml").read_text()
    assert f"verl=={verl.__version__}" in pins
