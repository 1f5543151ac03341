"""Where `.ci/run`'s time went: each phase's wall time, each lane's test count, the slowest tests.

`.ci/run` appends one line per phase to DIR/phases.tsv (name, lane, seconds, exit status) and
each pytest process writes its tests' seconds to DIR/tests/*.json ($TANDEM_TEST_TIMES, see
tests/conftest.py). This script prints the table at the end of the run and writes it all to
DIR/ci_times.json, with every test over `SLOW_SECONDS` that tests/slow_tests.toml does not name
(make it cheaper, or list it there with why). Standard library only: it runs on the machine's
python3 (3.11+, for tomllib) before any venv.

    python3 scripts/ci_report.py runs/ci            # print the table, write runs/ci/ci_times.json
    python3 scripts/ci_report.py runs/ci --top 40   # more of the slowest tests
"""

from __future__ import annotations

import argparse
import json
import platform
import subprocess
import sys
import tomllib
from pathlib import Path

SLOW_SECONDS = 20.0  # a test over this pays for what it tests, or is listed in SLOW_LIST with why
SLOW_LIST = Path(__file__).resolve().parents[1] / "tests" / "slow_tests.toml"


def read_phases(path: Path) -> list[dict]:
    """The phases in the order they ran: name, lane, seconds, exit status."""
    if not path.is_file():
        return []
    phases = []
    for line in path.read_text().splitlines():
        name, lane, seconds, rc = line.split("\t")
        phases.append({"phase": name, "lane": lane, "seconds": int(seconds), "exit_status": int(rc)})
    return phases


def read_tests(directory: Path) -> dict[str, dict[str, float]]:
    """Each lane's tests and their seconds, merged over that lane's pytest processes."""
    lanes: dict[str, dict[str, float]] = {}
    for path in sorted(directory.glob("*.json")):
        record = json.loads(path.read_text())
        lanes.setdefault(record["lane"], {}).update(record["tests"])
    return lanes


def read_slow_list(path: Path = SLOW_LIST) -> list[dict]:
    """The listed slow tests: each entry's `test` (a node-id prefix), `lane` (one, or a list) and `why`."""
    entries = tomllib.loads(path.read_text()).get("slow", [])
    for entry in entries:
        missing = {"test", "lane", "why"} - set(entry)
        if missing:
            raise SystemExit(f"error: {path}: the entry {entry.get('test', entry)} lacks {sorted(missing)}")
    return entries


def unlisted_slow(lanes: dict[str, dict[str, float]], listed: list[dict]) -> list[dict]:
    """The tests over SLOW_SECONDS that no entry of the slow list names (by lane and node-id prefix)."""
    return [{"seconds": round(s, 2), "lane": lane, "test": node}
            for lane, tests in sorted(lanes.items()) for node, s in sorted(tests.items())
            if s > SLOW_SECONDS and not any(lane in _lanes(e) and node.startswith(e["test"]) for e in listed)]


def _lanes(entry: dict) -> list[str]:
    return [entry["lane"]] if isinstance(entry["lane"], str) else list(entry["lane"])


def commit() -> str:
    try:
        return subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True,
                              check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def report(directory: Path, top: int, listed: list[dict] | None = None) -> dict:
    listed = read_slow_list() if listed is None else listed
    phases = read_phases(directory / "phases.tsv")
    lanes = read_tests(directory / "tests")
    slowest = sorted(((seconds, lane, node) for lane, tests in lanes.items() for node, seconds in tests.items()),
                     reverse=True)[:top]
    return {
        "commit": commit(),
        "machine": f"{platform.machine()}, {_cores()} cores, python {platform.python_version()}",
        "total_seconds": sum(p["seconds"] for p in phases),
        "phases": phases,
        "tests_per_lane": {lane: len(tests) for lane, tests in sorted(lanes.items())},
        "test_seconds_per_lane": {lane: round(sum(tests.values()), 1) for lane, tests in sorted(lanes.items())},
        "slowest_tests": [{"seconds": round(s, 2), "lane": lane, "test": node} for s, lane, node in slowest],
        "slow_unlisted": unlisted_slow(lanes, listed),
    }


def _cores() -> int:
    import os

    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 0)


def render(record: dict) -> str:
    lines = [f"== .ci/run phases (commit {record['commit']}, {record['machine']})"]
    for p in record["phases"]:
        status = "" if p["exit_status"] == 0 else f"  (exit {p['exit_status']})"
        lines.append(f"  {p['phase']:<22} {p['seconds']:>6} s{status}")
    lines.append(f"  {'total':<22} {record['total_seconds']:>6} s ({record['total_seconds'] / 60:.1f} min)")
    for lane, count in record["tests_per_lane"].items():
        lines.append(f"  lane {lane:<17} {count:>6} tests, {record['test_seconds_per_lane'][lane]:.0f} s of tests")
    lines.append(f"== the {len(record['slowest_tests'])} slowest tests")
    for t in record["slowest_tests"]:
        lines.append(f"  {t['seconds']:>8.1f} s  [{t['lane']}] {t['test']}")
    unlisted = record["slow_unlisted"]
    lines.append(f"== {len(unlisted)} test(s) over {SLOW_SECONDS:.0f} s not in tests/slow_tests.toml"
                 + (": make each cheaper, or list it there with why" if unlisted else ""))
    for t in unlisted:
        lines.append(f"  {t['seconds']:>8.1f} s  [{t['lane']}] {t['test']}")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("directory", type=Path, help="where .ci/run kept phases.tsv and tests/")
    parser.add_argument("--top", type=int, default=25, help="how many of the slowest tests to list (default 25)")
    args = parser.parse_args(argv)
    record = report(args.directory, args.top)
    (args.directory / "ci_times.json").write_text(json.dumps(record, indent=1) + "\n")
    print(render(record))
    return 0


if __name__ == "__main__":
    sys.exit(main())
