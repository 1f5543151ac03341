"""A subcommand's `--help` imports no torch: it answers in a fraction of a second (torch alone takes about 2 s).

Timed in `model_spec/PERFORMANCE.md`; here the cause is checked, not a clock.
"""

from __future__ import annotations

import subprocess
import sys

import pytest

from tandem_app.commands.cli import COMMANDS

PROBE = ("import sys\nfrom tandem_app.commands.cli import main\n"
         "try:\n    main([{command!r}, '--help'])\nexcept SystemExit:\n    pass\n"
         "print('TORCH', 'torch' in sys.modules)")


@pytest.mark.parametrize("command", sorted(COMMANDS))
def test_help_imports_no_torch(command):
    res = subprocess.run([sys.executable, "-c", PROBE.format(command=command)], capture_output=True, text=True,
                         timeout=120)
    assert res.returncode == 0, res.stderr
    assert "usage: tandem-rlvr " + command in res.stdout  # the real help, not an index line
    assert res.stdout.strip().splitlines()[-1] == "TORCH False", command

