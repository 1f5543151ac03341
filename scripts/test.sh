#!/usr/bin/env bash
# Install the project with its test extras into ./.venv, then run the whole test suite
# (CPU; GPU-only tests skip with a reason). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/_install.sh "[dev]"
exec .venv/bin/python -m pytest -n 2 -q -rs "$@"
