"""Download the real benchmark and tokenizer files the tests read from `../shared/data`.

    python scripts/fetch_shared_data.py             # into ../shared/data beside the checkout (where the tests look)
    python scripts/fetch_shared_data.py --out DIR   # anywhere else

The steps live in scripts/shared_data/ (one module per idea; cli.py's docstring says how each
file is made and checked). The package is loaded by path under a private name, so this file
runs from any directory with nothing installed.
"""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))  # scripts/, for the loader beside this file
from script_packages import load_package  # noqa: E402

load_package("_tandem_shared_data", Path(__file__).resolve().parent / "shared_data")

from _tandem_shared_data.cli import main  # noqa: E402

if __name__ == "__main__":
    sys.exit(main())
