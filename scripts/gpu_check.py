"""scripts/gpu_check.sh's entry point: validate a GPU machine for the scale path. The checks
live in scripts/gpu_checks/ (one module per idea; arguments.py's docstring is the user's
guide, `--help`).

The package is loaded by path under a private name, so this file runs from any directory
with nothing installed (standard library only; the checks run in the stack's Python).
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

PACKAGE = "_tandem_gpu_check"


def _load_package():
    if PACKAGE not in sys.modules:
        folder = Path(__file__).resolve().parent / "gpu_checks"
        spec = importlib.util.spec_from_file_location(PACKAGE, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = module  # its modules import one another relatively, through this name
        spec.loader.exec_module(module)
    return sys.modules[PACKAGE]


_load_package()

from _tandem_gpu_check.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
