"""Running a check's command with its log, and reading back what a probe script printed.

Every command of every check goes through `Runner.run`, so the tests replace it with a fake
that writes logs and exit codes: the decisions made from those are what they check.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from .checkout import REPO


class Runner:
    """Runs the checks' commands; tests replace it (the report logic is what they check)."""

    def run(self, cmd: list[str], env: dict, log: Path, timeout: float) -> int:
        log.parent.mkdir(parents=True, exist_ok=True)
        with open(log, "w") as f:
            try:
                return subprocess.run(cmd, env=env, stdout=f, stderr=subprocess.STDOUT, timeout=timeout,
                                      cwd=REPO).returncode
            except subprocess.TimeoutExpired:
                f.write(f"\ngpu_check: timed out after {timeout:.0f} s\n")
                return 124


def probe(runner: Runner, python: str, script: str, env: dict, log: Path, timeout: float) -> dict | None:
    """Run `script` in `python`; the JSON it prints after GPU_CHECK_PROBE, or None."""
    rc = runner.run([python, "-c", script], env, log, timeout)
    if rc != 0 or not log.is_file():
        return None
    for line in log.read_text().splitlines():
        if line.startswith("GPU_CHECK_PROBE "):
            return json.loads(line.split(" ", 1)[1])
    return None
