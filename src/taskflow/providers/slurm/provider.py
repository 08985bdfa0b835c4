"""The Slurm provider: node agents in Slurm jobs, dialling back to the master.

Two modes (issue 7):

batch
    one ``sbatch`` allocation of ``nodes`` nodes; ``srun`` starts one agent
    per node; ``start`` returns when all of them have joined.
pilot
    ``nodes`` single-node jobs submitted independently (at most
    ``max_queued`` pending at once); ``start`` returns with the first pilot
    that joins, the others join the running runtime as their jobs start.
    Ended pilots are replaced up to the target; a pilot's agent idle for
    ``idle_timeout`` seconds leaves by itself (its job ends) and is not
    replaced until work is ready again.

Draining: with a ``time_limit`` the jobs ask Slurm for SIGTERM
``drain_margin`` seconds before the walltime (``--signal``); an agent that
gets SIGTERM (that, or ``scancel --signal=TERM``) takes no new work, hands
back what it has not started and exits once its running tasks have
reported. A node whose job ended is reported with the job's Slurm state.
Slurm may send that signal up to a minute early (its event resolution), even
before the agent's interpreter is up: a pilot's batch shell ignores SIGTERM
until the agent installs its handler, so an early signal cannot kill a pilot
that has not joined yet (the master still keeps tasks that would outlast
``walltime_end - drain_margin`` off it).

Every job is ``scancel``led at ``stop``, and by :mod:`.reaper` if the
master dies first (in an adoptable run, only the pending ones: the agents of the
running ones wait for a resumed master, which adopts them: :mod:`.adopt`).
Agents connect back over TCP to
127.0.0.1 (:mod:`taskflow.providers.dialback`), proving the per-run secret held
in a 0600 file; each node's ``job_id`` is its Slurm job id.

One manager thread (:mod:`.manager`) talks to Slurm (:mod:`.queue`): one batched
``squeue`` for all the run's jobs per look, every ``poll`` seconds while a
decision waits on the queue and every ``poll_slow`` seconds once every job
runs; no call per job. Each decision (a pilot submitted, replaced, held
back; a job that ended or vanished) is one line in the log (``--log-level
info``) and in the journal (``taskflow logs RUN 0``). A controller that does
not answer is said once; the run goes on with the nodes it has and submits
nothing until the controller answers (an ``sbatch`` that got no answer is
looked for by its token in the job's comment before anything is submitted
again: a job is never submitted twice); after ``controller_wait`` seconds
the provider gives up on Slurm, says so, and tasks that no node left can run
fail instead of waiting.
"""
from __future__ import annotations

import logging
import os
import queue
import secrets
import shlex
import sys
import tempfile
import threading
import time
from typing import TYPE_CHECKING, Any

from ...context import PYTHON, private_dir
from ...errors import NodeStartError, SlurmError, VersionMismatch
from ..base import NodeSink, Provider
from ..dialback import SECRET_FILE_ENV, DialbackServer, write_secret
from ..handle import NodeHandle
from . import reaper
from .adopt import JobAdoption, adopt_path, job_name
from .manager import SlurmManager
from .queue import SlurmQueue, controller_away, walltime_seconds
from .queue import slurm as _slurm

if TYPE_CHECKING:
    from ...wire.messages import Hello

log = logging.getLogger("taskflow.providers.slurm")     # (the package's, as its modules')


