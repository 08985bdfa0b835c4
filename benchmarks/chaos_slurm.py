"""The chaos driver's scenario (f): (e) on the Slurm testbed, with dial-back agents in batch
and pilot jobs. The master is SIGKILLed while tasks of seconds run, resumed at once; the
agents dial the resumed master back (providers/slurm_rejoin.py) and their running tasks are
adopted, not run again.

The Slurm testbed is runtime/testbed/slurm.sh (3 nodes of 2 CPUs), brought up under the
lock the tests take. Each mode is one result row (``f-batch``, ``f-pilot``): tasks running at
the kill, adopted, started again (must be 0), wrong values (0), every task ran, and nothing
left behind (no agent process, no job of either run still in the queue).
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

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "runtime", "testbed", "slurm.sh")
TB = os.environ.get("TF_SLURM_TB", "/tmp/taskflow-slurm")
NODES = 3
CPUS = 2


class SlurmTestbed:
    """``with SlurmTestbed():`` the local Slurm up (SLURM_CONF set), down again at the end."""

    def __enter__(self) -> "SlurmTestbed":
        sys.path.insert(0, os.path.join(ROOT, "runtime", "testbed"))
        from testbed_hold import hold
        os.makedirs(TB, exist_ok=True)
        self.lock = hold(os.path.join(os.path.dirname(TB), "taskflow-slurm.lock"), 900.0)
        if self.lock is None:
            raise RuntimeError("the Slurm testbed stayed in use by another session")
        self._sh("down")
        r = self._sh("up", str(NODES))
        if r.returncode != 0:
            self.__exit__()
            raise RuntimeError(f"slurm.sh up failed: {r.stderr.strip()}")
        self.old = os.environ.get("SLURM_CONF")
        os.environ["SLURM_CONF"] = os.path.join(TB, "slurm", "slurm.conf")
        return self

    def __exit__(self, *exc: Any) -> None:
        try:
            self._sh("down")
        finally:
            if getattr(self, "old", None) is None:
                os.environ.pop("SLURM_CONF", None)
            else:
                os.environ["SLURM_CONF"] = self.old      # type: ignore[assignment]
            self.lock.close()

    def _sh(self, *args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(["bash", SCRIPT, *args], env=dict(os.environ, TF_SLURM_TB=TB),
                              capture_output=True, text=True, timeout=120)

    @staticmethod
    def live_jobs(name: str) -> list[str]:
        r = subprocess.run(["squeue", "-h", "-n", name, "-o", "%i %T"], capture_output=True,
                           text=True, timeout=15)
        return [ln for ln in r.stdout.splitlines() if ln.strip()]


def agents_in(path: str) -> list[str]:
    """Node agents and executors whose working directory is ``path``."""
    out = []
    for pid in os.listdir("/proc"):
        if not pid.isdigit():
            continue
        try:
            cmd = open(f"/proc/{pid}/cmdline", "rb").read()
            if b"taskflow.node" in cmd and os.readlink(f"/proc/{pid}/cwd") == path:
                text = cmd.replace(b"\0", b" ").decode(errors="replace")
                out.append(f"{pid} {text[:80]}")
        except OSError:
            continue
    return out


def one_mode(d: str, mode: str, args: argparse.Namespace,
             rng: random.Random) -> dict[str, Any]:
    from chaos import Ledger, log, summary_line, wait_ends, wait_run
    from chaos_adopt import WORKFLOW
    os.makedirs(d, mode=0o700)
    with open(os.path.join(d, "wf.py"), "w") as f:
        f.write(WORKFLOW)
    ledger_path = os.path.join(d, "ledger")
    runs = os.path.join(d, "runs")
    env = dict(os.environ, CHAOS_LEDGER=ledger_path, TASKFLOW_RUN_DIR=runs)
    n, secs = args.slurm_tasks, args.adopt_seconds

    def start(tag: str, *opts: str) -> subprocess.Popen[bytes]:
        cmd = [sys.executable, "-m", "taskflow", "run", "--no-progress", "--slurm", mode,
               "--slurm-nodes", str(NODES), "--slurm-opt", f"cpus={CPUS}", *opts, "wf.py",
               str(n), str(secs)]
        log(f"{tag}: {' '.join(cmd[1:])}")
        with open(os.path.join(d, f"{tag}.stdout"), "wb") as out, \
                open(os.path.join(d, f"{tag}.stderr"), "wb") as err:
            return subprocess.Popen(cmd, cwd=d, env=env, stdout=out, stderr=err,
                                    stdin=subprocess.DEVNULL)

    t0 = time.time()
    proc = start(f"f-{mode}-killed")
    ledger = Ledger(ledger_path)
    at = rng.uniform(0.2, 0.6)
    wait_ends(ledger, int(at * n), proc, 900.0)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    t_kill = time.time() - t0
    ledger.poll()
    running = {i for i, c in ledger.starts.items() if c and not ledger.ends[i]}
    before = dict(ledger.starts)
    (first,) = os.listdir(runs)
    proc2 = start(f"f-{mode}-resumed", "--resume")
    status = wait_run(proc2)
    wall = time.time() - t0
    (second,) = set(os.listdir(runs)) - {first}
    deadline = time.time() + 15
    while True:
        left = agents_in(d) + [f"job {j}" for r in (first, second)
                               for j in SlurmTestbed.live_jobs(f"tf-{r}")]
        if not left or time.time() > deadline:
            break
        time.sleep(0.2)
    ledger.poll()
    again = {i for i, c in ledger.starts.items() if c > before.get(i, 0) and i in before}
    out = open(os.path.join(d, f"f-{mode}-resumed.stdout")).read()
    err = open(os.path.join(d, f"f-{mode}-resumed.stderr")).read()
    adopted = next((ln.strip() for ln in err.splitlines() if "resumed run" in ln), "")
    res = {"scenario": f"f-{mode}", "status": status, "wall": wall,
           "killed_at": round(t_kill, 2), "killed_at_fraction": round(at, 3), "tasks": n,
           "seconds": secs, "running_at_kill": len(running),
           "reexecuted": len(running & again), "reexecuted_not_running": len(again - running),
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


def scenario_f(root: str, args: argparse.Namespace,
               rng: random.Random) -> list[dict[str, Any]]:
    with SlurmTestbed():
        return [one_mode(os.path.join(root, f"f-{mode}"), mode, args, rng)
                for mode in ("batch", "pilot")]
