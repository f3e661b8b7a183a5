#!/usr/bin/env bash
# The image's Python packages as wheels, made on this machine: `pip wheel` of twinsched with
# the twin and serve extras, its dependencies, and pip itself (the image installs with it,
# then leaves it out). deploy/Dockerfile installs them with `pip install --no-index`, so the
# image build needs no package index (inside a build, PyPI may be unreachable or untrusted).
#   deploy/wheelhouse.sh OUT       OUT/twinsched-*.whl and every wheel it needs
# PYTHON: the Python 3.11 that runs pip (default .venv/bin/python, else python3); it must be
# the image's minor version, since binary wheels (numpy, pandas, ...) are made for it. The
# dependencies' wheels are kept in the cache folder, keyed by pyproject.toml's hash.
set -euo pipefail
out="${1:?usage: deploy/wheelhouse.sh OUT}"
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=deploy/images/lib.sh
. "$root/deploy/images/lib.sh"
py="${PYTHON:-$root/.venv/bin/python}"
[ -x "$py" ] || py=python3
version="$("$py" -c 'import sys; print("%d.%d" % sys.version_info[:2])')"
if [ "$version" != 3.11 ]; then
  echo "$py is Python $version; the image runs 3.11: set PYTHON to a Python 3.11" >&2
  exit 1
fi
deps="$CACHE/wheels-$(cd "$root" && inputs_hash pyproject.toml deploy/wheelhouse.sh)"
if [ ! -d "$deps" ]; then
  echo "pip wheel: the dependencies of twinsched[twin,serve] into $deps ..." >&2
  rm -rf "$deps.tmp"
  "$py" -m pip wheel -q --wheel-dir "$deps.tmp" "$root[twin,serve]" pip >"$CACHE/pip.log" 2>&1 ||
    { tail -20 "$CACHE/pip.log" >&2; exit 1; }
  rm -f "$deps.tmp"/twinsched-*.whl
  mv "$deps.tmp" "$deps"
fi
mkdir -p "$out"
rm -f "$out"/twinsched-*.whl
cp -l "$deps"/*.whl "$out"/ 2>/dev/null || cp "$deps"/*.whl "$out"/
"$py" -m pip wheel -q --no-deps --wheel-dir "$out" "$root" >"$CACHE/pip.log" 2>&1 ||
  { tail -20 "$CACHE/pip.log" >&2; exit 1; }
ls "$out"/twinsched-*.whl >/dev/null