class SlurmProvider(Provider):
    """Nodes from Slurm: ``mode='batch'`` (one allocation) or ``'pilot'`` (many small jobs)."""

    name = "slurm"
    named_by_config = False         # adopted through the earlier run's jobs (.adopt)
    reap_on_master_death = True     # scancel our jobs if the master dies (.reaper)
    owns_jobs = True                # scancel the run's jobs at stop

    def __init__(self, mode: str = "batch", nodes: int = 1, *, cpus: int | None = None,
                 partition: str | None = None, time_limit: str | None = None,
                 account: str | None = None, qos: str | None = None,
                 memory: str | None = None, sbatch_lines: list[str] | None = None,
                 worker_init: list[str] | None = None, max_queued: int = 4,
                 idle_timeout: float | None = None, python: str = PYTHON,
                 host: str = "127.0.0.1", work_dir: str | None = None,
                 memory_gb: float = 2.0, poll: float = 2.0, poll_slow: float = 30.0,
                 controller_wait: float = 300.0, drain_margin: float = 30.0) -> None:
        if mode not in ("batch", "pilot"):
            raise ValueError(f"slurm mode {mode!r}: use batch or pilot")
        if nodes < 1 or max_queued < 1:
            raise ValueError("nodes and max_queued must be >= 1")
        self.mode = mode
        self.target = nodes
        self.cpus = cpus
        self.partition, self.time_limit, self.account, self.qos = partition, time_limit, \
            account, qos
        self.memory = memory
        self.sbatch_lines = list(sbatch_lines or [])
        self.worker_init = list(worker_init or [])
        self.max_queued = max_queued
        self.idle_timeout = idle_timeout
        self.python = python
        self.host = host
        self.work_dir = work_dir
        self.memory_gb = memory_gb
        self.poll = poll                    # s between looks while a decision waits on them
        self.poll_slow = poll_slow          # s between looks once every job runs
        self.controller_wait = controller_wait   # s without an answer before giving up
        self.drain_margin = drain_margin    # no new task this close to the job's end
        self.sink: NodeSink | None = None      # the running runtime (attach)
        self.server: DialbackServer | None = None
        self.queue: SlurmQueue | None = None   # what Slurm says about our jobs (start)
        self.handles: dict[str, list[NodeHandle]] = {}     # job id -> joined handles
        self.submitted: list[tuple[float, str]] = []   # (time, job id)
        self.unconfirmed: dict[str, tuple[float, int]] = {}   # token -> (time, looks since)
        self.manager = SlurmManager(self)      # the thread that looks, decides, explains
        self.auto: dict[str, Any] | None = None   # --slurm auto's numbers, when it chose
        self._joined: queue.Queue[NodeHandle] = queue.Queue()
        self.lock = threading.Lock()
        self.stopping = False
        self._seq = 0
        self._tokens = 0
        self._reaper: int | None = None
        self.adoption: JobAdoption | None = None    # a resumed run (.adopt)

    @property
    def jobs(self) -> dict[str, str]:
        """job id -> its last Slurm state."""
        return {j: job.state for j, job in (self.queue.jobs if self.queue else {}).items()}

    def chose(self, line: str, numbers: dict[str, Any]) -> None:
        """``--slurm auto`` chose this provider's mode: print why, keep it for the journal."""
        self.auto = numbers
        log.warning("%s", line)
        self.manager.decisions.append(line)

    @property
    def decisions(self) -> list[str]:
        """Every line the manager explained a decision in, in order."""
        return self.manager.decisions

    @property
    def idle_retired(self) -> list[str]:
        """Pilot jobs that left for lack of work (not replaced until work waits)."""
        return self.manager.idle_retired

    @property
    def max_pending_seen(self) -> int:
        return self.manager.max_pending_seen

    # -- start ----------------------------------------------------------------
    def start(self, config: Hello, timeout: float = 60.0, *,
              adoptable: bool = False) -> list[NodeHandle]:
        self._config = config.copy()
        self.dir = self.work_dir or os.path.join(config.get("data_dir") or tempfile.mkdtemp(),
                                                 "..", "slurm")
        self.dir = os.path.abspath(self.dir)
        private_dir(self.dir)
        run_id = config.get("run_id", "run")
        self.job_name = job_name(run_id)
        # an adoptable run: its agents outlive a lost master and look for a resumed one
        # in this file (.adopt); its reaper leaves its running jobs to them
        if adoptable:
            self._config["adopt_file"] = adopt_path(self.dir, run_id)
        self.queue = SlurmQueue(self.job_name, fast=self.poll, slow=self.poll_slow,
                                controller_wait=self.controller_wait)
        self.server = DialbackServer(self._hello, self._on_node, host=self.host,
                                     memory_gb=self.memory_gb, provider=self,
                                     ready_timeout=timeout)
        self.secret_file = write_secret(os.path.join(self.dir, "secret"), self.server.secret)
        names = [self.job_name]
        if self.adopt is not None:
            self.adoption = JobAdoption(self, self.adopt)
            names.append(self.adoption.name)
            self.queue.also.append(self.adoption.name)
        if self.reap_on_master_death:
            import pwd
            self._reaper = reaper.spawn(names, pwd.getpwuid(os.getuid()).pw_name,
                                        keep_running=adoptable)
        try:
            have = self._adopt_jobs() if self.adoption is not None else 0
            if self.mode == "batch":
                if have < self.target:
                    self.submit(self.target - have, "the batch allocation of the run" if not
                                have else f"{self.target - have} node(s) besides the "
                                          f"{have} adopted")
                first = max(self.target, have)    # (every adopted node: its kept tasks)
            else:
                for i in range(have, min(self.target, have + self.max_queued)):
                    self.submit(1, f"pilot {i + 1} of {self.target} at the start "
                                   f"(at most {self.max_queued} queued)")
                first = max(have, 1)
            self.manager.start()
            return self._wait_joins(first, timeout)
        except BaseException:
            self.stop()
            raise

    def _adopt_jobs(self) -> int:
        """A resumed run: the earlier run's running jobs whose agents dialled back become
        this run's (their nodes wait in ``_joined``); how many agents came."""
        r = self.adoption
        assert r is not None and self.queue is not None
        r.start()
        got = r.wait()
        for jid in r.adopted_jobs():
            self.queue.add(jid)
        r.rename()
        return got

    def attach(self, sink: NodeSink) -> None:
        """Called by the runtime once running: later joins go straight to it."""
        with self.lock:
            self.sink = sink
            early = []
            while not self._joined.empty():
                early.append(self._joined.get_nowait())
            said = list(self.decisions)
        for line in said:       # what was decided before the run had a journal to hold it
            sink.node_event("log", "slurm", ("SLURM", line))
        for h in early:
            sink.add_node(h)

    def nodes_coming(self) -> bool:
        """Pilots replace lost ones: the run does not fail while the provider runs (and has
        not given up on an unanswering controller)."""
        return self.mode == "pilot" and not self.stopping and not self.manager.gave_up

    def _hello(self, meta: dict[str, Any]) -> Hello:
        jid = str(meta.get("job_id") or "nojob")
        with self.lock:
            self._seq += 1
            seq = self._seq
        node = meta.get("slurm_node") or meta.get("hostname") or "node"
        name = f"pilot-{jid}" if self.mode == "pilot" else f"slurm-{jid}-{node}"
        if self.mode == "pilot" and jid in self.handles:
            name += f"-{seq}"
        adopt = meta.get("adopt")
        if isinstance(adopt, dict) and adopt.get("node"):
            name = str(adopt["node"])     # an earlier run's node: its name (proved, .adopt)
        slots = self.cpus or meta.get("cpus") or 1
        cfg: Hello = {**self._config, "name": name, "slots": int(slots)}
        if self.mode == "pilot" and self.idle_timeout is not None:
            cfg["idle_exit"] = self.idle_timeout     # the agent leaves by itself when idle
        return cfg

    def _on_node(self, h: NodeHandle) -> None:
        jid = str(h.job_id)
        if h.meta.get("adopt") is not None and self.adoption is not None:
            self.adoption.joined_one(jid)
        with self.lock:
            if self.stopping:
                h.close()
                return
            self.handles.setdefault(jid, []).append(h)
            submitted = next((t for t, j in self.submitted if j == jid), None)
        h.info["job_submitted"] = submitted
        self._job_times(h)
        self.manager.wake.set()     # a look soon: the job's exact start and end
        with self.lock:
            sink = self.sink
            if sink is None:
                self._joined.put(h)
                return
        sink.add_node(h)

    def _job_times(self, h: NodeHandle) -> None:
        """The job's start and end from the last look; until a look saw it run, its end is
        at most its time limit from now (the agent joined after the job started: the error
        is the agent's start-up, well inside ``drain_margin``). The scheduler respects it."""
        job = self.queue.jobs.get(str(h.job_id)) if self.queue is not None else None
        known = job is not None and job.state == "RUNNING" and job.start is not None
        if known:
            assert job is not None
            h.info["job_started"] = job.start
        if not self.time_limit:
            return
        end = job.end if known and job is not None else None
        if end is None:
            limit = walltime_seconds(self.time_limit)
            if limit is None:
                return
            end = time.time() + limit
        h.walltime_end = end
        h.drain_margin = self.drain_margin
        h.info["walltime_end"] = end

    def longest_window(self) -> float | None:
        limit = walltime_seconds(self.time_limit) if self.time_limit else None
        return None if limit is None else max(0.0, limit - self.drain_margin)

    def draining(self, h: NodeHandle) -> bool:
        end = h.walltime_end
        return end is not None and time.time() >= end - self.drain_margin

    def _wait_joins(self, n: int, timeout: float) -> list[NodeHandle]:
        out: list[NodeHandle] = []
        deadline = time.time() + timeout
        while len(out) < n:
            left = deadline - time.time()
            q = self.queue
            assert q is not None and self.server is not None       # start() made them
            if left <= 0:
                failed = (f"; agents that failed their start: "
                          f"{'; '.join(str(e) for e in self.server.failed[-3:])}"
                          if self.server.failed else "")
                away = (f"; the Slurm controller has not answered for {q.down_for():.0f} s "
                        f"({q.down_error})" if q.down_since is not None else "")
                raise NodeStartError(f"slurm {self.mode}: {len(out)} of {n} agents joined "
                                     f"within {timeout:g} s; jobs {q.states()}{away}{failed}; "
                                     f"logs in {self.dir}")
            try:
                out.append(self._joined.get(timeout=min(0.2, left)))
                continue
            except queue.Empty:
                pass
            mismatch = next((e for e in self.server.failed if isinstance(e, VersionMismatch)),
                            None)
            if mismatch is not None:     # every agent would fail so: say it now
                raise VersionMismatch(f"slurm {self.mode}: {mismatch}; logs in {self.dir}")
            if self.manager.gave_up:
                raise NodeStartError(f"slurm {self.mode}: the Slurm controller has not "
                                     f"answered for {self.controller_wait:g} s "
                                     f"({q.down_error}); {len(out)} of {n} agents joined")
            if self.mode == "batch" and q.jobs and not self.unconfirmed \
                    and all(j.ended for j in q.jobs.values()):
                raise NodeStartError(f"slurm batch job ended ({q.states()}) before its "
                                     f"agents joined: {self._log_tail()}")
        return out

    # -- sbatch ------------------------------------------------------------------
    def _script(self, nodes: int, token: str = "") -> str:
        lines = ["#!/bin/bash", f"#SBATCH --job-name={self.job_name}",
                 f"#SBATCH --nodes={nodes}", "#SBATCH --ntasks-per-node=1",
                 f"#SBATCH --output={self.dir}/%x-%j.out", f"#SBATCH --chdir={os.getcwd()}"]
        if token:           # how a job whose sbatch got no answer is found (never twice)
            lines.append(f"#SBATCH --comment={token}")
        if self.cpus:
            lines.append(f"#SBATCH --cpus-per-task={self.cpus}")
        if self.time_limit:     # SIGTERM before the walltime: the agents drain
            lines.append(f"#SBATCH --signal={'B:' if self.mode == 'pilot' else ''}"
                         f"TERM@{max(int(self.drain_margin), 1)}")
        for opt, val in (("partition", self.partition), ("time", self.time_limit),
                         ("account", self.account), ("qos", self.qos), ("mem", self.memory)):
            if val:
                lines.append(f"#SBATCH --{opt}={val}")
        lines += [ln if ln.startswith("#SBATCH") else f"#SBATCH {ln}" for ln in self.sbatch_lines]
        lines += self.worker_init
        pypath = os.pathsep.join(p for p in sys.path if p)
        lines += [f"export {SECRET_FILE_ENV}={shlex.quote(self.secret_file)}",
                  f"export PYTHONPATH={shlex.quote(pypath)}${{PYTHONPATH:+:$PYTHONPATH}}"]
        assert self.server is not None      # start() made it
        agent = (f"{shlex.quote(self.python)} -m taskflow.node --connect "
                 f"{self.server.address}")
        if self.mode == "batch":
            lines.append(f"srun --kill-on-bad-exit=0 {agent}")
        else:   # ignored (not trapped) survives exec; the agent's handler replaces it
            lines += ["trap '' TERM", f"exec {agent}"]
        return "\n".join(lines) + "\n"

    def submit(self, nodes: int, why: str) -> str | None:
        """sbatch one job; its id, or None when the controller did not answer (the job
        may exist: it is looked for by its token before anything is submitted again).
        A refusal (a wrong partition, ...) raises :class:`SlurmError`."""
        with self.lock:
            self._tokens += 1
            token = f"{self.job_name}-{self._tokens}-{secrets.token_hex(3)}"
        path = os.path.join(self.dir, f"{self.mode}-{self._tokens}.sh")
        with open(path, "w") as f:
            f.write(self._script(nodes, token))
        assert self.queue is not None
        try:
            out = self.queue._call(["sbatch", "--parsable", path])
        except SlurmError as exc:
            if not controller_away(exc):
                raise
            with self.lock:
                self.unconfirmed[token] = (time.time(), 0)
            self.manager.say(f"sbatch got no answer ({exc}): {why} may have been submitted; "
                      f"nothing more is submitted until the controller answers and the queue "
                      f"shows whether it was (token {token})", warn=True)
            return None
        jid = out.strip().split(";")[0]
        self.submitted_job(jid, token)
        self.manager.say(f"submitted job {jid}: {why}")
        return jid

    def submitted_job(self, jid: str, token: str) -> None:
        """Job ``jid`` (sbatch token ``token``) is the run's."""
        assert self.queue is not None
        with self.lock:
            self.queue.add(jid, token)
            self.submitted.append((time.time(), jid))
            self.unconfirmed.pop(token, None)

    def _log_tail(self) -> str:
        tails = []
        for jid in self.jobs:
            p = os.path.join(self.dir, f"{self.job_name}-{jid}.out")
            try:
                with open(p) as f:
                    tails.append(f"{p}: {f.read()[-800:].strip()}")
            except OSError:
                pass
        return "\n".join(tails) or "(no job output)"

    def explain_end(self, h: NodeHandle) -> None:
        """A node of job ``h.job_id`` is gone: say, once Slurm knows, how the job ended.

        The manager's next looks (every ``poll`` seconds while it waits) tell; the state
        (TIMEOUT, CANCELLED, NODE_FAIL, COMPLETED, ...) is logged, set on the handle and
        sent on the event bus as ``node_state``.
        """
        self.manager.explain(h)

    def look(self) -> bool:
        """One look at every job of the run (the manager's); True when Slurm answered."""
        assert self.queue is not None
        return self.queue.look()

    # -- stop --------------------------------------------------------------------
    def _scancel(self, jids: list[str]) -> None:
        if jids:
            try:
                _slurm(["scancel", *jids], 15)
            except SlurmError as exc:
                log.warning(f"slurm: {exc}")

    def kill(self, handle: NodeHandle) -> None:
        """scancel the job of a node (tests of node loss)."""
        self._scancel([str(handle.job_id)])

    def stop(self, timeout: float = 5.0) -> None:
        with self.lock:
            self.stopping = True
            handles = [h for hs in self.handles.values() for h in hs]
            jids = list(self.jobs) + list(self.unconfirmed)
        self.manager.join(2.0)
        if self.server is not None:
            self.server.close()
        for h in handles:         # EOF to the agents: they exit, the jobs end
            h.close()
        if jids and self.owns_jobs:
            try:
                _slurm(["scancel", "-n", self.job_name], 15)
            except SlurmError as exc:
                log.warning(f"slurm: {exc}")
        if self.adoption is not None:       # the earlier run's jobs it adopted are its own
            self.adoption.withdraw()
            if self.owns_jobs:
                self._scancel(self.adoption.adopted_jobs())
        reaper.disarm(self._reaper)
        self._reaper = None
        try:
            os.unlink(self.secret_file)
        except (OSError, AttributeError):
            pass
