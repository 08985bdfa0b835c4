"""Adoption on Slurm: a resumed master takes over the jobs its dead predecessor left running.

The dial-back agents of an adoptable Slurm run (batch and pilot) outlive a
lost master for ``adopt_grace`` seconds (:mod:`taskflow.agent.orphan`), idle
ones too (their job is the run's allocation either way), and the run's reaper
leaves their RUNNING jobs alone (:mod:`.reaper`). No master can reach
them, so they look for one: their HELLO named a file in the run's Slurm
directory, on the shared filesystem (:func:`adopt_path`: ``adopt-RUN.json``, given
to the agent as the HELLO's ``adopt_file``), and they look at it every second
(:mod:`taskflow.agent.redial`).

A master resuming the run (:class:`JobAdoption`) lists the earlier run's jobs
(``squeue -n tf-RUN``), cancels the PENDING ones, writes that file (mode 0600:
its dial-back address and secret file) and waits, at most :data:`ADOPT_WAIT`
seconds (:data:`QUIET` after the last agent came) and no longer than it takes
every RUNNING job's agents to dial back or the job to end. An agent that dials
back says so in its handshake's meta (``adopt``: the earlier run, its node);
before any frame, the master checks its job is one of the earlier run's running
jobs and proves, and gets the proof of, the earlier run's secret bound to (run,
node) (:func:`taskflow.wire.adoption.master_side`). Then the agent is a node of
the new run under its old name, its kept tasks adopted as a local or SSH agent's
are (runtime/adoption.py), and its job one of the run's (renamed ``tf-NEWRUN``):
watched by the manager, cancelled at the run's stop or by its reaper. Running
jobs none of whose agents came back (they refused this master) are cancelled:
they would hold their nodes for the grace for nothing.
"""
from __future__ import annotations

import json
import logging
import os
import threading
import time
from typing import TYPE_CHECKING, Any, Protocol

from ...context import private_file
from ...errors import SlurmError
from ...wire import adoption
from .queue import ENDED
from .queue import slurm as _slurm

if TYPE_CHECKING:
    import ssl

    from ..base import AdoptFrom
    from ..dialback import DialbackServer
    from .manager import SlurmManager

log = logging.getLogger("taskflow.providers.slurm")

ADOPT_WAIT = 20.0      # s at most a resumed master waits for the earlier run's agents
QUIET = 5.0            # ... and no longer than this after the last one came (they look at
#                        the adopt file every second: one silent this long is not coming)
LOOK_EVERY = 2.0       # s between looks at the earlier run's jobs meanwhile


def adopt_path(slurm_dir: str, run_id: str) -> str:
    """Where run ``run_id``'s dial-back agents look for a resumed master."""
    return os.path.join(slurm_dir, f"adopt-{run_id}.json")


def job_name(run_id: str) -> str:
    """The Slurm job name of a run's jobs."""
    return f"tf-{run_id}"


class Adopter(Protocol):
    """The Slurm provider of a resumed run, as its :class:`JobAdoption` sees it (read only;
    ``server``, ``secret_file`` and ``job_name`` are set once the provider starts)."""

    @property
    def work_dir(self) -> str | None: ...
    @property
    def manager(self) -> SlurmManager: ...
    @property
    def server(self) -> DialbackServer | None: ...
    @property
    def secret_file(self) -> str: ...
    @property
    def job_name(self) -> str: ...


