"""The chaos driver's scenario (g): an SSH host's link cut for longer than the heartbeat
time-out, then restored; the host must be back in the run, its held results used.

The workflow (written into the scenario's directory) submits ``--flap-tasks`` plain calls
on the SSH testbed (2 hosts): most of ``--flap-seconds`` each, about a third (drawn with
the driver's seed) five times longer (so some of h1's tasks are still running when its
link comes back, and some ended while it was away), and sums their values. Every task appends ``s I HOST T`` / ``e I HOST
T`` to the ledger. h1's link goes down once ``--flap-cut-after`` of the tasks ended (at
least one) and comes back ``--cut-seconds`` later. Checks: the right sum; every task ran; h1 back in the run (the
master's ``node h1 back after ...`` line); no task that finished on h1 while it was away
finished again after h1 came back (its held result was used); nothing left on the hosts.
Reported: how many held results were used and running tasks kept, how many tasks
finished twice (a task that ended on h1 during the cut and whose copy elsewhere ended
before h1 was back: the master could not know), and the wall time.
"""
from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from collections import defaultdict
from typing import Any

WORKFLOW = '''
import os, socket, sys, time
from taskflow import task, wait_on

LEDGER = os.environ["CHAOS_LEDGER"]

def mark(what):
    fd = os.open(LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, f"{what} {socket.gethostname()} {time.time():.3f}\\n".encode())
    os.close(fd)

@task(returns=int)
def work(i, secs):
    mark(f"s {i}")
    time.sleep(secs)
    mark(f"e {i}")
    return i * i

with open(sys.argv[1]) as f:
    durations = [float(x) for x in f.read().split()]
n = len(durations)
total = sum(wait_on([work(i, s) for i, s in enumerate(durations)]))
print("TOTAL", total, "OK" if total == sum(i * i for i in range(n)) else "WRONG", flush=True)
'''

BACK = re.compile(r"node (\S+) back after (\d+) s: (\d+) held results? used, (\d+) running "
                  r"tasks? kept")


def _ledger(path: str) -> list[tuple[str, str, str, float]]:
    try:
        with open(path) as f:
            rows = [line.split() for line in f]
    except OSError:
        return []
    return [(r[0], r[1], r[2], float(r[3])) for r in rows if len(r) == 4]


def _back_at(runs: str) -> float | None:
    """When the journal says a node came back (its line, task 0), or None."""
    import sqlite3
    for run in sorted(os.listdir(runs)) if os.path.isdir(runs) else ():
        db = sqlite3.connect(os.path.join(runs, run, "journal.db"))
        try:
            row = db.execute("SELECT MIN(t) FROM logs WHERE task_id=0 AND line LIKE "
                             "'node % back after %'").fetchone()
        finally:
            db.close()
        if row and row[0]:
            return float(row[0])
    return None


