"""The chaos driver's scenario (e): the master SIGKILLed while 100+ tasks of seconds run on
the SSH testbed, resumed at once; its agents' running tasks must be adopted, not run again.

The workflow (written into the scenario's directory) submits ``--adopt-tasks`` plain calls
of ``--adopt-seconds`` each and sums their values; every task appends ``s I`` / ``e I`` to
the ledger. Checks: the resumed run ends with the right sum, no task that was running at
the kill started again ("re-executed"), every task ran, nothing is left on the hosts.
"""
from __future__ import annotations

import argparse
import os
import random
import signal
import sys
import time
from typing import Any

WORKFLOW = '''
import os, sys, time
from taskflow import task, wait_on

LEDGER = os.environ["CHAOS_LEDGER"]

def mark(what):
    fd = os.open(LEDGER, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.write(fd, (what + "\\n").encode())
    os.close(fd)

@task(returns=int)
def work(i, secs):
    mark(f"s {i}")
    time.sleep(secs)
    mark(f"e {i}")
    return i * i

n, secs = int(sys.argv[1]), float(sys.argv[2])
total = sum(wait_on([work(i, secs) for i in range(n)]))
print("TOTAL", total, "OK" if total == sum(i * i for i in range(n)) else "WRONG", flush=True)
'''


def scenario_e(root: str, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    from chaos import Ledger, Watcher, left_behind, log, summary_line, wait_ends, wait_run
    from chaos_ssh import SSHTestbed
    import subprocess
    d = os.path.join(root, "e")
    os.makedirs(d, mode=0o700)
    with open(os.path.join(d, "wf.py"), "w") as f:
        f.write(WORKFLOW)
    ledger_path = os.path.join(d, "ledger")
    env = dict(os.environ, CHAOS_LEDGER=ledger_path, TASKFLOW_RUN_DIR=os.path.join(d, "runs"))
    n, secs = args.adopt_tasks, args.adopt_seconds

    def start(tag: str, *opts: str) -> subprocess.Popen[bytes]:
        cmd = [sys.executable, "-m", "taskflow", "run", "--no-progress", *opts, "wf.py",
               str(n), str(secs)]
        log(f"{tag}: {' '.join(cmd[1:])}")
        with open(os.path.join(d, f"{tag}.stdout"), "wb") as out, \
                open(os.path.join(d, f"{tag}.stderr"), "wb") as err:
            return subprocess.Popen(cmd, cwd=d, env=env, stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL)

    with SSHTestbed(2) as tb:
        cluster = os.path.join(d, "cluster.yaml")
        with open(cluster, "w") as f:
            f.write(tb.cluster_file(d, sys.executable, args.ssh_slots, args.ssh_shared_fs))
        t0 = time.time()
        proc = start("e-killed", "--cluster", cluster)
        ledger = Ledger(ledger_path)
        at = rng.uniform(0.2, 0.6)
        wait_ends(ledger, int(at * n), proc, 900.0)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        t_kill = time.time() - t0
        ledger.poll()
        running = {i for i, c in ledger.starts.items() if c and not ledger.ends[i]}
        before = dict(ledger.starts)
        proc2 = start("e-resumed", "--cluster", cluster, "--resume")
        watch = Watcher(proc2.pid)
        watch.start()
        status = wait_run(proc2)
        wall = time.time() - t0
        left = left_behind(watch.procs(), 5.0) + [f"h{i}: {p}" for i in (1, 2)
                                                  for p in tb.leftovers(i, 10.0)]
    ledger.poll()
    again = {i for i, c in ledger.starts.items() if c > before.get(i, 0) and i in before}
    out = open(os.path.join(d, "e-resumed.stdout")).read()
    err = open(os.path.join(d, "e-resumed.stderr")).read()
    adopted = next((ln.strip() for ln in err.splitlines() if "resumed run" in ln), "")
    res = {"scenario": "e", "status": status, "wall": wall, "killed_at": round(t_kill, 2),
           "killed_at_fraction": round(at, 3), "tasks": n, "seconds": secs,
           "running_at_kill": len(running), "reexecuted": len(running & again),
           "reexecuted_not_running": len(again - running),
           "wrong_values": 0 if " OK" in out else 1, "bad_files": 0,
           "never_ran": sum(1 for i in range(n) if not ledger.ends[str(i)]),
           "left_behind": left, "adopted": adopted, "summary": summary_line(err),
           "journal_ok": True}
    problems = {"the run did not finish (hung)": status is None,
                f"exit status {status}": status not in (0, None),
                "wrong values": res["wrong_values"] > 0,
                "tasks that never ran": res["never_ran"] > 0,
                "tasks running at the kill ran again": res["reexecuted"] > 0,
                "processes left behind": bool(left)}
    res["problems"] = [what for what, failed in problems.items() if failed]
    res["ok"] = not res["problems"]
    if status != 0:
        res["stderr_tail"] = err[-3000:]
    return res