class JobAdoption:
    """One Slurm provider of a resumed run, taking over the earlier run's jobs."""

    def __init__(self, provider: Adopter, src: AdoptFrom) -> None:
        self.p = provider
        self.src = src
        slurm_dir = provider.work_dir or os.path.join(src.run_dir, "slurm")
        self.path = adopt_path(os.path.abspath(slurm_dir), src.run_id)
        self.name = job_name(src.run_id)
        self.running: dict[str, int] = {}       # earlier job id -> its nodes (RUNNING)
        self.joined: dict[str, int] = {}        # ... -> agents that dialled back
        self.failed: dict[str, int] = {}        # ... -> agents refused (a failed proof)
        self.refusals: list[str] = []
        self.written = False
        self._lock = threading.Lock()

    # -- the earlier run's jobs ---------------------------------------------------------
    def _look(self) -> dict[str, tuple[str, int]]:
        """job id -> (state, nodes) of the earlier run's jobs ({} when Slurm does not say)."""
        try:
            out = _slurm(["squeue", "-h", "-t", "all", "-n", self.name, "-o", "%i|%T|%D"], 15)
        except SlurmError as exc:
            self.p.manager.say(f"the earlier run's jobs ({self.name}) cannot be listed "
                               f"({exc}): none of them is adopted", warn=True)
            return {}
        jobs = {}
        for line in out.split():
            jid, _, rest = line.partition("|")
            state, _, nodes = rest.partition("|")
            jobs[jid] = (state, int(nodes) if nodes.isdigit() else 1)
        return jobs

    def start(self) -> None:
        """Look at the earlier run's jobs; cancel the pending ones; say where this master
        listens (for the agents of the running ones)."""
        p = self.p
        jobs = self._look()
        pending = [j for j, (s, _) in jobs.items() if s in ("PENDING", "CONFIGURING")]
        if pending:
            try:
                _slurm(["scancel", *pending], 15)
            except SlurmError as exc:
                log.warning("slurm: %s", exc)
            p.manager.say(f"cancelled the earlier run's pending job(s) {', '.join(pending)}: "
                          f"this run submits what it needs")
        self.running = {j: n for j, (s, n) in jobs.items() if s == "RUNNING"}
        if not self.running:
            p.manager.say(f"run {self.src.run_id} left no running Slurm job: nothing to adopt")
            return
        assert p.server is not None
        p.server.adopt_check = self.check
        path = private_file(self.path + ".new")
        with open(path, "w") as f:
            json.dump({"address": p.server.address, "secret_file": p.secret_file,
                       "run": p.job_name, "pid": os.getpid()}, f)
        os.replace(path, self.path)
        self.written = True
        p.manager.say(f"waiting up to {ADOPT_WAIT:g} s for the agents of run "
                      f"{self.src.run_id}'s running job(s) {', '.join(self.running)} to dial "
                      f"back (they look at {self.path})")

    def check(self, conn: ssl.SSLSocket, meta: dict[str, Any]) -> None:
        """A dial-back agent of the earlier run (the server's thread, before any frame):
        its job is one of the earlier run's running ones and it proves the earlier run's
        secret for its node (and gets this master's proof); else refused, with why."""
        want = meta.get("adopt")
        run = str(want.get("run", "")) if isinstance(want, dict) else ""
        node = str(want.get("node", "")) if isinstance(want, dict) else ""
        jid = str(meta.get("job_id") or "")
        if run != self.src.run_id:
            raise adoption.Refused(f"an agent of run {run or '?'} asks to be adopted; this "
                                   f"master resumes run {self.src.run_id}")
        if jid not in self.running:
            raise adoption.Refused(f"node {node}: its job {jid or '?'} is not a running job "
                                   f"of run {run}")
        try:
            adoption.master_side(conn, self.src.secret, run, node, f"node {node} (job {jid})")
        except adoption.Refused as exc:
            with self._lock:
                self.refusals.append(str(exc))
                self.failed[jid] = self.failed.get(jid, 0) + 1
            raise

    def joined_one(self, jid: str) -> None:
        with self._lock:
            self.joined[jid] = self.joined.get(jid, 0) + 1

    def wait(self) -> int:
        """Until every running job's agents dialled back or the job ended (at most
        ADOPT_WAIT s): the agents adopted."""
        deadline = time.time() + ADOPT_WAIT
        next_look = time.time() + LOOK_EVERY
        last, came = time.time(), 0
        while self.running and time.time() < min(deadline, last + QUIET):
            with self._lock:
                if all(self.joined.get(j, 0) + self.failed.get(j, 0) >= n
                       for j, n in self.running.items()):
                    break
                if sum(self.joined.values()) + sum(self.failed.values()) > came:
                    last, came = time.time(), sum(self.joined.values()) + sum(self.failed.values())
            if time.time() >= next_look:
                jobs = self._look()
                for j in list(self.running):
                    state = jobs.get(j, ("VANISHED", 0))[0]
                    if state.split()[0] in ENDED or state == "VANISHED":
                        if not self.joined.get(j):
                            del self.running[j]
                        else:
                            self.running[j] = self.joined[j]
                next_look = time.time() + LOOK_EVERY
            time.sleep(0.1)
        self.withdraw()     # the wait is over: a late agent is not adopted (Adoption is made)
        if self.p.server is not None:
            self.p.server.adopt_check = None
        with self._lock:
            got = sum(self.joined.values())
            missing = {j: n - self.joined.get(j, 0) for j, n in self.running.items()
                       if self.joined.get(j, 0) < n}
        left = [j for j in self.running if not self.joined.get(j)]
        if left:        # they would hold their nodes for the grace, for nothing
            try:
                _slurm(["scancel", *left], 15)
            except SlurmError as exc:
                log.warning("slurm: %s", exc)
            why = (f"{len(self.refusals)} refused, the last: {self.refusals[-1]}"
                   if self.refusals else "none of their agents dialled back")
            self.p.manager.say(f"cancelled the earlier run's running job(s) {', '.join(left)}, "
                               f"not adopted ({why}): their tasks run again", warn=True)
        if len(left) < len(self.running):
            self.p.manager.say(
                f"adopted {got} agent(s) of run {self.src.run_id} in job(s) "
                f"{', '.join(j for j in self.running if self.joined.get(j))}"
                + (f"; {sum(missing.values())} did not dial back (jobs "
                   f"{', '.join(missing)}): taken for lost" if missing else ""))
        return got

    def rename(self) -> None:
        """The adopted jobs take this run's job name: its ``scancel -n`` and reaper cover
        them, and a master resuming *this* run finds them (``squeue -n``). Where Slurm
        refuses, they are still tracked by id (and the reaper names the earlier run)."""
        for jid in self.adopted_jobs():
            try:
                _slurm(["scontrol", "update", f"JobId={jid}", f"JobName={self.p.job_name}"],
                       15)
            except SlurmError as exc:
                log.warning("slurm: job %s keeps its name %s (%s): a master resuming this "
                            "run will not find it", jid, self.name, exc)

    def adopted_jobs(self) -> list[str]:
        with self._lock:
            return [j for j, n in self.joined.items() if n]

    def withdraw(self) -> None:
        """The run stops: no agent is to dial this master any more."""
        if self.written:
            try:
                os.unlink(self.path)
            except OSError:
                pass
            self.written = False
