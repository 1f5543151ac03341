"""Load a script's package by path, so its entry script runs from any directory with nothing installed.

The GPU wheelhouse, the GPU check and the shared-data fetch each keep their code in a folder
beside their entry script (`wheelhouse/`, `gpu_checks/`, `shared_data/`). The entry loads that
folder as a package under a private name (standard library only), and the package's modules
import one another relatively through that name.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path


def load_package(name: str, folder: Path):
    """The package in `folder`, loaded once under `name` (registered in `sys.modules`)."""
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module  # before it runs: its modules import one another through this name
        spec.loader.exec_module(module)
    return sys.modules[name]
