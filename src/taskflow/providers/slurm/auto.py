"""``--slurm auto``: batch or pilots for a run, from the SPA model M = C / W(t).

A run of C slot-seconds of work on nodes that join at times s_1 <= ... <= s_N
(each with ``cpus`` slots) ends when the slots held, integrated from the
start, reach C: w(t) = cpus x #{k : s_k <= t}, M solves ∫_0^M w(t) dt = C.

- batch: one allocation of N nodes, so every s_k is its start: ``sbatch
  --test-only``'s estimate (else the queue model below) plus the time from a
  job's start to its agents' joining (:data:`BATCH_LATENCY`, the scheduler's
  cycle for a multi-node job and the ``srun`` step);
- pilots: N one-node jobs, each starting on the k-th node that comes free:
  idle nodes now, busy ones when their job's time limit ends, after the
  pending jobs ahead in the queue took theirs (the queue backlog, in
  priority order); at most ``max_queued`` pending at once, so pilot k waits
  for pilot k - max_queued to start plus one look of the manager
  (``poll``); plus :data:`PILOT_LATENCY`.

C is the ``work`` given (slot-seconds), else the work of the latest earlier
run of the same script in the run directory, else one minute per slot of
the allocation (said so). Three Slurm calls: ``sbatch --test-only``,
``sinfo``, one ``squeue`` for the running and pending jobs. The decision and
its numbers are printed (one line) and kept in the run's journal (``taskflow
logs RUN 0``) and report.
"""
from __future__ import annotations

import logging
import re
import time
from dataclasses import dataclass, field
from typing import Any

from ...errors import SlurmError
from .queue import slurm, slurm_time, walltime_seconds

log = logging.getLogger("taskflow.providers.slurm")

BATCH_LATENCY = 2.0   # s from a batch job's estimated start to its agents joined
PILOT_LATENCY = 1.0   # s from a pilot's estimated start to its agent joined
UNKNOWN_LIMIT = 3600.0   # s a running job without a time limit is taken to hold its nodes
DEFAULT_WORK_PER_SLOT = 60.0   # s of work per slot when the run's work is not known


@dataclass
class Prediction:
    mode: str
    starts: list[float]            # s from now when each node joins
    makespan: float                # s from now to the end of the work
    notes: list[str] = field(default_factory=list)


def expand_hosts(expr: str) -> list[str]:
    """A Slurm hostlist (``n[1-3,5],gpu7``) as names."""
    out: list[str] = []
    for part in re.findall(r"[^,\[]+(?:\[[^\]]*\])?[^,]*", expr or ""):
        m = re.fullmatch(r"([^\[]*)\[([^\]]*)\](.*)", part)
        if not m:
            if part and part not in ("(null)", "None"):
                out.append(part)
            continue
        pre, ranges, post = m.groups()
        for r in ranges.split(","):
            lo, _, hi = r.partition("-")
            if not hi:
                out.append(f"{pre}{lo}{post}")
                continue
            width = len(lo)
            out.extend(f"{pre}{i:0{width}d}{post}" for i in range(int(lo), int(hi) + 1))
    return out


def makespan(starts: list[float], cpus: int, work: float) -> float:
    """M solving ∫_0^M cpus x #{s_k <= t} dt = work (starts: s from now)."""
    done, t, held = 0.0, 0.0, 0
    for s in sorted(starts):
        if held and done + held * cpus * (s - t) >= work:
            break
        if held:
            done += held * cpus * (s - t)
        t, held = max(t, s), held + 1
    if not held:
        return float("inf")
    return t + (work - done) / (held * cpus)


