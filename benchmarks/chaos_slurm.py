"""The chaos driver's scenario (f): (e) on the Slurm testbed, with dial-back agents in batch
and pilot jobs. The master is SIGKILLed while tasks of seconds run, resumed at once; the
agents dial the resumed master back (providers/slurm/adopt.py) and their running tasks are
adopted, not run again.

The Slurm testbed is testbed/slurm.sh (3 nodes of 2 CPUs), brought up under the
lock the tests take. Each mode is one result row (``f-batch``, ``f-pilot``): tasks running at
the kill, adopted, started again (must be 0), wrong values (0), every task ran, and nothing
left behind (no agent process, no job of either run still in the queue).
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SCRIPT = os.path.join(ROOT, "testbed", "slurm.sh")
TB = os.environ.get("TF_SLURM_TB", "/tmp/taskflow-slurm")
NODES = 3
CPUS = 2


class SlurmTestbed:
    """``with SlurmTestbed():`` the local Slurm up (SLURM_CONF set), down again at the end."""

    def __enter__(self) -> "SlurmTestbed":
        sys.path.insert(0, os.path.join(ROOT, "testbed"))
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
    from chaos_adopt import KillAndResume
    run = KillAndResume(d, args.slurm_tasks, args.adopt_seconds, "--slurm", mode,
                        "--slurm-nodes", str(NODES), "--slurm-opt", f"cpus={CPUS}")
    run.kill_midway(f"f-{mode}-killed", rng)
    (first,) = os.listdir(run.runs)
    status = run.resume(f"f-{mode}-resumed")
    (second,) = set(os.listdir(run.runs)) - {first}
    deadline = time.time() + 15
    while True:
        left = agents_in(d) + [f"job {j}" for r in (first, second)
                               for j in SlurmTestbed.live_jobs(f"tf-{r}")]
        if not left or time.time() > deadline:
            break
        time.sleep(0.2)
    return run.verdict(f"f-{mode}", f"f-{mode}-resumed", status, left)


def scenario_f(root: str, args: argparse.Namespace,
               rng: random.Random) -> list[dict[str, Any]]:
    with SlurmTestbed():
        return [one_mode(os.path.join(root, f"f-{mode}"), mode, args, rng)
                for mode in ("batch", "pilot")]
