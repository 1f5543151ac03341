#!/usr/bin/env bash
# Install the project with its test extras into ./.venv, then run the whole test suite
# (CPU; GPU-only tests skip with a reason). Without ../shared/data the tests that read it
# skip and are named once at the end with the command that fetches it; with $CI set (a CI
# run, which has the data) a skip in a lane file the suite owns fails it (tests/conftest.py).
# Extra arguments go to pytest; `--install-only` builds the venv and runs nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/_install.sh "[dev,hf-trl]"  # not the scale venv: verl's actor breaks on trl 1.16 (pyproject.toml)
[ "${1:-}" = "--install-only" ] && exit 0
exec .venv/bin/python -m pytest -n 2 -q -rs "$@"