def scenario_g(root: str, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    from chaos import Watcher, left_behind, log, summary_line, wait_run
    from chaos_ssh import SSHTestbed
    import subprocess
    d = os.path.join(root, "g")
    k = 1
    while os.path.exists(d):            # the same scenario again (--only g,g)
        k += 1
        d = os.path.join(root, f"g{k}")
    os.makedirs(d, mode=0o700)
    with open(os.path.join(d, "wf.py"), "w") as f:
        f.write(WORKFLOW)
    ledger_path = os.path.join(d, "ledger")
    env = dict(os.environ, CHAOS_LEDGER=ledger_path, TASKFLOW_RUN_DIR=os.path.join(d, "runs"))
    n, secs = args.flap_tasks, args.flap_seconds
    durations = [secs * (5 if rng.random() < 0.3 else 1) for _ in range(n)]
    with open(os.path.join(d, "durations"), "w") as f:
        f.write(" ".join(f"{x:g}" for x in durations))
    with SSHTestbed(2) as tb:
        cluster = os.path.join(d, "cluster.yaml")
        with open(cluster, "w") as f:
            f.write(tb.cluster_file(d, sys.executable, args.ssh_slots, True))
        cmd = [sys.executable, "-m", "taskflow", "run", "--no-progress", "--cluster", cluster,
               "wf.py", "durations"]
        log(f"g: {' '.join(cmd[1:])}")
        t0 = time.time()
        with open(os.path.join(d, "g.stdout"), "wb") as out, \
                open(os.path.join(d, "g.stderr"), "wb") as err:
            proc = subprocess.Popen(cmd, cwd=d, env=env, stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL)
        watch = Watcher(proc.pid)
        watch.start()
        while proc.poll() is None and \
                sum(1 for r in _ledger(ledger_path) if r[0] == "e") < \
                max(1, int(n * args.flap_cut_after)):
            time.sleep(0.05)
        cut = proc.poll() is None
        t_cut = t_heal = None
        if cut:
            tb.cut(1)
            t_cut = time.time()
            log(f"g: h1's link cut at {t_cut - t0:.1f} s")
            while time.time() < t_cut + args.cut_seconds and proc.poll() is None:
                time.sleep(0.05)
            tb.heal(1)
            t_heal = time.time()
            log(f"g: h1's link restored at {t_heal - t0:.1f} s")
        status = wait_run(proc)
        wall = time.time() - t0
        left = left_behind(watch.procs(), 5.0) + [f"h{i}: {p}" for i in (1, 2)
                                                  for p in tb.leftovers(i, 15.0)]
    out_text = open(os.path.join(d, "g.stdout")).read()
    err_text = open(os.path.join(d, "g.stderr")).read()
    back = BACK.search(err_text)
    rows = _ledger(ledger_path)
    ends: dict[str, list[tuple[str, float]]] = defaultdict(list)
    starts: dict[str, int] = defaultdict(int)
    for kind, i, host, t in rows:
        if kind == "e":
            ends[i].append((host, t))
        else:
            starts[i] += 1
    t_back = _back_at(os.path.join(d, "runs")) or (t_heal or 0.0)
    ended_away = {i for i, e in ends.items() if t_cut is not None and t_heal is not None
                  and any(h == "h1" and t_cut < t < t_heal for h, t in e)}
    twice = {i for i, e in ends.items() if len(e) > 1}
    twice_after = {i for i in twice & ended_away
                   if sorted(t for _, t in ends[i])[1] > t_back + 1.0}
    res = {"scenario": "g", "status": status, "wall": wall, "tasks": n, "seconds": secs,
           "cut_at": None if t_cut is None else round(t_cut - t0, 2),
           "cut_seconds": args.cut_seconds, "back": back.group(0) if back else "",
           "back_after": int(back.group(2)) if back else None,
           "held_used": int(back.group(3)) if back else 0,
           "running_kept": int(back.group(4)) if back else 0,
           "ended_on_h1_while_away": len(ended_away), "finished_twice": len(twice),
           "finished_twice_after_back": len(twice_after),
           "reexecuted": sum(max(0, c - 1) for c in starts.values()),
           "wrong_values": 0 if " OK" in out_text else 1, "bad_files": 0,
           "never_ran": sum(1 for i in range(n) if not ends.get(str(i))),
           "left_behind": left, "summary": summary_line(err_text), "journal_ok": True}
    problems = {"the run did not finish (hung)": status is None,
                f"exit status {status}": status not in (0, None),
                "the run ended before the cut": not cut,
                "wrong values": res["wrong_values"] > 0,
                "tasks that never ran": res["never_ran"] > 0,
                "h1 not back in the run": not back,
                "a task held on h1 finished again after h1 was back":
                    res["finished_twice_after_back"] > 0,
                "processes left behind": bool(left)}
    res["problems"] = [what for what, failed in problems.items() if failed]
    res["ok"] = not res["problems"]
    if status != 0 or not back:
        res["stderr_tail"] = err_text[-3000:]
    return res
