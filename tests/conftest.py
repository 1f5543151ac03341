"""Shared fixtures: the real data beside the checkout, and a tiny model zoo built once per session."""

from __future__ import annotations

import contextlib
import os
from pathlib import Path

import pytest
import torch

# One intra-op thread per test process: the models here are tiny, and pytest-xdist runs
# one worker per core. Two workers each spinning two OpenMP threads on two cores made
# the engine 20x slower in a measurement here (15.9 s vs 0.67 s for one rollout batch).
torch.set_num_threads(1)

REPO = Path(__file__).resolve().parents[1]
# $TANDEM_SHARED_DIR points a checkout that has no ../shared beside it (a git worktree) at one.
SHARED = Path(os.environ.get("TANDEM_SHARED_DIR") or REPO.parent / "shared")
DATA_ABSENT = "needs the real test data"  # how the shared_data fixture's skip reason starts

# Tests compose verl/config/tandem_trainer.yaml as verl/main_tandem_ppo.py does, which first
# registers the config node that file's defaults list names (tandem_verl.wiring.register_entry_node).
with contextlib.suppress(ImportError):  # an environment without Hydra has no verl tests
    from tandem_verl.wiring import register_entry_node

    register_entry_node()


def in_main_suite() -> list[str]:
    """The lane files `scripts/test_scale.sh` leaves to the main suite (IN_MAIN_SUITE), as test file names."""
    import re

    match = re.search(r"^IN_MAIN_SUITE=\(([^)]*)\)", (REPO / "scripts" / "test_scale.sh").read_text(), re.MULTILINE)
    return [f"test_scale_{name}.py" for name in match.group(1).split()] if match else []


def skip_reason(report) -> str:
    """What a skipped test's report says, without pytest's 'Skipped: ' prefix."""
    reason = report.longrepr[-1] if isinstance(report.longrepr, (tuple, list)) else report.longrepr
    return str(reason).removeprefix("Skipped: ")


def lane_skip_failure(skips: list[tuple[str, str]], owned: set[str], ci: bool) -> str | None:
    """The line that fails the main suite for skips (node id, reason) in the lane files it owns, or None.

    Those files run nowhere else, so a skip there hides them. One cause is allowed: a user's
    checkout without the real data (before `fetch_shared_data.py`) skips the tests that read it.
    A CI run ($CI set) allows none; the line gives each skip's own reason.
    """
    lost = [(node, reason) for node, reason in skips if Path(node.split("::")[0]).name in owned]
    if not ci:
        lost = [(node, reason) for node, reason in lost if not reason.startswith(DATA_ABSENT)]
    if not lost:
        return None
    files = sorted({node.split("::")[0] for node, _ in lost})
    reasons = sorted({reason for _, reason in lost})
    return (f"main suite: {len(lost)} test(s) skipped in {', '.join(files)}, which the scale lane leaves to this "
            f"suite (no other run has them); fix the cause: {' | '.join(reasons)}")


def _ci() -> bool:
    """A CI run ($CI set, as CI services do): the real data must be there."""
    return os.environ.get("CI", "").lower() not in ("", "0", "false")


def pytest_sessionfinish(session, exitstatus):
    """A skipped test is a failure in the scale lane ($TANDEM_REQUIRE_SCALE=1), and in the main suite
    for the lane files the lane leaves to it (IN_MAIN_SUITE, `lane_skip_failure`)."""
    reporter = session.config.pluginmanager.get_plugin("terminalreporter")
    skipped = reporter.stats.get("skipped", []) if reporter else []
    if os.environ.get("TANDEM_REQUIRE_SCALE") != "1":
        failure = lane_skip_failure([(r.nodeid, skip_reason(r)) for r in skipped], set(in_main_suite()), _ci())
        if failure:
            print(f"\n{failure}")
            session.exitstatus = 1
        return
    if skipped:
        reasons = sorted({skip_reason(r) for r in skipped})
        print(f"\nscale lane: {len(skipped)} test(s) skipped, which the lane does not allow: {reasons}")
        session.exitstatus = 1


_TEST_SECONDS: dict[str, float] = {}


def pytest_runtest_logreport(report):
    """Each test's wall time (setup + call + teardown), kept for `$TANDEM_TEST_TIMES` (below)."""
    _TEST_SECONDS[report.nodeid] = _TEST_SECONDS.get(report.nodeid, 0.0) + report.duration


def write_test_times(directory: str, lane: str, seconds: dict[str, float]) -> Path:
    """One JSON file per pytest process under DIRECTORY: its lane and each test's seconds.

    `.ci/run` sets $TANDEM_TEST_TIMES so that `scripts/ci_report.py` can list the slowest tests
    of every lane together (the scale lane runs one pytest process per file).
    """
    import json

    out = Path(directory)
    out.mkdir(parents=True, exist_ok=True)
    path = out / f"{lane or 'tests'}-{os.getpid()}.json"
    path.write_text(json.dumps({"lane": lane, "tests": seconds}, sort_keys=True))
    return path


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    """Write this process's test times where $TANDEM_TEST_TIMES says (xdist's controller sees every test)."""
    directory = os.environ.get("TANDEM_TEST_TIMES")
    if directory and not hasattr(config, "workerinput") and _TEST_SECONDS:
        write_test_times(directory, os.environ.get("TANDEM_CI_LANE", ""), _TEST_SECONDS)


def data_absent_note(skips: list[tuple[str, str]], data: Path) -> str | None:
    """One line for the tests skipped because the real data is absent: how many, in which files, the fix."""
    nodes = [node for node, reason in skips if reason.startswith(DATA_ABSENT)]
    if not nodes:
        return None
    files = sorted({node.split("::")[0] for node in nodes})
    return (f"{len(nodes)} test(s) in {len(files)} file(s) skipped: the real test data is absent at {data} "
            f"({', '.join(files)}); fetch it with `python scripts/fetch_shared_data.py` (pinned, checksummed) "
            "or clone the project with ../shared beside it")


