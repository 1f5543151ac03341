# The steps both scale venvs share; sourced by install.sh and install_v2.sh, never run alone.
#
# The caller sets VENV (the venv), PYTHON (the interpreter that creates it) and WANT (a hash of
# every file its install reads, this one included), then calls `scale_venv_begin LABEL` (leaves
# an up-to-date venv alone, else creates it and installs CPU torch: step 1 of 4), runs its own
# steps 2-4 with `pip_q`, and ends with `scale_venv_end` fed a Python check on stdin (it asserts
# the versions and prints them); only then is the venv stamped as up to date.
STAMP="$VENV/.tandem-scale-install"

pip_q() { "$VENV/bin/python" -m pip install -q --no-compile "$@"; }  # compiled once at the end (_compile_venv.sh)

scale_venv_begin() {
  if [ -f "$STAMP" ] && [ "$(cat "$STAMP")" = "$WANT" ]; then
    echo "$1 $VENV is up to date"
    exit 0
  fi
  if [ ! -x "$VENV/bin/python" ]; then
    "$PYTHON" -m venv "$VENV"
    "$VENV/bin/python" -m pip install -q --upgrade pip
  fi
  echo "[1/4] torch 2.13.0+cpu"
  pip_q ${TORCH_INDEX_URL:+--extra-index-url "$TORCH_INDEX_URL"} "torch==2.13.0+cpu" || {
    echo "error: torch==2.13.0+cpu not found; set TORCH_INDEX_URL=https://download.pytorch.org/whl/cpu" >&2; exit 2; }
}

scale_venv_end() {
  bash scripts/_compile_venv.sh "$VENV" < /dev/null
  "$VENV/bin/python" -
  echo "$WANT" > "$STAMP"
}
