#!/usr/bin/env bash
# Byte-compile a venv's site-packages on every core: bash scripts/_compile_venv.sh VENV
# The install scripts run pip with --no-compile, because pip compiles on one core; without the
# .pyc files every process would compile what it imports again (PYTHONDONTWRITEBYTECODE is
# common on CI machines). Files that do not compile (templates, other Python versions) are
# skipped, as pip skips them. Runs only when some .py file is newer than the last compile.
set -euo pipefail
VENV="$1"
site="$("$VENV/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')"
stamp="$VENV/.tandem-compiled"
if [ -f "$stamp" ] && [ -z "$(find "$site" -name '*.py' -newer "$stamp" -print -quit)" ]; then
  exit 0
fi
"$VENV/bin/python" -m compileall -q -j 0 "$site" > /dev/null 2>&1 || true
touch "$stamp"
