"""scripts/gpu_check.sh's entry point: validate a GPU machine for the scale path. The checks
live in scripts/gpu_checks/ (one module per idea; arguments.py's docstring is the user's
guide, `--help`).

The package is loaded by path under a private name, so this file runs from any directory
with nothing installed (standard library only; the checks run in the stack's Python).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/, for the loader beside this file
from script_packages import load_package  # noqa: E402

load_package("_tandem_gpu_check", Path(__file__).resolve().parent / "gpu_checks")

from _tandem_gpu_check.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
