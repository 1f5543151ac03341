"""scripts/gpu_wheelhouse.sh's entry point: the offline GPU wheelhouse, whose steps live in
scripts/wheelhouse/ (one module per idea; cli.py's docstring is the user's guide, `--help`).

The package is loaded by path under a private name, so this file runs from any directory with
nothing installed, and scripts/gpu_checks/checkout.py, which loads this file by path, reads the names
below (the manifest, the join, the stack's requirement lines).
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/, for the loader beside this file
from script_packages import load_package  # noqa: E402

load_package("_tandem_wheelhouse", Path(__file__).resolve().parent / "wheelhouse")

from _tandem_wheelhouse.basics import MANIFEST, MIB, Dist, WheelhouseError  # noqa: E402
from _tandem_wheelhouse.build import build, resolve_only  # noqa: E402
from _tandem_wheelhouse.cli import main  # noqa: E402
from _tandem_wheelhouse.parts import check_complete, join, load_manifest  # noqa: E402
from _tandem_wheelhouse.target import (ENGINE_DEV_TOOLS, ENGINE_EXTRAS, EXTRAS, PLATFORMS, Target,  # noqa: E402
                                       load_stack, plan_target, stack_requirements)

__all__ = ["MANIFEST", "MIB", "Dist", "WheelhouseError", "build", "resolve_only", "main", "check_complete", "join",
           "load_manifest", "ENGINE_DEV_TOOLS", "ENGINE_EXTRAS", "EXTRAS", "PLATFORMS", "Target", "load_stack",
           "plan_target", "stack_requirements"]

if __name__ == "__main__":
    sys.exit(main())
