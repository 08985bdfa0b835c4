#!/bin/bash
# ssh_hosts.sh - two (or N) emulated SSH hosts for taskflow's tests and benchmarks.
# Run as root on Linux with iproute2 and openssh-server (testbed/install.sh).
#
#   bash testbed/ssh_hosts.sh up [N]     # netns tfh1..tfhN, hostnames h1..hN, sshd on port 22
#   bash testbed/ssh_hosts.sh down       # stop what `up` started (recorded PIDs), delete netns/bridge
#   bash testbed/ssh_hosts.sh kill I     # SIGKILL every process in host I's namespace (host crash)
#   bash testbed/ssh_hosts.sh cut I|heal I   # unplug / replug host I (veth down / up)
#   bash testbed/ssh_hosts.sh sshd I     # (re)start host I's sshd
#   bash testbed/ssh_hosts.sh status
#
# Addresses: host I is $NET.$((130+I)) (10.200.0.131, .132, ...) on bridge tfbr0, the root
# namespace is $NET.129/26. A /26 keeps clear of other testbeds using 10.200.0.0/24 (its route is
# more specific), and nothing here is ever routed off the machine: the namespaces have no default
# route and an `unreachable 10.200.0.0/16` safety route stops leaks if the bridge goes away.
# State (keys, sshd_config, known_hosts, logs, pids) lives under $TF_TB (default /tmp/taskflow-tb);
# `up` writes $TF_TB/hosts.env for the tests (TF_TB_HOSTS, TF_TB_KEY, TF_TB_KNOWN_HOSTS, ...).
set -euo pipefail
TF_TB=${TF_TB:-/tmp/taskflow-tb}
NET=10.200.0; BASE=130; BR=tfbr0; NS=tfh
SSHD=/usr/sbin/sshd            # sshd refuses to re-exec unless started by absolute path
P=$TF_TB/pids; L=$TF_TB/log; K=$TF_TB/ssh

log() { echo "[ssh_hosts] $*" >&2; }
waitfor() { local end=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do [ "$(date +%s)" -ge $end ] && return 1; sleep 0.05; done; }

