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
import subprocess
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


class KillAndResume:
    """(e) and (f): the workflow of ``n`` tasks of ``secs`` in directory ``d``, its master
    SIGKILLed once a random 20-60 % of the tasks ended, then resumed at once."""

    def __init__(self, d: str, n: int, secs: float, *opts: str) -> None:
        from chaos import Ledger
        os.makedirs(d, mode=0o700)
        with open(os.path.join(d, "wf.py"), "w") as f:
            f.write(WORKFLOW)
        self.d, self.n, self.secs, self.opts = d, n, secs, opts
        self.runs = os.path.join(d, "runs")
        ledger_path = os.path.join(d, "ledger")
        self.env = dict(os.environ, CHAOS_LEDGER=ledger_path, TASKFLOW_RUN_DIR=self.runs)
        self.ledger = Ledger(ledger_path)
        self.t0 = time.time()

    def start(self, tag: str, *more: str) -> subprocess.Popen[bytes]:
        from chaos import log
        cmd = [sys.executable, "-m", "taskflow", "run", "--no-progress", *self.opts, *more,
               "wf.py", str(self.n), str(self.secs)]
        log(f"{tag}: {' '.join(cmd[1:])}")
        with open(os.path.join(self.d, f"{tag}.stdout"), "wb") as out, \
                open(os.path.join(self.d, f"{tag}.stderr"), "wb") as err:
            return subprocess.Popen(cmd, cwd=self.d, env=self.env, stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL)

    def kill_midway(self, tag: str, rng: random.Random) -> None:
        """Start the run, SIGKILL its master midway; what ran and was running then."""
        from chaos import wait_ends
        self.t0 = time.time()
        proc = self.start(tag)
        self.at = rng.uniform(0.2, 0.6)
        wait_ends(self.ledger, int(self.at * self.n), proc, 900.0)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait()
        self.t_kill = time.time() - self.t0
        self.ledger.poll()
        self.running = {i for i, c in self.ledger.starts.items()
                        if c and not self.ledger.ends[i]}
        self.before = dict(self.ledger.starts)

    def resume(self, tag: str, started: Any = None) -> int | None:
        """``taskflow run --resume`` at once (``started(proc)`` first); its exit status."""
        from chaos import wait_run
        proc = self.start(tag, "--resume")
        if started is not None:
            started(proc)
        status = wait_run(proc)
        self.wall = time.time() - self.t0
        return status

    def verdict(self, scenario: str, tag: str, status: int | None,
                left: list[str]) -> dict[str, Any]:
        """The resumed run (``tag``) checked: nothing running at the kill started again,
        the right values, every task ran, nothing (``left``) left behind."""
        from chaos import summary_line
        ledger, n = self.ledger, self.n
        ledger.poll()
        again = {i for i, c in ledger.starts.items()
                 if c > self.before.get(i, 0) and i in self.before}
        out = open(os.path.join(self.d, f"{tag}.stdout")).read()
        err = open(os.path.join(self.d, f"{tag}.stderr")).read()
        adopted = next((ln.strip() for ln in err.splitlines() if "resumed run" in ln), "")
        res = {"scenario": scenario, "status": status, "wall": self.wall,
               "killed_at": round(self.t_kill, 2), "killed_at_fraction": round(self.at, 3),
               "tasks": n, "seconds": self.secs, "running_at_kill": len(self.running),
               "reexecuted": len(self.running & again),
               "reexecuted_not_running": len(again - self.running),
               "wrong_values": 0 if " OK" in out else 1, "bad_files": 0,
               "never_ran": sum(1 for i in range(n) if not ledger.ends[str(i)]),
               "left_behind": left, "adopted": adopted, "summary": summary_line(err),
               "journal_ok": True}
        problems = {"the run did not finish (hung)": status is None,
                    f"exit status {status}": status not in (0, None),
                    "wrong values": res["wrong_values"] > 0,
                    "tasks that never ran": res["never_ran"] > 0,
                    "tasks running at the kill ran again": res["reexecuted"] > 0,
                    "processes or jobs left behind": bool(left)}
        res["problems"] = [what for what, failed in problems.items() if failed]
        res["ok"] = not res["problems"]
        if status != 0:
            res["stderr_tail"] = err[-3000:]
        return res


def scenario_e(root: str, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    from chaos import Watcher, left_behind
    from chaos_ssh import SSHTestbed
    d = os.path.join(root, "e")
    with SSHTestbed(2) as tb:
        cluster = os.path.join(root, "e-cluster.yaml")
        with open(cluster, "w") as f:
            f.write(tb.cluster_file(d, sys.executable, args.ssh_slots, args.ssh_shared_fs))
        run = KillAndResume(d, args.adopt_tasks, args.adopt_seconds, "--cluster", cluster)
        run.kill_midway("e-killed", rng)
        watches: list[Watcher] = []

        def watch(proc: subprocess.Popen[bytes]) -> None:     # what the resumed run starts
            watches.append(Watcher(proc.pid))
            watches[-1].start()
        status = run.resume("e-resumed", watch)
        left = left_behind(watches[-1].procs(), 5.0) + [f"h{i}: {p}" for i in (1, 2)
                                                  for p in tb.leftovers(i, 10.0)]
    return run.verdict("e", "e-resumed", status, left)
