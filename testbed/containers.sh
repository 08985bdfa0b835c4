#!/bin/bash
# containers.sh - a rootful podman set up for taskflow's container tests, and its two images.
# Run as root on Debian with podman runc catatonit debootstrap busybox-static installed
# (testbed/install.sh). No registry: both images are built from what the machine has.
#
#   bash testbed/containers.sh up      # config + images (each made once, kept, rebuilt when missing)
#   bash testbed/containers.sh env     # print the environment the tests use (KEY=VALUE lines)
#   bash testbed/containers.sh down    # remove podman's empty libpod_parent cgroups
#   bash testbed/containers.sh clean   # remove the images, storage and config
#
# Images:
#   localhost/taskflow-bb:1       busybox-static in a scratch image (2 MB; sh cat echo wc sleep ...)
#   localhost/taskflow-bb-user:1  the same, whose default user is 4321 (tests that --user wins)
#   localhost/taskflow-py:1       Debian minbase + python3 from the apt mirror apt is configured
#                                 with (debootstrap --include=python3); no taskflow, no cloudpickle
#
# Why a config (see shared CONTAINERS.md): podman's default runtime crun fails on hybrid
# cgroups, and its default ulimits exceed the hard limits of a root without CAP_SYS_RESOURCE;
# everything podman keeps goes under $TF_CTR instead of /var/lib/containers and /run.
# State lives under $TF_CTR (default /var/tmp/taskflow-containers); `up` writes $TF_CTR/env.
set -euo pipefail
TF_CTR=${TF_CTR:-/var/tmp/taskflow-containers}
BB=localhost/taskflow-bb:1; BBU=localhost/taskflow-bb-user:1; PY=localhost/taskflow-py:1
SUITE=${TF_CTR_SUITE:-bookworm}

log() { echo "[containers] $*" >&2; }

conf() {
  mkdir -p "$TF_CTR/run" "$TF_CTR/storage"
  chmod 700 "$TF_CTR"
  local init=/usr/bin/catatonit
  [ -x "$init" ] || init=/usr/libexec/podman/catatonit
  cat >"$TF_CTR/containers.conf" <<EOF
[containers]
default_ulimits = ["nofile=$(ulimit -Hn):$(ulimit -Hn)", "nproc=4096:4096"]
netns = "none"
init_path = "$init"
[engine]
runtime = "runc"
cgroup_manager = "cgroupfs"
events_logger = "file"
events_logfile_path = "$TF_CTR/run/events.log"
tmp_dir = "$TF_CTR/run/libpod-tmp"
EOF
  cat >"$TF_CTR/storage.conf" <<EOF
[storage]
driver = "overlay"
graphroot = "$TF_CTR/storage"
runroot = "$TF_CTR/run/storage"
EOF
  cat >"$TF_CTR/env" <<EOF
CONTAINERS_CONF=$TF_CTR/containers.conf
CONTAINERS_STORAGE_CONF=$TF_CTR/storage.conf
TF_CTR=$TF_CTR
TF_CTR_BB=$BB
TF_CTR_BB_USER=$BBU
TF_CTR_PY=$PY
EOF
}

pm() { CONTAINERS_CONF=$TF_CTR/containers.conf CONTAINERS_STORAGE_CONF=$TF_CTR/storage.conf podman "$@"; }

mirror() {  # the Debian mirror apt already uses (deb822 or one-line sources)
  [ -n "${TF_CTR_MIRROR:-}" ] && { echo "$TF_CTR_MIRROR"; return; }
  local m
  m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources 2>/dev/null \
      | grep -v '^\s*#' | grep -oE '(https?|file)://[^ ]+/debian/?( |$)' | grep -v security | head -n1 | tr -d ' ')
  echo "${m:-http://deb.debian.org/debian}"
}

busybox_image() {
  pm image exists "$BB" && pm image exists "$BBU" && return 0
  local d; d=$(mktemp -d); mkdir -p "$d/bin" "$d/tmp"; chmod 1777 "$d/tmp"
  cp /bin/busybox "$d/bin/"
  for a in sh cat echo wc sleep true false ls id stat cp mkdir rm env printf grep test; do
    ln -s busybox "$d/bin/$a"; done
  tar -C "$d" -c . | pm import -q --change 'ENV PATH=/bin' - "$BB" >/dev/null
  tar -C "$d" -c . | pm import -q --change 'ENV PATH=/bin' --change 'USER 4321' - "$BBU" >/dev/null
  rm -rf "$d"
  log "built $BB and $BBU"
}

python_image() {
  pm image exists "$PY" && return 0
  local root="$TF_CTR/rootfs" t0=$SECONDS
  rm -rf "$root"
  debootstrap --variant=minbase --include=python3 "$SUITE" "$root" "$(mirror)" >"$TF_CTR/debootstrap.log" 2>&1 \
    || { log "debootstrap failed; see $TF_CTR/debootstrap.log"; tail -5 "$TF_CTR/debootstrap.log" >&2; exit 1; }
  rm -rf "$root"/var/cache/apt/archives/*.deb "$root"/var/lib/apt/lists/* "$root"/usr/share/doc \
         "$root"/usr/share/man "$root"/usr/share/locale
  tar -C "$root" -c . | pm import -q --change 'ENV PATH=/usr/local/bin:/usr/bin:/bin' - "$PY" >/dev/null
  rm -rf "$root"
  log "built $PY in $((SECONDS - t0)) s"
}

case "${1:-up}" in
  up)
    command -v podman >/dev/null || { log "podman is missing: bash testbed/install.sh podman runc catatonit debootstrap busybox-static"; exit 1; }
    conf; busybox_image; python_image ;;
  env) conf; cat "$TF_CTR/env" ;;
  down)
    for d in /sys/fs/cgroup/*/libpod_parent /sys/fs/cgroup/libpod_parent; do
      [ -d "$d" ] && find "$d" -depth -type d -exec rmdir {} + 2>/dev/null || true
    done ;;
  clean)
    [ -d "$TF_CTR" ] && { pm rm -af >/dev/null 2>&1 || true; pm rmi -af >/dev/null 2>&1 || true
                          rm -rf "$TF_CTR"; } ;;
  *) echo "usage: $0 up|env|down|clean" >&2; exit 2 ;;
esac
