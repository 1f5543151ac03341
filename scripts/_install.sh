#!/usr/bin/env bash
# Shared by scripts/demo.sh and scripts/test.sh: make ./.venv with the project and the given
# extras, through the machine's venv cache (scripts/_venv_cache.sh: built once per lock with uv,
# then a copy of hard links and this checkout installed editable into it). torch goes in first
# and pinned (TORCH_SPEC, default torch==2.13.0), so that nothing later pulls another build. On
# Linux, PyPI's torch==2.13.0 is the CUDA build (several GB, with its CUDA libraries); for the
# CPU build set TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu. The project's CI machines
# carry the CPU wheel locally (pip's find-links, which uv is given), so the default needs no index
# there. PYTHON picks the interpreter that creates the venv (3.10-3.12). An up-to-date .venv
# (same extras, same files read) is left alone.
set -euo pipefail
extras="${1:-}"
TORCH_SPEC="${TORCH_SPEC:-torch==2.13.0}"
source scripts/_venv_cache.sh
KEY="$({ echo "$extras $TORCH_SPEC"; cat scripts/_install.sh scripts/_venv_cache.sh pyproject.toml; } | sha256sum | cut -c1-16)"
if [ -f .venv/.tandem-install ] && [ "$(cat .venv/.tandem-install)" = "$KEY" ]; then
  exit 0
fi
main_build() {  # main_build DIR: torch first and pinned, then the project's dependencies
  uv_install "$1" "$TORCH_SPEC"
  uv_install "$1" -e ".$extras"
}
name="main$(echo "$extras" | tr -d "[]" | tr "," "-")"; name="${name/main/main-}"; name="${name%-}"
venv_from_cache .venv "$name" "$KEY" main_build
echo "$KEY" > .venv/.tandem-install