class QueueState:
    """When each node of the partition comes free, from one sinfo and one squeue."""

    def __init__(self, partition: str | None, run: Any = slurm) -> None:
        self.partition = partition
        self.run = run
        self.free: dict[str, float] = {}       # node -> s from now it is free (0: idle now)
        self.backlog: list[tuple[int, float]] = []   # pending jobs ahead: (nodes, limit s)

    def read(self) -> None:
        part = ["-p", self.partition] if self.partition else []
        now = time.time()
        for line in self.run(["sinfo", "-h", "-N", *part, "-o", "%N|%T"], 30).splitlines():
            name, _, state = line.strip().partition("|")
            st = state.rstrip("*~#!%$@^-").lower()
            if name and st in ("idle", "mixed", "allocated", "completing"):
                self.free.setdefault(name, 0.0)
        out = self.run(["squeue", "-h", "-t", "R,PD", *part, "-o", "%T|%D|%e|%l|%N|%Q"], 30)
        pending: list[tuple[float, int, float]] = []
        for line in out.splitlines():
            bits = line.strip().split("|")
            if len(bits) != 6:
                continue
            state, count, end, limit, nodes, prio = bits
            lim = walltime_seconds(limit) or UNKNOWN_LIMIT
            if state == "RUNNING":
                t_end = slurm_time(end)
                left = max(0.0, t_end - now) if t_end is not None else UNKNOWN_LIMIT
                for n in expand_hosts(nodes):
                    if n in self.free:
                        self.free[n] = max(self.free[n], left)
            elif state == "PENDING":
                try:
                    pending.append((-float(prio or 0), int(count or 1), lim))
                except ValueError:
                    continue
        self.backlog = [(c, lim) for _, c, lim in sorted(pending)]

    def node_starts(self, n: int) -> list[float]:
        """When the first ``n`` nodes come free for us, after the backlog took its share
        (in priority order, each pending job on the earliest free nodes)."""
        free = sorted(self.free.values())
        if not free:
            return []
        for count, lim in self.backlog:
            if count > len(free):
                continue
            at = free[count - 1]
            free = sorted(free[count:] + [at + lim] * count)
        return free[:n]


def predict(nodes: int, cpus: int, work: float, *, max_queued: int, poll: float,
            batch_start: float | None, state: QueueState) -> tuple[Prediction, Prediction]:
    """(batch, pilot) predictions; ``batch_start``: sbatch --test-only's, s from now."""
    free = state.node_starts(nodes)
    notes = []
    if batch_start is None:
        batch_start = free[nodes - 1] if len(free) >= nodes else UNKNOWN_LIMIT
        notes.append("no sbatch --test-only estimate: the queue's")
    b_starts = [batch_start + BATCH_LATENCY] * nodes
    batch = Prediction("batch", b_starts, makespan(b_starts, cpus, work), notes)
    p_starts: list[float] = []
    for k in range(nodes):
        s = free[k] if k < len(free) else (free[-1] if free else UNKNOWN_LIMIT)
        if k >= max_queued:     # submitted once pilot k - max_queued is seen running
            s = max(s, p_starts[k - max_queued] + poll)
        p_starts.append(s + PILOT_LATENCY)
    pilot = Prediction("pilot", p_starts, makespan(p_starts, cpus, work))
    return batch, pilot


def test_only_start(nodes: int, cpus: int | None, opts: dict[str, Any],
                    run: Any = slurm) -> float | None:
    """``sbatch --test-only``'s start estimate for ``nodes`` nodes, s from now."""
    cmd = ["sbatch", "--test-only", f"--nodes={nodes}", "--ntasks-per-node=1"]
    if cpus:
        cmd.append(f"--cpus-per-task={cpus}")
    for key, flag in (("partition", "--partition"), ("time_limit", "--time"),
                      ("account", "--account"), ("qos", "--qos"), ("memory", "--mem")):
        if opts.get(key):
            cmd.append(f"{flag}={opts[key]}")
    cmd += ["--wrap", "true"]
    try:
        text = run(cmd, 30)
    except SlurmError as exc:      # sbatch --test-only answers on stderr with exit 0,
        text = str(exc)            # some versions with exit 1: read either
    m = re.search(r"to start at (\S+)", text)
    start = slurm_time(m.group(1)) if m else None
    return None if start is None else max(0.0, start - time.time())


