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

Every job is ``scancel``led at ``stop``, and by :mod:`slurm_reaper` if the
master dies first. Agents connect back over TCP to
127.0.0.1 (:mod:`taskflow.providers.dialback`), proving the per-run secret held
in a 0600 file; each node's ``job_id`` is its Slurm job id.
"""
from __future__ import annotations

import logging
import os
import queue
import shlex
import subprocess
import sys
import tempfile
import threading
import time
from typing import TYPE_CHECKING, Any

from ..context import private_dir
from ..errors import NodeStartError, SlurmError, VersionMismatch
from . import slurm_reaper
from .base import NodeSink, Provider
from .dialback import SECRET_FILE_ENV, DialbackServer, write_secret
from .handle import NodeHandle

if TYPE_CHECKING:
    from ..wire.messages import Hello

log = logging.getLogger(__name__)

ENDED = {"COMPLETED", "CANCELLED", "FAILED", "TIMEOUT", "NODE_FAIL", "PREEMPTED",
         "BOOT_FAIL", "DEADLINE", "OUT_OF_MEMORY", "SPECIAL_EXIT", "REVOKED"}


def _slurm(cmd: list[str], timeout: float = 30.0) -> str:
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except FileNotFoundError:
        raise SlurmError(f"{cmd[0]} not found: is Slurm installed here?") from None
    except subprocess.TimeoutExpired:
        raise SlurmError(f"{' '.join(cmd)} did not answer within {timeout:g} s") from None
    if p.returncode != 0:
        raise SlurmError(f"{cmd[0]} failed (exit {p.returncode}): "
                         f"{(p.stderr or p.stdout).strip()}")
    return p.stdout


class SlurmProvider(Provider):
    """Nodes from Slurm: ``mode='batch'`` (one allocation) or ``'pilot'`` (many small jobs)."""

    name = "slurm"
    reap_on_master_death = True     # scancel our jobs if the master dies (slurm_reaper)

    def __init__(self, mode: str = "batch", nodes: int = 1, *, cpus: int | None = None,
                 partition: str | None = None, time_limit: str | None = None,
                 account: str | None = None, qos: str | None = None,
                 memory: str | None = None, sbatch_lines: list[str] | None = None,
                 worker_init: list[str] | None = None, max_queued: int = 4,
                 idle_timeout: float | None = None, python: str = sys.executable,
                 host: str = "127.0.0.1", work_dir: str | None = None,
                 memory_gb: float = 2.0, poll: float = 0.5, drain_margin: float = 30.0) -> None:
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
        self.poll = poll
        self.drain_margin = drain_margin    # no new task this close to the job's end
        self.sink: NodeSink | None = None      # the running runtime (attach)
        self.server: DialbackServer | None = None
        self.jobs: dict[str, str] = {}         # job id -> last Slurm state seen
        self.handles: dict[str, list[NodeHandle]] = {}     # job id -> joined handles
        self.submitted: list[tuple[float, str]] = []   # (time, job id)
        self.max_pending_seen = 0
        self.idle_retired: list[str] = []
        self._joined: queue.Queue[NodeHandle] = queue.Queue()
        self._lock = threading.Lock()
        self._stopping = False
        self._monitor: threading.Thread | None = None
        self._seq = 0
        self._reaper: int | None = None

    # -- start ----------------------------------------------------------------
    def start(self, config: Hello, timeout: float = 60.0) -> list[NodeHandle]:
        self._config = config
        self.dir = self.work_dir or os.path.join(config.get("data_dir") or tempfile.mkdtemp(),
                                                 "..", "slurm")
        self.dir = os.path.abspath(self.dir)
        private_dir(self.dir)
        self.job_name = f"tf-{config.get('run_id', 'run')}"
        self.server = DialbackServer(self._hello, self._on_node, host=self.host,
                                     memory_gb=self.memory_gb, provider=self,
                                     ready_timeout=timeout)
        self.secret_file = write_secret(os.path.join(self.dir, "secret"), self.server.secret)
        if self.reap_on_master_death:
            import pwd
            self._reaper = slurm_reaper.spawn(self.job_name, pwd.getpwuid(os.getuid()).pw_name)
        try:
            if self.mode == "batch":
                self._submit(self.target)
                return self._wait_joins(self.target, timeout)
            for _ in range(min(self.target, self.max_queued)):
                self._submit(1)
            first = self._wait_joins(1, timeout)
            self._monitor = threading.Thread(target=self._pilot_loop, daemon=True,
                                             name="taskflow-slurm-pilots")
            self._monitor.start()
            return first
        except BaseException:
            self.stop()
            raise

    def attach(self, sink: NodeSink) -> None:
        """Called by the runtime once running: later joins go straight to it."""
        with self._lock:
            self.sink = sink
            early = []
            while not self._joined.empty():
                early.append(self._joined.get_nowait())
        for h in early:
            sink.add_node(h)

    def nodes_coming(self) -> bool:
        """Pilots replace lost ones: the run does not fail while the provider runs."""
        return self.mode == "pilot" and not self._stopping

    def _hello(self, meta: dict[str, Any]) -> Hello:
        jid = str(meta.get("job_id") or "nojob")
        with self._lock:
            self._seq += 1
            seq = self._seq
        node = meta.get("slurm_node") or meta.get("hostname") or "node"
        name = f"pilot-{jid}" if self.mode == "pilot" else f"slurm-{jid}-{node}"
        if self.mode == "pilot" and jid in self.handles:
            name += f"-{seq}"
        slots = self.cpus or meta.get("cpus") or 1
        cfg: Hello = {**self._config, "name": name, "slots": int(slots)}
        if self.mode == "pilot" and self.idle_timeout is not None:
            cfg["idle_exit"] = self.idle_timeout     # the agent leaves by itself when idle
        return cfg

    def _on_node(self, h: NodeHandle) -> None:
        jid = str(h.job_id)
        with self._lock:
            if self._stopping:
                h.close()
                return
            self.handles.setdefault(jid, []).append(h)
            submitted = next((t for t, j in self.submitted if j == jid), None)
        h.info["job_submitted"] = submitted
        self._job_times(h)
        with self._lock:
            sink = self.sink
            if sink is None:
                self._joined.put(h)
                return
        sink.add_node(h)

    def _job_times(self, h: NodeHandle) -> None:
        """The job's start and end time from Slurm; the scheduler respects the end."""
        try:
            out = _slurm(["squeue", "-h", "-j", str(h.job_id), "-o", "%S|%e"], 15).strip()
            start, end = out.split("|")
            h.info["job_started"] = time.mktime(time.strptime(start, "%Y-%m-%dT%H:%M:%S"))
            if not self.time_limit:
                return
            h.walltime_end = time.mktime(time.strptime(end, "%Y-%m-%dT%H:%M:%S"))
        except (SlurmError, ValueError):
            return
        h.drain_margin = self.drain_margin
        h.info["walltime_end"] = h.walltime_end

    def draining(self, h: NodeHandle) -> bool:
        end = h.walltime_end
        return end is not None and time.time() >= end - self.drain_margin

    def _wait_joins(self, n: int, timeout: float) -> list[NodeHandle]:
        out: list[NodeHandle] = []
        deadline = time.time() + timeout
        next_check = time.time() + 1.0
        while len(out) < n:
            left = deadline - time.time()
            if left <= 0:
                failed = (f"; agents that failed their start: "
                          f"{'; '.join(str(e) for e in self.server.failed[-3:])}"
                          if self.server is not None and self.server.failed else "")
                raise NodeStartError(f"slurm {self.mode}: {len(out)} of {n} agents joined "
                                     f"within {timeout:g} s; jobs {self._states()}{failed}; "
                                     f"logs in {self.dir}")
            try:
                out.append(self._joined.get(timeout=min(0.2, left)))
                continue
            except queue.Empty:
                pass
            mismatch = next((e for e in self.server.failed if isinstance(e, VersionMismatch)),
                            None) if self.server is not None else None
            if mismatch is not None:     # every agent would fail so: say it now
                raise VersionMismatch(f"slurm {self.mode}: {mismatch}; logs in {self.dir}")
            if time.time() >= next_check:
                next_check = time.time() + 1.0
                self._refresh()
                if self.mode == "batch" and all(s in ENDED for s in self.jobs.values()):
                    raise NodeStartError(f"slurm batch job ended ({self._states()}) before its "
                                         f"agents joined: {self._log_tail()}")
        return out

    # -- sbatch ------------------------------------------------------------------
    def _script(self, nodes: int) -> str:
        lines = ["#!/bin/bash", f"#SBATCH --job-name={self.job_name}",
                 f"#SBATCH --nodes={nodes}", "#SBATCH --ntasks-per-node=1",
                 f"#SBATCH --output={self.dir}/%x-%j.out", f"#SBATCH --chdir={os.getcwd()}"]
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

    def _submit(self, nodes: int) -> str:
        path = os.path.join(self.dir, f"{self.mode}-{len(self.submitted) + 1}.sh")
        with open(path, "w") as f:
            f.write(self._script(nodes))
        out = _slurm(["sbatch", "--parsable", path])
        jid = out.strip().split(";")[0]
        with self._lock:
            self.jobs[jid] = "PENDING"
            self.submitted.append((time.time(), jid))
        return jid

    # -- pilots ------------------------------------------------------------------
    def _refresh(self) -> dict[str, str]:
        try:
            out = _slurm(["squeue", "-h", "-t", "all", "-n", self.job_name, "-o", "%i|%T"], 15)
        except SlurmError as exc:
            log.warning(f"slurm: {exc}")
            return self.jobs
        seen = dict(ln.split("|", 1) for ln in out.split() if "|" in ln)
        with self._lock:
            for jid in self.jobs:
                # a job squeue no longer lists has ended long ago
                self.jobs[jid] = seen.get(jid, "COMPLETED" if self.jobs[jid] != "PENDING"
                                          else self.jobs[jid])
            pending = sum(1 for s in self.jobs.values() if s == "PENDING")
            self.max_pending_seen = max(self.max_pending_seen, pending)
        return self.jobs

    def _states(self) -> str:
        return ", ".join(f"{j} {s}" for j, s in self.jobs.items()) or "none submitted"

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

    def _pilot_loop(self) -> None:
        while not self._stopping:
            time.sleep(self.poll)
            try:
                self._pilot_round()
            except Exception as exc:  # noqa: BLE001 - keep managing pilots
                log.warning(f"slurm pilots: {exc}")

    def _pilot_round(self) -> None:
        jobs = self._refresh()
        if self._stopping:
            return
        sink = self.sink
        for jid, hs in list(self.handles.items()):
            if jid not in self.idle_retired and any(
                    (h.leaving or "").startswith("idle") for h in hs):
                self.idle_retired.append(jid)        # it left by itself for lack of work
        live = [j for j, s in jobs.items() if s not in ENDED and not (
            self.handles.get(j) and all(self.draining(h) for h in self.handles[j]))]
        pending = sum(1 for j in live if jobs[j] == "PENDING")
        if self.idle_retired and not (sink is not None and sink.work_waiting()):
            return          # pilots left for lack of work: replace them when work is ready
        while len(live) < self.target and pending < self.max_queued and not self._stopping:
            try:
                live.append(self._submit(1))
            except SlurmError as exc:
                log.warning(f"slurm: cannot submit a pilot: {exc}")
                return
            pending += 1
        with self._lock:
            self.max_pending_seen = max(self.max_pending_seen, pending)

    def explain_end(self, h: NodeHandle) -> None:
        """A node of job ``h.job_id`` is gone: say, once Slurm knows, how the job ended.

        Runs in a thread (the caller is the runtime loop); the state
        (TIMEOUT, CANCELLED, NODE_FAIL, COMPLETED, ...) is printed, set on the
        handle and sent on the event bus as ``node_state``.
        """
        def look() -> None:
            jid = str(h.job_id)
            state = "UNKNOWN"
            deadline = time.time() + 20.0
            while time.time() < deadline and not self._stopping:
                try:
                    out = _slurm(["squeue", "-h", "-t", "all", "-j", jid, "-o", "%T|%r"], 10)
                except SlurmError:
                    break
                job_state, _, reason = out.strip().partition("|")
                if job_state:
                    state = job_state if reason in ("None", "") else f"{job_state} ({reason})"
                    if job_state in ENDED:
                        break
                time.sleep(0.5)
            with self._lock:
                self.jobs[jid] = state.split()[0]
            h.slurm_state = state
            log.warning("node %s: slurm job %s ended in state %s", h.name, jid, state)
            sink = self.sink
            if sink is not None:
                sink.node_event("node_state", h.name, {"job_id": jid, "state": state})

        threading.Thread(target=look, daemon=True, name=f"taskflow-slurm-{h.job_id}").start()

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
        with self._lock:
            self._stopping = True
            handles = [h for hs in self.handles.values() for h in hs]
            jids = list(self.jobs)
        if self._monitor is not None:
            self._monitor.join(max(2.0, self.poll * 4))
        if self.server is not None:
            self.server.close()
        for h in handles:         # EOF to the agents: they exit, the jobs end
            h.close()
        if jids:
            try:
                _slurm(["scancel", "-n", self.job_name], 15)
            except SlurmError as exc:
                log.warning(f"slurm: {exc}")
        slurm_reaper.disarm(self._reaper)
        self._reaper = None
        try:
            os.unlink(self.secret_file)
        except (OSError, AttributeError):
            pass
