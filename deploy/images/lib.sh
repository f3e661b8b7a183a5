# Sourced by deploy/images/base.sh and deploy/build-image.sh: the cache folder, the input hash
# that names an image, root for debootstrap, and podman's containers.conf where it is needed.
# shellcheck shell=bash
CACHE="${TWINSCHED_CONTAINERS_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/twinsched/containers}"
mkdir -p "$CACHE"

# inputs_hash FILE...: 12 hex digits over the files' names and contents (the image's tag)
inputs_hash() {
  local f
  for f in "$@"; do printf '%s\n' "$f"; sha256sum <"$f"; done | sha256sum | cut -c1-12
}

# as_root CMD...: debootstrap needs root (or sudo without a password)
as_root() {
  if [ "$(id -u)" = 0 ]; then "$@"; elif sudo -n true 2>/dev/null; then sudo "$@"; else
    echo "$1 needs root: run as root or with passwordless sudo" >&2
    return 1
  fi
}

# podman sets RLIMIT_NOFILE to 1048576 in every container unless told otherwise; where the
# hard limit is lower and the process lacks CAP_SYS_RESOURCE (a sandboxed VM, a CI runner)
# runc refuses to start ("error setting rlimit type 7"). There, and only there, point podman
# at a containers.conf that keeps the host's limits, and at the cgroupfs manager where no
# systemd runs (PID 1 is not systemd). CONTAINERS_CONF replaces the system's file.
podman_conf() {
  local hard pids conf="$CACHE/containers.conf"
  hard="$(ulimit -Hn)"
  [ "$hard" = unlimited ] && return 0
  [ "$hard" -ge 1048576 ] && [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ] && return 0
  pids="$(cat /proc/sys/kernel/pid_max)"
  {
    echo '# written by deploy/images/lib.sh (podman_conf): this host'"'"'s limits, no systemd'
    echo '[containers]'
    echo "default_ulimits = [\"nofile=$hard:$hard\", \"nproc=$pids:$pids\"]"
    echo '[engine]'
    [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ] || echo 'cgroup_manager = "cgroupfs"'
    [ "$(cat /proc/1/comm 2>/dev/null)" = systemd ] || echo 'events_logger = "file"'
  } >"$conf"
  export CONTAINERS_CONF="$conf"
}

# has_image NAME: the engine holds that image (a tag keyed by its inputs' hash: a cache hit)
has_image() { "$ENGINE" image inspect "$1" >/dev/null 2>&1; }