keys() {
  mkdir -p "$K" "$P" "$L"; chmod 700 "$K"
  [ -f "$K/host_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -f "$K/host_ed25519" -C tf-host
  [ -f "$K/user_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -f "$K/user_ed25519" -C tf-user
  [ -f "$K/other_ed25519" ] || ssh-keygen -q -t ed25519 -N "" -f "$K/other_ed25519" -C tf-not-authorized
  cp "$K/user_ed25519.pub" "$K/authorized_keys"; chmod 600 "$K/authorized_keys"
  : >"$K/known_hosts"
  for i in $(seq 1 "$1"); do echo "$NET.$((BASE+i)) $(cut -d' ' -f1,2 "$K/host_ed25519.pub")" >>"$K/known_hosts"; done
  # No ListenAddress here: the one given with -o would be added to it, not replace it.
  cat >"$K/sshd_config" <<EOF
HostKey $K/host_ed25519
AuthorizedKeysFile $K/authorized_keys
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
PermitRootLogin prohibit-password
StrictModes no
UseDNS no
LogLevel INFO
MaxStartups 100:30:200
MaxSessions 50
ClientAliveInterval 0
Subsystem sftp internal-sftp
EOF
  { for i in $(seq 1 "$1"); do printf 'Host h%s %s.%s\n  HostName %s.%s\n' $i $NET $((BASE+i)) $NET $((BASE+i)); done
    cat <<EOF
Host *
  User root
  IdentityFile $K/user_ed25519
  IdentitiesOnly yes
  UserKnownHostsFile $K/known_hosts
  StrictHostKeyChecking yes
  BatchMode yes
  LogLevel ERROR
  ConnectTimeout 5
EOF
  } >"$K/ssh_config"
  printf '#!/bin/sh\nexec /usr/bin/ssh -F %s "$@"\n' "$K/ssh_config" >"$K/ssh-wrap"; chmod +x "$K/ssh-wrap"
  mkdir -p /run/sshd; chmod 755 /run/sshd     # privilege separation dir (missing without systemd)
}

start_sshd() { # I
  local i=$1 ip=$NET.$((BASE+$1))
  [ -f "$P/sshd-$i.pid" ] && kill -0 "$(cat "$P/sshd-$i.pid")" 2>/dev/null && return 0
  : >"$L/sshd-$i.log"
  # nsenter (not `ip netns exec`, which remounts /sys); unshare --uts gives the host its own name.
  nsenter --net=/run/netns/$NS$i unshare --uts sh -c \
    "hostname h$i; exec $SSHD -D -e -f $K/sshd_config -p 22 -o ListenAddress=$ip -o PidFile=$P/sshd-$i.sshdpid" \
    >"$L/sshd-$i.log" 2>&1 &
  echo $! >"$P/sshd-$i.pid"
  waitfor 10 grep -q "Server listening" "$L/sshd-$i.log" || { cat "$L/sshd-$i.log" >&2; exit 1; }
}

cmd_up() {
  local n=${1:-2}
  command -v ip >/dev/null || { log "iproute2 missing"; exit 3; }
  [ -x $SSHD ] || { log "$SSHD missing: apt-get install openssh-server"; exit 3; }
  keys "$n"
  if ! ip link show $BR >/dev/null 2>&1; then
    ip link add $BR type bridge
    ip addr add $NET.$((BASE-1))/26 dev $BR
    ip link set $BR up
  fi
  if ip route add unreachable 10.200.0.0/16 metric 4000 2>/dev/null; then touch "$TF_TB/own-unreachable"; fi
  for i in $(seq 1 "$n"); do
    if [ ! -e /run/netns/$NS$i ]; then
      ip netns add $NS$i
      ip link add v$NS$i type veth peer name eth0 netns $NS$i
      ip link set v$NS$i master $BR up
      ip -n $NS$i addr add $NET.$((BASE+i))/26 dev eth0
      ip -n $NS$i link set lo up
      ip -n $NS$i link set eth0 up
    fi
    start_sshd "$i"
  done
  echo "$n" >"$TF_TB/count"
  local hosts=""; for i in $(seq 1 "$n"); do hosts="$hosts $NET.$((BASE+i))"; done
  cat >"$TF_TB/hosts.env" <<EOF
TF_TB=$TF_TB
TF_TB_HOSTS="${hosts# }"
TF_TB_KEY=$K/user_ed25519
TF_TB_OTHER_KEY=$K/other_ed25519
TF_TB_KNOWN_HOSTS=$K/known_hosts
TF_TB_SSH_CONFIG=$K/ssh_config
TF_TB_SSH_WRAP=$K/ssh-wrap
TF_TB_BRIDGE=$BR
EOF
  log "up: h1..h$n at${hosts} (root ns $NET.$((BASE-1)) on $BR); ssh -F $K/ssh_config h1"
}

ns_pids() { ip netns pids $NS$1 2>/dev/null || true; }
cmd_kill() { # every process of the namespace: a host crash
  local p; for p in $(ns_pids "$1"); do kill -9 "$p" 2>/dev/null || true; done; rm -f "$P/sshd-$1.pid"; }
cmd_cut() { ip link set v$NS$1 down; }
cmd_heal() { ip link set v$NS$1 up; }

cmd_down() {
  local n; n=$(cat "$TF_TB/count" 2>/dev/null || echo 0)
  for i in $(seq 1 "$n"); do
    [ -f "$P/sshd-$i.pid" ] && kill "$(cat "$P/sshd-$i.pid")" 2>/dev/null || true
    for p in $(ns_pids "$i"); do kill -9 "$p" 2>/dev/null || true; done
    rm -f "$P/sshd-$i.pid"
    ip link del v$NS$i 2>/dev/null || true
    ip netns del $NS$i 2>/dev/null || true
  done
  ip link del $BR 2>/dev/null || true
  if [ -f "$TF_TB/own-unreachable" ]; then
    ip route del unreachable 10.200.0.0/16 metric 4000 2>/dev/null || true; rm -f "$TF_TB/own-unreachable"
  fi
  rm -f "$TF_TB/count" "$TF_TB/hosts.env"
  log "down"
}

cmd_status() {
  local n; n=$(cat "$TF_TB/count" 2>/dev/null || echo 0)
  for i in $(seq 1 "$n"); do echo "h$i $NET.$((BASE+i)) pids: $(ns_pids "$i" | tr '\n' ' ')"; done
}

c=${1:-status}; shift || true
case $c in
  up) cmd_up "$@" ;; down) cmd_down ;; kill) cmd_kill "$1" ;; cut) cmd_cut "$1" ;;
  heal) cmd_heal "$1" ;; sshd) start_sshd "$1" ;; status) cmd_status ;;
  *) sed -n '2,11p' "$0"; exit 2 ;;
esac
