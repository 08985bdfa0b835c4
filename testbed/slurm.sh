#!/bin/bash
# slurm.sh - a throwaway local Slurm cluster for the tests (Debian, as root).
# munged + slurmctld + N slurmd on this machine (multiple-slurmd style: NodeName=nI
# NodeHostname=localhost Port=...), all on loopback, all state under $TF_SLURM_TB.
# Adapted from shared/testbed/infra.sh (slurm-up multi) and conf/slurm.multi.conf.
#
#   bash testbed/slurm.sh up [N]   # default 3 nodes, $TF_SLURM_CPUS (2) CPUs each
#   bash testbed/slurm.sh down     # scancel everything, stop the daemons (recorded PIDs)
#   bash testbed/slurm.sh status
#   bash testbed/slurm.sh ctld-stop    # stop slurmctld only (SIGTERM: it saves its state)
#   bash testbed/slurm.sh ctld-start   # start it again on that state (jobs are kept)
# Then: source $TF_SLURM_TB/env.sh  (exports SLURM_CONF)
set -euo pipefail
TB=${TF_SLURM_TB:-/tmp/taskflow-slurm}
S=$TB/slurm; P=$TB/pids; L=$TB/log
CPUS=${TF_SLURM_CPUS:-2}
CTL_PORT=${TF_SLURM_CTL_PORT:-6917}; NODE_PORT0=${TF_SLURM_NODE_PORT0:-27000}
mkdir -p "$TB" "$P" "$L"; chmod 755 "$TB"

