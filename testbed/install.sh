#!/usr/bin/env bash
# Install the system packages the tests and the examples need (Debian, as root).
# Skips apt entirely when everything is already there.
set -euo pipefail
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
  apt-get update -q
  apt-get install -y -q --no-install-recommends "${missing[@]}"
fi
