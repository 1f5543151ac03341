# Venvs built once per machine and lock, installed with uv; sourced by scripts/_install.sh and
# scripts/scale/install*.sh, never run alone.
#
#   venv_from_cache VENV NAME KEY BUILD_FN
#
# makes VENV (a checkout's .venv, .venv-scale, .venv-scale-v2) a copy of the venv cached under
# $TANDEM_VENV_CACHE (default ~/.cache/tandem-rlvr/venvs) as NAME-HASH, where HASH covers KEY (a
# hash of every file the install reads), the interpreter, uv's version and the indexes. A missing
# one is built first, by BUILD_FN DIR with `uv_install DIR ARGS...`, into a temporary folder that is
# renamed into place only once complete, so an interrupted build is never reused. The cached venv
# holds the dependencies only: this package is installed into the copy (editable, pointing at this
# checkout), so two checkouts never share a project install. The copy is made of hard links where
# the cache is on the same file system (seconds for vLLM's venv); every file a later install
# writes is a new file, so the cache itself is never changed through a copy.
#
# Environment: PYTHON (the interpreter, default python3), TORCH_INDEX_URL (an extra index for
# torch's CPU build), TANDEM_VENV_CACHE, TANDEM_VENV_CACHE=off (build in place, cache nothing).

PYTHON="${PYTHON:-python3}"
VENV_CACHE="${TANDEM_VENV_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/tandem-rlvr/venvs}"

uv_bin() {  # the pinned uv (scripts/wheelhouse/uv.py: UV_VERSION, fetched once from PyPI into ~/.cache)
  [ -n "${TANDEM_UV:-}" ] || TANDEM_UV="$(PYTHONPATH=scripts "$PYTHON" -c \
    'from wheelhouse.uv import uv_binary; print(uv_binary())')" || {
    echo "error: uv could not be had (see the line above); it comes from PyPI once, into ~/.cache/tandem-rlvr" >&2
    exit 2; }
  echo "$TANDEM_UV"
}

pip_index_args() {  # pip's own find-links, indexes and constraints (pip config list), as uv arguments: uv reads no pip.conf
  "$PYTHON" - <<'PY'
import shlex, subprocess, sys
out = subprocess.run([sys.executable, "-m", "pip", "config", "list"], capture_output=True, text=True).stdout
args = []
for line in out.splitlines():
    key, _, value = line.partition("=")
    value = value.strip().strip("'\"")
    name = key.rsplit(".", 1)[-1]
    flag = {"find-links": "--find-links", "extra-index-url": "--extra-index-url", "index-url": "--index-url",
            "constraint": "--constraint"}.get(name)
    for item in value.split() if flag else []:
        if [flag, item] != args[-2:] and item not in args:
            args += [flag, item]
print(shlex.join(args))
PY
}

uv_install() {  # uv_install VENV ARGS...: `uv pip install` into VENV, every index pip would use, pip's choice among them
  local venv="$1"; shift
  # shellcheck disable=SC2086  # one argument per word of pip_index_args
  "$(uv_bin)" pip install --quiet --python "$venv/bin/python" --index-strategy unsafe-best-match \
    $UV_INDEX_ARGS ${TORCH_INDEX_URL:+--extra-index-url "$TORCH_INDEX_URL"} "$@"
}

venv_cache_hash() {  # venv_cache_hash KEY: KEY with the interpreter, uv and the indexes it was built with
  { echo "$1"; "$PYTHON" -c 'import sys, platform; print(sys.version, platform.machine())'
    "$(uv_bin)" --version; echo "$UV_INDEX_ARGS ${TORCH_INDEX_URL:-}"; } | sha256sum | cut -c1-16
}

venv_build() {  # venv_build DIR BUILD_FN: a new venv with pip (tests and the wheelhouse run `python -m pip`)
  "$(uv_bin)" venv --quiet --seed --relocatable --python "$PYTHON" "$1"
  "$2" "$1"
  bash scripts/_compile_venv.sh "$1" < /dev/null
}

venv_from_cache() {  # venv_from_cache VENV NAME KEY BUILD_FN (see the top of this file)
  local venv="$1" name="$2" key="$3" build="$4" dir tmp
  UV_INDEX_ARGS="$(pip_index_args)"
  if [ "${TANDEM_VENV_CACHE:-}" = off ]; then
    rm -rf "$venv"; venv_build "$venv" "$build"; uv_install "$venv" --no-deps -e .; return
  fi
  dir="$VENV_CACHE/$name-$(venv_cache_hash "$key")"
  if [ ! -f "$dir/.tandem-complete" ]; then
    echo "building the $name venv once for this machine: $dir"
    mkdir -p "$VENV_CACHE"; tmp="$(mktemp -d "$dir.tmp-XXXX")"; rmdir "$tmp"
    venv_build "$tmp" "$build"
    "$(uv_bin)" pip uninstall --quiet --python "$tmp/bin/python" tandem-rlvr 2>/dev/null || true
    touch "$tmp/.tandem-complete"
    mv -T "$tmp" "$dir" 2>/dev/null || rm -rf "$tmp"   # another build finished first: keep that one
  else
    echo "reusing the $name venv built for this lock: $dir"
  fi
  rm -rf "$venv"
  cp -al "$dir" "$venv" 2>/dev/null || { rm -rf "$venv"; cp -a "$dir" "$venv"; }
  rm -f "$venv/.tandem-complete"
  uv_install "$venv" --no-deps -e .   # this checkout, editable; the cached venv has no project
}
