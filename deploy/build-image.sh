#!/usr/bin/env bash
# Build the twinsched image (deploy/Dockerfile) offline from a wheelhouse, with podman or
# Docker, and print its tag (TWINSCHED_IMAGE=...) and size on stdout.
#   deploy/build-image.sh
# ENGINE        podman or docker (default: podman where installed, else docker)
# PYTHON_IMAGE  the base image (default python:3.11.14-slim-bookworm, from a registry); here
#               deploy/images/base.sh's TWINSCHED_PYTHON_BASE, made from Debian's packages
# WHEELHOUSE    a folder of wheels made beforehand (deploy/wheelhouse.sh; the air-gapped
#               build); default: made now, on this machine (needs PyPI and a Python 3.11)
# The tag holds a hash of the inputs (src/, pyproject.toml, README.md, deploy/Dockerfile, the
# base): when the engine already holds it, nothing is built. Also tagged twinsched:VERSION,
# the name deploy/compose.yaml runs by default.
set -euo pipefail
root="$(cd "$(dirname "$0")/.." && pwd)"
# shellcheck source=deploy/images/lib.sh
. "$root/deploy/images/lib.sh"
ENGINE="${ENGINE:-$(command -v podman >/dev/null && echo podman || echo docker)}"
[ "$ENGINE" = podman ] && podman_conf
base="${PYTHON_IMAGE:-python:3.11.14-slim-bookworm}"
cd "$root"
version="$(sed -n 's/^version = "\(.*\)"/\1/p' pyproject.toml | head -1)"
mapfile -t inputs < <(echo pyproject.toml; echo README.md; echo deploy/Dockerfile
  find src -type f -not -path '*/__pycache__/*' -not -name '*.pyc' | LC_ALL=C sort)
key="$( { inputs_hash "${inputs[@]}"; echo "$base ${WHEELHOUSE:-}"; } | sha256sum | cut -c1-12)"
image="twinsched:$version-$key"
if ! has_image "$image"; then
  context="$CACHE/context-$key"
  rm -rf "$context"
  mkdir -p "$context"
  if [ -n "${WHEELHOUSE:-}" ]; then
    cp -r "$WHEELHOUSE" "$context/wheels"
  else
    "$root/deploy/wheelhouse.sh" "$context/wheels"
  fi
  # twinsched's wheel apart from its dependencies', so that the Dockerfile's deps stage (the
  # slow install) is taken from the engine's cache while only pyproject.toml stays the same
  mkdir -p "$context/wheelhouse/deps" "$context/wheelhouse/app"
  mv "$context/wheels"/twinsched-*.whl "$context/wheelhouse/app/"
  mv "$context/wheels"/*.whl "$context/wheelhouse/deps/"
  rm -rf "$context/wheels"
  # the deps stage as an image of its own, named by the dependencies' wheels, the base and
  # the Dockerfile: built once, then every build of a changed source tree starts from it
  deps_key="$( { (cd "$context/wheelhouse/deps" && ls); echo "$base"; cat deploy/Dockerfile; } |
    sha256sum | cut -c1-12)"
  deps_image="localhost/twinsched-deps:$deps_key"
  # --network none: the build reaches nothing (the wheels come from the context)
  if ! has_image "$deps_image"; then
    echo "$ENGINE build $deps_image (the dependencies) ..." >&2
    "$ENGINE" build -q --network none --build-arg "PYTHON_IMAGE=$base" --target deps \
      -f deploy/Dockerfile -t "$deps_image" "$context" >"$CACHE/build-image.log" 2>&1 ||
      { tail -30 "$CACHE/build-image.log" >&2; exit 1; }
    "$ENGINE" images --format '{{.Repository}}:{{.Tag}}' | grep -E "(^|/)twinsched-deps:" |
      grep -v ":$deps_key\$" | xargs -r "$ENGINE" rmi >/dev/null 2>&1 || true
  fi
  echo "$ENGINE build $image (base $base) ..." >&2
  "$ENGINE" build -q --network none --build-arg "PYTHON_IMAGE=$base" \
    --build-arg "DEPS_IMAGE=$deps_image" -f deploy/Dockerfile \
    -t "$image" "$context" >"$CACHE/build-image.log" 2>&1 || { tail -30 "$CACHE/build-image.log" >&2; exit 1; }
  rm -rf "$context"
  # the build stage's image (its label) and all but the newest three of these tags
  "$ENGINE" image prune -f --filter label=org.twinsched.stage=build >/dev/null
  "$ENGINE" images --format '{{.Repository}}:{{.Tag}}' | grep -E "(^|/)twinsched:$version-" |
    tail -n +4 | xargs -r "$ENGINE" rmi >/dev/null 2>&1 || true
fi
"$ENGINE" tag "$image" "twinsched:$version"
echo "TWINSCHED_IMAGE=$image"
echo "TWINSCHED_IMAGE_BYTES=$("$ENGINE" image inspect --format '{{.Size}}' "$image")"
