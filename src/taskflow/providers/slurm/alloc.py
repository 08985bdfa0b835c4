"""Node agents inside the allocation the master itself runs in (``taskflow submit``).

``taskflow submit`` writes a job script that runs ``taskflow run --slurm
allocation`` as the batch step, like PyCOMPSs's ``enqueue_compss``. The
master then starts one agent per allocated node with one ``srun`` step
(``--overlap``, so that ``@mpi(runner='srun')`` steps can share the CPUs),
and the agents dial back to it exactly as in batch mode
(:mod:`taskflow.providers.dialback`).

The master's own node runs an agent too: its slots are the node's CPUs, and
the master's bookkeeping shares them (it is light next to real tasks).
The agents dial back to the batch host by the address its hostname resolves
to; give ``host=`` when the compute nodes reach it by another one.
"""
from __future__ import annotations

import os
import shlex
import socket
import subprocess
import sys
import time
from typing import Any

from ..dialback import SECRET_FILE_ENV
from ...errors import SlurmError
from .provider import SlurmProvider


def inside_allocation() -> str | None:
    """The job id when this process runs inside a Slurm allocation."""
    return os.environ.get("SLURM_JOB_ID") or None


class AllocationProvider(SlurmProvider):
    """All the nodes of the current allocation, one agent each (an ``srun`` step)."""

    reap_on_master_death = False    # the allocation ends with its batch step, the master

    def __init__(self, nodes: int | None = None, *, host: str | None = None,
                 **kw: Any) -> None:
        jid = inside_allocation()
        if jid is None:
            raise SlurmError("--slurm allocation: this process is not inside a Slurm allocation "
                             "(SLURM_JOB_ID is not set); use `taskflow submit` to run the "
                             "master in one, or --slurm batch / pilot to get workers from it")
        n = nodes or int(os.environ.get("SLURM_JOB_NUM_NODES") or os.environ.get("SLURM_NNODES")
                         or 1)
        if host is None:
            try:
                host = socket.gethostbyname(socket.gethostname())
            except OSError:
                host = "127.0.0.1"
        kw.pop("time_limit", None)          # the allocation has its walltime already
        super().__init__("batch", n, host=host, **kw)     # batch semantics, no sbatch
        self.alloc_job = jid
        self.step: subprocess.Popen[bytes] | None = None
        self.step_log = ""

    owns_jobs = False               # stop never scancels: the allocation is the user's

    def submit(self, nodes: int, why: str = "") -> str:
        cpus = self.cpus or int(os.environ.get("SLURM_CPUS_ON_NODE") or 1)
        assert self.server is not None      # start() made it
        argv = ["srun", "--overlap", f"--nodes={nodes}", f"--ntasks={nodes}",
                "--ntasks-per-node=1", f"--cpus-per-task={cpus}", "--kill-on-bad-exit=0",
                self.python, "-m", "taskflow.node", "--connect",
                self.server.address]
        env = dict(os.environ, **{SECRET_FILE_ENV: self.secret_file})
        env["PYTHONPATH"] = os.pathsep.join([p for p in sys.path if p] +
                                            ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        if self.worker_init:
            argv = ["bash", "-c", "; ".join(self.worker_init) + "; exec " + shlex.join(argv)]
        self.step_log = os.path.join(self.dir, f"agents-{self.alloc_job}.out")
        with open(self.step_log, "ab") as log:
            try:
                self.step = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, env=env,
                                             start_new_session=True)
            except FileNotFoundError:
                raise SlurmError("srun not found: is this a Slurm node?") from None
        assert self.queue is not None
        self.queue.add(self.alloc_job).state = "RUNNING"
        with self.lock:
            self.submitted.append((time.time(), self.alloc_job))
        return self.alloc_job

    def look(self) -> bool:
        """The agents' srun step is the job here: no Slurm command to ask."""
        job = self.queue.jobs.get(self.alloc_job) if self.queue is not None else None
        if job is not None and self.step is not None and self.step.poll() is not None:
            job.state = "COMPLETED" if self.step.returncode == 0 else "FAILED"
        return True

    def _log_tail(self) -> str:
        try:
            with open(self.step_log) as f:
                return f"{self.step_log}: {f.read()[-800:].strip()}"
        except OSError:
            return "(no output from the agents' srun step)"

    def explain_end(self, h: Any) -> None:
        """The allocation outlives its agents: nothing to ask Slurm."""

    def stop(self, timeout: float = 5.0) -> None:
        super().stop(timeout)            # (owns_jobs: never scancels the allocation we run in)
        step = self.step
        if step is not None and step.poll() is None:
            try:
                step.wait(10)
            except subprocess.TimeoutExpired:
                step.terminate()
                try:
                    step.wait(10)
                except subprocess.TimeoutExpired:
                    step.kill()
