#!/usr/bin/env bash
# Base images from Debian packages, no registry: `debootstrap --variant=minbase bookworm`,
# imported with `podman import`, then three images built on it with Debian's packages:
#   python      python3 (3.11): the base of deploy/Dockerfile (its PYTHON_IMAGE)
#   postgres    postgresql-15, initialised like the official image (POSTGRES_USER/_PASSWORD/_DB)
#   prometheus  Debian's prometheus
# Each is tagged with a hash of this folder's files, so a rerun with the same inputs finds
# them in podman's storage and does nothing. The root file system is made in the cache folder
# ($TWINSCHED_CONTAINERS_CACHE, default ~/.cache/twinsched/containers) and removed once imported.
# Prints the tags as shell assignments (TWINSCHED_PYTHON_BASE=... ); progress goes to stderr.
# Needs podman, debootstrap and root (or sudo) for debootstrap. MIRROR and SECURITY_MIRROR
# override Debian's mirrors (an air-gapped build: a local mirror).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
# shellcheck source=deploy/images/lib.sh
. "$here/lib.sh"
ENGINE=podman
podman_conf
mirror="${MIRROR:-http://deb.debian.org/debian}"
cd "$here"
debian="localhost/twinsched-debian:bookworm-$(inputs_hash base.sh)"
tag_of() {  # tag_of NAME: bookworm-HASH of what NAME's image is made from
  local files=(base.sh "$1.Containerfile")
  [ "$1" = postgres ] && files+=(postgres-entrypoint.sh)
  echo "bookworm-$(inputs_hash "${files[@]}")"
}

missing=0
for name in python postgres prometheus; do
  has_image "localhost/twinsched-$name:$(tag_of "$name")" || missing=1
done
# the Debian base only where one of the three is to be built (an air-gapped machine that
# loaded the three with `podman load` has no need of it, nor of a mirror)
if [ "$missing" = 1 ] && ! has_image "$debian"; then
  rootfs="$CACHE/rootfs-${debian##*:}"
  as_root rm -rf "$rootfs"
  echo "debootstrap --variant=minbase bookworm ($mirror) ..." >&2
  as_root debootstrap --variant=minbase bookworm "$rootfs" "$mirror" >"$CACHE/debootstrap.log" 2>&1 ||
    { tail -20 "$CACHE/debootstrap.log" >&2; exit 1; }
  # bookworm's updates and security fixes too; apt's package lists and caches are refetched
  # by each image's apt-get update
  printf 'deb %s bookworm main\ndeb %s bookworm-updates main\ndeb %s bookworm-security main\n' \
    "$mirror" "$mirror" "${SECURITY_MIRROR:-http://deb.debian.org/debian-security}" |
    as_root tee "$rootfs/etc/apt/sources.list" >/dev/null
  as_root find "$rootfs/var/lib/apt/lists" "$rootfs/var/cache/apt" -type f -delete
  as_root tar -C "$rootfs" --numeric-owner -c . |
    podman import --change 'CMD ["/bin/bash"]' - "$debian" >/dev/null
  as_root rm -rf "$rootfs"
fi

build() {  # build NAME: localhost/twinsched-NAME:TAG from NAME.Containerfile on the Debian base
  local image
  image="localhost/twinsched-$1:$(tag_of "$1")"
  has_image "$image" && return 0
  echo "building $image ..." >&2
  podman build -q --build-arg "BASE=$debian" -f "$here/$1.Containerfile" -t "$image" "$here" \
    >"$CACHE/build-$1.log" 2>&1 || { tail -20 "$CACHE/build-$1.log" >&2; return 1; }
}
# the three at once: their time is mostly apt-get fetching from the mirror
pids=()
for name in python postgres prometheus; do build "$name" & pids+=($!); done
for pid in "${pids[@]}"; do wait "$pid"; done
echo "TWINSCHED_PYTHON_BASE=localhost/twinsched-python:$(tag_of python)"
echo "TWINSCHED_POSTGRES_IMAGE=localhost/twinsched-postgres:$(tag_of postgres)"
echo "TWINSCHED_PROMETHEUS_IMAGE=localhost/twinsched-prometheus:$(tag_of prometheus)"
# older tags of these four (other inputs); those still used by a container or image stay
for repo in debian python postgres prometheus; do
  keep="$debian"
  [ "$repo" = debian ] || keep="localhost/twinsched-$repo:$(tag_of "$repo")"
  podman images --format '{{.Repository}}:{{.Tag}}' "localhost/twinsched-$repo" |
    { grep -vx "$keep" || true; } | xargs -r podman rmi >/dev/null 2>&1 || true
done
