"""Download the real benchmark and tokenizer files the tests read from `../shared/data`.

    python scripts/fetch_shared_data.py             # into ../shared/data beside the checkout (where the tests look)
    python scripts/fetch_shared_data.py --out DIR   # anywhere else

The steps live in scripts/shared_data/ (one module per idea; cli.py's docstring says how each
file is made and checked). The package is loaded by path under a private name, so this file
runs from any directory with nothing installed.
"""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

PACKAGE = "_tandem_shared_data"


def _load_package():
    if PACKAGE not in sys.modules:
        folder = Path(__file__).resolve().parent / "shared_data"
        spec = importlib.util.spec_from_file_location(PACKAGE, folder / "__init__.py",
                                                      submodule_search_locations=[str(folder)])
        module = importlib.util.module_from_spec(spec)
        sys.modules[PACKAGE] = module  # its modules import one another relatively, through this name
        spec.loader.exec_module(module)
    return sys.modules[PACKAGE]


_load_package()

from _tandem_shared_data.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
