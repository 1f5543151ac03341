"""A subcommand's `--help` imports no torch: it answers in a fraction of a second (torch alone takes about 2 s).

Timed in `model_spec/PERFORMANCE.md`; here the cause is checked, not a clock. `distill --help` still
imports torch through its defaults (the demo's task and evaluation settings live beside the demo's torch code).
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tandem_app.commands.cli import COMMANDS

STILL_IMPORTS_TORCH = {"distill"}
PROBE = ("import sys\nfrom tandem_app.commands.cli import main\n"
         "try:\n    main([{command!r}, '--help'])\nexcept SystemExit:\n    pass\n"
         "print('TORCH', 'torch' in sys.modules)")


@pytest.mark.parametrize("command", sorted(set(COMMANDS) - STILL_IMPORTS_TORCH))
def test_help_imports_no_torch(command):
    res = subprocess.run([sys.executable, "-c", PROBE.format(command=command)], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert "usage: tandem-rlvr " + command in res.stdout  # the real help, not an index line
    assert res.stdout.strip().splitlines()[-1] == "TORCH False", command


def test_the_known_exception_still_needs_torch():
    """When distill's help stops importing torch, this fails: drop it from STILL_IMPORTS_TORCH."""
    res = subprocess.run([sys.executable, "-c", PROBE.format(command="distill")], capture_output=True, text=True,
                         timeout=120)
    assert res.stdout.strip().splitlines()[-1] == "TORCH True"
