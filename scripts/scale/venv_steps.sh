# The steps both scale venvs share; sourced by install.sh and install_v2.sh, never run alone.
#
# The caller sets VENV (the venv) and WANT (a hash of every file its install reads, this one
# included), defines a build function (its steps 1-4, each `uv_install DIR ...`), then calls
# `scale_venv NAME BUILD_FN` fed a Python check on stdin (it asserts the versions and prints
# them). The venv comes from the machine's venv cache (scripts/_venv_cache.sh), built there once
# per WANT; only after the check passes is VENV stamped as up to date.
source scripts/_venv_cache.sh
STAMP="$VENV/.tandem-scale-install"

scale_venv() {  # scale_venv NAME BUILD_FN < check.py
  if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
    echo "$1 venv $VENV is up to date"
    exit 0
  fi
  venv_from_cache "$VENV" "$1" "$WANT" "$2"
  "$VENV/bin/python" -
  echo "$WANT" > "$STAMP"
}

cpu_torch() {  # cpu_torch DIR: step 1 of 4, the CPU build of torch that every later step keeps
  echo "[1/4] torch 2.13.0+cpu"
  uv_install "$1" "torch==2.13.0+cpu" || {
    echo "error: torch==2.13.0+cpu not found; set TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" >&2; exit 2; }
}
