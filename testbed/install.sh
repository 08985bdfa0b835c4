#!/usr/bin/env bash
# Install the system packages the tests and the examples need (Debian, as root).
# Skips apt entirely when everything is already there.
#
# Another apt or dpkg at work (unattended-upgrades, a second session's install) holds
# apt's locks: every apt-get call here waits for them, up to TASKFLOW_APT_LOCK_WAIT
# seconds (600), instead of failing at once. apt-get install and the dpkg it runs wait
# through apt's own -o DPkg::Lock::Timeout; apt-get update takes the package lists' lock,
# which that option does not cover (apt 2.6), so update is tried again every 5 s while
# apt says the lock is held.
set -euo pipefail
WAIT=${TASKFLOW_APT_LOCK_WAIT:-600}

apt_get() { apt-get -o DPkg::Lock::Timeout="$WAIT" "$@"; }

update() {
  local deadline=$((SECONDS + WAIT)) out said=
  until out=$(apt_get update -q 2>&1); do
    if grep -q "Could not get lock" <<<"$out" && [ "$SECONDS" -lt "$deadline" ]; then
      [ -n "$said" ] || echo "install.sh: $(grep -m1 'Could not get lock' <<<"$out" | sed 's/^E: //');" \
        "waiting for it (up to ${WAIT} s)" >&2
      said=1
      sleep 5
      continue
    fi
    printf '%s\n' "$out" >&2
    return 1
  done
  printf '%s\n' "$out"
}

need=()
for pkg in "$@"; do need+=("$pkg"); done
missing=()
for pkg in "${need[@]}"; do
  dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
done
if [ "${#missing[@]}" -gt 0 ]; then
  if [ "$(id -u)" != 0 ]; then
    echo "install.sh: need root to apt-get install ${missing[*]}" >&2
    exit 1
  fi
  update
  apt_get install -y -q --no-install-recommends "${missing[@]}"
fi