def previous_work(script: str | None, root: str | None,
                  look: int = 20) -> tuple[float, str] | None:
    """Slot-seconds of work of the latest of the last ``look`` runs under ``root`` that ran
    ``script`` (the first ``.py`` argument of this command when None)."""
    import json
    import os
    import sys

    from ...journal.reader import Journal, run_ids, runs_root
    script = script or next((a for a in sys.argv[1:] if a.endswith(".py")
                             and os.path.isfile(a)), None)
    if not script:
        return None
    want = os.path.abspath(script)
    where = runs_root(root)
    try:
        ids = run_ids(root)
    except Exception:  # noqa: BLE001 - no earlier runs to learn from
        return None
    for rid in list(reversed(ids))[:look]:
        try:
            with Journal(os.path.join(where, rid)) as j:
                argv = json.loads(j.run().get("argv") or "[]")
                cwd = j.run().get("cwd") or ""
                if not any(isinstance(a, str) and a.endswith(".py")
                           and os.path.abspath(os.path.join(cwd, a)) == want for a in argv):
                    continue
                # slot-seconds: a task's run time (the slots of multi-slot tasks aside)
                work = sum(t["t_end"] - t["t_start"] for t in j.tasks()
                           if t.get("t_start") and t.get("t_end"))
        except Exception:  # noqa: BLE001 - an unreadable journal teaches nothing
            continue
        if work > 0:
            return work, f"the work of run {rid}"
    return None


def choose(nodes: int, kw: dict[str, Any], work: float | None = None,
           script: str | None = None, root: str | None = None,
           run: Any = slurm) -> tuple[str, str, dict[str, Any]]:
    """(mode, the decision's line, its numbers) for a run of ``nodes`` nodes."""
    cpus = int(kw.get("cpus") or 1)
    source = "given (work=)"
    if work is None:
        prev = previous_work(script, root)
        if prev is not None:
            work, source = prev
        else:
            work = DEFAULT_WORK_PER_SLOT * nodes * cpus
            source = (f"not known: {DEFAULT_WORK_PER_SLOT:g} s per slot assumed (give "
                      f"--slurm-opt work=SLOT_SECONDS)")
    state = QueueState(kw.get("partition"), run)
    try:
        state.read()
    except SlurmError as exc:
        raise SlurmError(f"--slurm auto: cannot read the queue: {exc}") from None
    start = test_only_start(nodes, kw.get("cpus"), kw, run)
    batch, pilot = predict(nodes, cpus, work, max_queued=int(kw.get("max_queued") or 4),
                           poll=float(kw.get("poll") or 2.0), batch_start=start, state=state)
    # pilots on a tie: they start no later, and a lost one is replaced
    best = batch if batch.makespan < pilot.makespan else pilot
    idle = sum(1 for v in state.free.values() if v <= 0)
    line = (f"--slurm auto chose {best.mode}: predicted makespan batch {batch.makespan:.1f} s "
            f"(all {nodes} nodes in {min(batch.starts):.1f} s) vs pilot {pilot.makespan:.1f} s "
            f"(nodes in {', '.join(f'{s:.1f}' for s in pilot.starts)} s); work "
            f"{work:.0f} slot-s, {source}; {idle} of {len(state.free)} nodes idle, "
            f"{len(state.backlog)} jobs pending ahead")
    numbers = {"chosen": best.mode, "predicted_batch_s": batch.makespan,
               "predicted_pilot_s": pilot.makespan, "work": work, "work_source": source,
               "batch_starts": batch.starts, "pilot_starts": pilot.starts,
               "idle_nodes": idle, "nodes_seen": len(state.free),
               "pending_ahead": len(state.backlog)}
    return best.mode, line, numbers