def pytest_terminal_summary(terminalreporter):
    """The data-absent skips, named once with the fetch command (each test's own line is short)."""
    skips = [(r.nodeid, skip_reason(r)) for r in terminalreporter.stats.get("skipped", [])]
    note = data_absent_note(skips, SHARED / "data")
    if note:
        terminalreporter.write_sep("=", "real test data")
        terminalreporter.write_line(note)


@pytest.fixture(scope="session")
def shared_data() -> Path:
    """`../shared/data` next to the checkout (real benchmark files and tokenizers; never committed)."""
    path = SHARED / "data"
    if not path.is_dir():
        pytest.skip(f"{DATA_ABSENT} (the fetch command is at the end of the run)")
    return path


@pytest.fixture(scope="session")
def tiny_dir(tmp_path_factory) -> Path:
    """A tiny Qwen3-config model + tokenizer built locally (seed 0), shared by the whole session."""
    from tandem_app.zoo import build_tiny

    out = tmp_path_factory.mktemp("tiny") / "tiny-s0"
    build_tiny(out, seed=0)
    return out


@pytest.fixture(scope="session")
def tiny_dir_seed1(tmp_path_factory) -> Path:
    """A second tiny model with the same tokenizer but other weights (a different 'junior')."""
    from tandem_app.zoo import build_tiny

    out = tmp_path_factory.mktemp("tiny") / "tiny-s1"
    build_tiny(out, seed=1)
    return out


@pytest.fixture(scope="session")
def tiny_dir_small(tmp_path_factory) -> Path:
    """A weaker junior of another shape (tandem_app.zoo.SMALL_SHAPE), with the zoo's one tokenizer."""
    from tandem_app.zoo import SMALL_SHAPE, build_tiny

    out = tmp_path_factory.mktemp("tiny") / "tiny-small-s2"
    build_tiny(out, seed=2, cfg=SMALL_SHAPE)
    return out


@pytest.fixture(scope="session")
def quick_demo(tmp_path_factory) -> Path:
    """`tandem-rlvr demo --quick` (seed 0), run once per test run: pytest-xdist's workers share the
    directory above their own basetemp, and the first to get the lock builds it. Read-only for tests:
    one that writes into a demo copies it first."""
    from filelock import FileLock

    from tandem_app.commands.cli import main

    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent  # this run's directory, shared by its workers (theirs are popen-gwN below it)
    out, done = root / "quick-demo" / "quick", root / "quick-demo.done"
    with FileLock(str(root / "quick-demo.lock")):
        if not done.is_file():
            assert main(["demo", "--quick", "--out", str(out), "--no-progress"]) == 0
            done.touch()
    return out


# Float64 engine fixtures (tests/test_engine*.py): the zoo's tokenizer, a senior (seed 0),
# a junior with other weights (seed 1), and four prompts of different lengths.
@pytest.fixture(scope="module")
def tok(tiny_dir):
    from tandem.models.loading import load_tokenizer

    return load_tokenizer(tiny_dir)


@pytest.fixture(scope="module")
def senior(tiny_dir):
    from tandem.models.loading import load_model

    return load_model(tiny_dir, dtype="float64")


@pytest.fixture(scope="module")
def junior(tiny_dir_seed1):
    from tandem.models.loading import load_model

    return load_model(tiny_dir_seed1, dtype="float64")


@pytest.fixture(scope="module")
def prompts(tok):
    texts = ["Mia has 3 apples.", "Leo has 12 coins. He finds 4 more coins.", "Ava", "Sam has 40 cards. He sells 7."]
    return [tok(t)["input_ids"] for t in texts]


# The scale lane (scripts/test_scale.sh): SFT'd tiny models that write real steps and
# answers (tandem_app.train.tiny_base), built once per lane run. $TANDEM_SCALE_CACHE keeps
# them across pytest processes; without it they live in this session's tmp directory.
def _scale_base(tmp_path_factory, name: str, seed: int, steps: int, shape: str = "default") -> Path:
    from filelock import FileLock

    from tandem_app.train.tiny_base import TinyBaseConfig, build_tiny_base

    root = Path(os.environ.get("TANDEM_SCALE_CACHE") or tmp_path_factory.getbasetemp() / "scale-cache")
    root.mkdir(parents=True, exist_ok=True)
    with FileLock(str(root / f"{name}.lock")):
        return build_tiny_base(root / name, TinyBaseConfig(seed=seed, steps=steps, shape=shape))


@pytest.fixture(scope="session")
def scale_senior(tmp_path_factory) -> Path:
    """The scale lane's senior: the tiny base SFT'd from seed 0 (right about half the time)."""
    return _scale_base(tmp_path_factory, "senior-s0", seed=0, steps=150)


@pytest.fixture(scope="session")
def scale_junior(tmp_path_factory) -> Path:
    """A junior with other weights: SFT'd from seed 1 for fewer steps (writes steps, other tokens)."""
    return _scale_base(tmp_path_factory, "junior-s1", seed=1, steps=80)


@pytest.fixture(scope="session")
def scale_small_junior(tmp_path_factory) -> Path:
    """A weaker junior of another size (tandem_app.zoo.SMALL_SHAPE), SFT'd on the same task and tokenizer."""
    from tandem_app.train.tiny_base import SMALL_JUNIOR

    return _scale_base(tmp_path_factory, "junior-small-s2", seed=SMALL_JUNIOR.seed, steps=SMALL_JUNIOR.steps,
                       shape=SMALL_JUNIOR.shape)