log() { echo "[slurm.sh] $*" >&2; }
waitfor() { # waitfor SECONDS CMD...   poll every 0.1 s
  local end=$(( $(date +%s) + $1 )); shift
  until "$@" >/dev/null 2>&1; do [ "$(date +%s)" -ge $end ] && return 1; sleep 0.1; done
}
start() { local name=$1; shift; "$@" >"$L/$name.log" 2>&1 & echo $! >"$P/$name.pid"; }
munge_ok() { munge -n --socket="$S/munge/munge.socket.2" | unmunge --socket="$S/munge/munge.socket.2"; }
no_jobs() { [ -z "$(SLURM_CONF=$S/slurm.conf squeue -h -o %i)" ]; }
# slurmstepd processes of this testbed (a file open under $TB: its slurmd log): a job step that
# outlives the daemons would be reported again by the next slurmd under a job id the
# fresh slurmctld hands out anew ("Duplicate jobid", node DRAINed, later jobs PENDING).
our_stepds() {
  local p
  for p in $(pgrep -x slurmstepd || true); do
    [ -n "$(find "/proc/$p/fd" -maxdepth 1 -lname "$TB/*" -print -quit 2>/dev/null)" ] && echo "$p"
  done
  return 0
}
no_stepds() { [ -z "$(our_stepds)" ]; }
nodes_idle() { [ "$(SLURM_CONF=$S/slurm.conf sinfo -h -N -o %T | grep -c '^idle$')" -ge "$1" ]; }

write_conf() { # N
  local here; here=$(cd "$(dirname "$0")" && pwd)
  sed -e "s#\$TB#$TB#g" -e "s#^SlurmctldPort=.*#SlurmctldPort=$CTL_PORT#" \
      -e "s#^SlurmdPort=.*#SlurmdPort=$((NODE_PORT0 - 1))#" -e '/^NodeName=/d' -e '/^PartitionName=/d' \
      "$here/conf/slurm.multi.conf" >"$S/slurm.conf"
  for i in $(seq 1 "$1"); do
    echo "NodeName=n$i NodeHostname=localhost NodeAddr=127.0.0.1 Port=$((NODE_PORT0 + i)) CPUs=$CPUS State=UNKNOWN" >>"$S/slurm.conf"
  done
  echo "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP" >>"$S/slurm.conf"
  echo "SchedulerParameters=sched_interval=2" >>"$S/slurm.conf"   # retry pending jobs every 2 s, not 60
}

cmd_up() {
  local n=${1:-3}
  for b in munged slurmctld slurmd sbatch; do command -v $b >/dev/null || [ -x /usr/sbin/$b ] || { log "missing $b"; exit 3; }; done
  rm -rf "$S/state"; mkdir -p "$S/state" "$S/munge"; chmod 755 "$S/munge"
  [ -f "$S/munge/munge.key" ] || { dd if=/dev/urandom of="$S/munge/munge.key" bs=1024 count=1 2>/dev/null; chmod 400 "$S/munge/munge.key"; }
  start munged /usr/sbin/munged -F --socket="$S/munge/munge.socket.2" --key-file="$S/munge/munge.key" \
    --log-file="$L/munged.file.log" --pid-file="$S/munge/munged.pid" --seed-file="$S/munge/munged.seed"
  waitfor 10 munge_ok || { cat "$L/munged.log"; exit 1; }
  write_conf "$n"
  kill -9 $(our_stepds) 2>/dev/null || true; waitfor 10 no_stepds || true
  rm -rf "$S/spool"          # no job state from an earlier cluster (its job ids restart)
  for i in $(seq 1 "$n"); do mkdir -p "$S/spool/n$i" "$S/tmp/n$i"; done
  start slurmctld /usr/sbin/slurmctld -D -i -f "$S/slurm.conf"
  for i in $(seq 1 "$n"); do start slurmd-n$i /usr/sbin/slurmd -D -N n$i -f "$S/slurm.conf"; done
  waitfor 60 nodes_idle "$n" || { tail -5 "$L"/slurm*.log; exit 1; }
  echo "export SLURM_CONF=$S/slurm.conf" >"$TB/env.sh"
  log "slurm up: nodes n1..n$n ($CPUS CPUs each); export SLURM_CONF=$S/slurm.conf"
}

stop_pid() { # TERM, wait up to 10 s, then KILL (our own recorded PIDs only)
  local f=$1 p; p=$(cat "$f" 2>/dev/null) || return 0
  if kill -0 "$p" 2>/dev/null; then
    kill "$p" 2>/dev/null || true
    for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$p" 2>/dev/null && kill -9 "$p" 2>/dev/null || true
  fi
  rm -f "$f"
}
cmd_down() {
  if [ -f "$S/slurm.conf" ] && [ -f "$P/slurmctld.pid" ]; then
    SLURM_CONF=$S/slurm.conf timeout 10 scancel --user="$(id -un)" 2>/dev/null || true
    waitfor 20 no_jobs || log "jobs still listed after scancel"
    waitfor 10 no_stepds || log "job steps still running after scancel"
  fi
  local f
  for f in "$P"/slurmd-*.pid "$P"/slurmctld.pid; do [ -e "$f" ] && kill "$(cat "$f")" 2>/dev/null || true; done
  for f in "$P"/slurmd-*.pid "$P"/slurmctld.pid "$P"/munged.pid; do [ -e "$f" ] && stop_pid "$f"; done
  log "down"
}
ctld_ok() { SLURM_CONF=$S/slurm.conf timeout 5 scontrol ping 2>/dev/null | grep -q "is UP"; }
cmd_ctld_stop() { [ -f "$P/slurmctld.pid" ] && stop_pid "$P/slurmctld.pid"; log "slurmctld stopped"; }
cmd_ctld_start() {
  start slurmctld /usr/sbin/slurmctld -D -i -f "$S/slurm.conf"
  waitfor 30 ctld_ok || { tail -5 "$L"/slurmctld*.log; exit 1; }
  log "slurmctld up again"
}
cmd_status() {
  for f in "$P"/*.pid; do [ -e "$f" ] || continue; p=$(cat "$f")
    printf '%-16s %-7s %s\n' "$(basename "$f" .pid)" "$p" "$(kill -0 "$p" 2>/dev/null && echo up || echo dead)"; done
}

c=${1:-status}; shift || true
case $c in
  up) cmd_up "$@" ;; down) cmd_down ;; status) cmd_status ;;
  ctld-stop) cmd_ctld_stop ;; ctld-start) cmd_ctld_start ;;
  *) sed -n '2,10p' "$0"; exit 2 ;;
esac
