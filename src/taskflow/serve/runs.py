"""The service's queue and run processes.

Each run is ``python -m taskflow run --run-dir <run>/journal ... SCRIPT ARGS``
started in ``<workdir>/runs/<id>/`` in a process group of its own, its
console (stdout and stderr) in ``<run>/console.log``. At most ``max_runs`` run
at once; the others wait, higher priority first, then older. One thread (the
*launcher*) decides what starts, watches and stops the runs; a run that cannot
start (whatever the reason) is ``failed`` with that reason and the next one
starts, and no error ends the launcher. The processes themselves are forked by
another thread, the *spawner*, which does nothing else and lives as long as the
service process: they are told to die with it (PR_SET_PDEATHSIG follows the
thread that forked), so a service killed with SIGKILL leaves no run behind, and
a service started again marks the runs it had running ``interrupted``
(:meth:`RunManager.recover`) and fails the queued runs that an older service
accepted but cannot start (:mod:`.inputs`).

Cancel: a queued run is dropped from the queue at once; a running one gets
SIGINT (``taskflow run`` stops without waiting for running tasks), SIGTERM to
its whole group after ``CANCEL_GRACE`` seconds, SIGKILL after twice that.
"""
from __future__ import annotations

import ctypes
import logging
import os
import queue
import signal
import subprocess
import threading
import time
from collections import deque
from typing import Any

from ..context import PYTHON
from . import store as S
from .inputs import stored_problem

log = logging.getLogger("taskflow.serve")

CANCEL_GRACE = 10.0        # s from SIGINT to SIGTERM (and again to SIGKILL)
TICK = 0.2                 # s between looks at the run processes
CONSOLE_TAIL = 20          # console lines a failed run's answer quotes


class QueueFull(Exception):
    """More runs are waiting than ``--max-queued`` allows."""


class NotCancellable(Exception):
    """The run has ended already."""


def _die_with_spawner() -> None:  # pragma: no cover - runs in the child
    try:
        ctypes.CDLL("libc.so.6", use_errno=True).prctl(1, signal.SIGTERM)   # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


CONSOLE_READ = 1 << 20     # bytes of console.log one answer (or one stream event batch) reads


def console_read(run_dir: str, offset: int, limit: int = CONSOLE_READ
                 ) -> tuple[list[str], int, int]:
    """Whole lines of a run's console.log from byte ``offset``, at most ``limit`` bytes:
    ``(lines, the offset after them, the file's size)``. A line longer than ``limit``
    comes in pieces; a last line not ended yet waits for its end."""
    path = os.path.join(run_dir, "console.log")
    try:
        with open(path, "rb") as f:
            size = os.fstat(f.fileno()).st_size
            f.seek(offset)
            data = f.read(limit)
    except OSError:
        return [], offset, 0
    end = data.rfind(b"\n")
    if end < 0:
        if len(data) < limit:           # a line still being written
            return [], offset, size
        end = len(data) - 1             # (a line longer than a read: a piece of it)
    chunk = data[:end + 1]
    return chunk.decode("utf-8", "replace").splitlines(), offset + len(chunk), size


def console_tail(run_dir: str, n: int = CONSOLE_TAIL) -> list[str]:
    """The last ``n`` lines of a run's console.log (read from the end, bounded)."""
    path = os.path.join(run_dir, "console.log")
    try:
        with open(path, "rb") as f:
            f.seek(0, os.SEEK_END)
            size = f.tell()
            f.seek(max(0, size - 64 * 1024))
            data = f.read()
    except OSError:
        return []
    lines: deque[str] = deque(data.decode("utf-8", "replace").splitlines(), maxlen=n)
    return list(lines)


class Spawner:
    """The thread that forks the run processes, for as long as the service process lives.

    PR_SET_PDEATHSIG fires when the *thread* that forked a process ends: this
    one never does (it catches everything and goes on), so the runs die with the
    service process and nothing else.
    """

    def __init__(self) -> None:
        self.requests: queue.SimpleQueue[tuple[list[str], dict[str, Any], list[Any],
                                               threading.Event]] = queue.SimpleQueue()
        threading.Thread(target=self._loop, name="taskflow-serve-spawner", daemon=True).start()

    def popen(self, argv: list[str], **kw: Any) -> subprocess.Popen[bytes]:
        """``subprocess.Popen(argv, **kw)`` in the spawner thread (its exceptions raised here)."""
        box: list[Any] = []
        done = threading.Event()
        self.requests.put((argv, kw, box, done))
        done.wait()
        (got,) = box
        if isinstance(got, BaseException):
            raise got
        return got  # type: ignore[no-any-return]

    def _loop(self) -> None:
        while True:
            argv, kw, box, done = self.requests.get()
            try:
                box.append(subprocess.Popen(argv, **kw))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller
                box.append(exc)
            done.set()


class RunManager:
    """The queue and the running processes (one launcher thread, one spawner thread)."""

    def __init__(self, workdir: str, store: S.Store, max_runs: int, max_queued: int) -> None:
        self.workdir = workdir
        self.store = store
        self.max_runs = max_runs
        self.max_queued = max_queued
        self.procs: dict[str, subprocess.Popen[bytes]] = {}
        self.cancels: dict[str, float] = {}      # run id -> when SIGINT was sent
        self.cond = threading.Condition()
        self.stopping = False
        self.thread = threading.Thread(target=self._loop, name="taskflow-serve-runs",
                                       daemon=True)
        self.spawner = Spawner()
        self.unstartable: set[str] = set()       # could not even be marked failed

    # -- start-up -------------------------------------------------------------------
    def recover(self) -> list[str]:
        """Runs this workdir's earlier service had running: ``interrupted`` now."""
        out = []
        for r in self.store.runs(S.RUNNING, limit=10**9)[0]:
            pid = r.get("pid")
            if pid and _is_our_run(pid, r["dir"]):   # PDEATHSIG did not reach it: stop it
                try:
                    os.killpg(pid, signal.SIGKILL)
                except OSError:
                    pass
            self.store.set_state(r["id"], S.INTERRUPTED, (S.RUNNING,), t_end=time.time(),
                                 reason="the service stopped while the run was going on")
            out.append(r["id"])
        for r in self.store.queued():
            why = stored_problem(r["script"], r["args"], r["options"])
            if why is not None:
                self._fail(r["id"], f"cannot start: {why}; submit it again with that fixed")
        return out

    def start(self) -> None:
        self.thread.start()

    # -- requests ------------------------------------------------------------------
    def submit(self, rid: str, priority: int, script: str, args: list[str],
               options: dict[str, Any], run_dir: str) -> dict[str, Any]:
        with self.cond:
            if self.store.count(S.QUEUED) >= self.max_queued:
                raise QueueFull(f"{self.max_queued} runs are already waiting (--max-queued)")
            row = self.store.add(rid, priority, script, args, options, run_dir)
            self.cond.notify_all()
        return row

    def cancel(self, rid: str) -> dict[str, Any]:
        with self.cond:
            row = self.store.get(rid)
            assert row is not None
            if row["state"] in S.ENDED:
                raise NotCancellable(f"run {rid} has ended already ({row['state']})")
            if self.store.set_state(rid, S.CANCELLED, (S.QUEUED,), t_end=time.time(),
                                    reason="cancelled before it started"):
                pass
            elif rid not in self.cancels:
                self.cancels[rid] = 0.0          # the launcher sends the signal
            self.cond.notify_all()
        got = self.store.get(rid)
        assert got is not None
        return got

    def position(self, rid: str) -> int | None:
        """1 for the next run to start, None when not queued."""
        for i, r in enumerate(self.store.queued(), 1):
            if r["id"] == rid:
                return i
        return None

    # -- the launcher thread ----------------------------------------------------------
    def _loop(self) -> None:
        while True:
            with self.cond:
                if self.stopping:
                    return
                try:
                    self._round()
                except Exception:       # noqa: BLE001 - logged; the launcher goes on
                    log.exception("the run launcher's round failed; it goes on")
                self.cond.wait(TICK)

    def _round(self) -> None:
        self._reap()
        self._signal_cancels()
        while len(self.procs) < self.max_runs:
            queued = [r for r in self.store.queued() if r["id"] not in self.unstartable]
            if not queued:
                break
            first, *_ = queued
            try:
                self._launch(first)
            except Exception as exc:  # noqa: BLE001 - this run cannot start; the next one can
                self._fail(first["id"], f"could not start: {type(exc).__name__}: {exc}")

    def _fail(self, rid: str, reason: str) -> None:
        """A queued run that cannot start: failed with the reason (never first in the queue
        again, even when the record cannot be written)."""
        log.warning("run %s %s", rid, reason)
        try:
            now = time.time()
            if self.store.set_state(rid, S.FAILED, (S.QUEUED,), t_start=now, t_end=now,
                                    reason=reason):
                return
        except Exception:  # noqa: BLE001
            log.exception("could not record run %s as failed", rid)
        self.unstartable.add(rid)

    def _launch(self, r: dict[str, Any]) -> None:
        rid, o = r["id"], r["options"]
        why = stored_problem(r["script"], r["args"], o)
        if why is not None:
            raise ValueError(why)
        argv = [PYTHON, "-m", "taskflow", "run", "--no-progress",
                "--run-dir", os.path.join(r["dir"], "journal")]
        for key in ("workers", "nodes", "retries"):
            if o.get(key) is not None:
                argv += [f"--{key}", str(o[key])]
        if o.get("cluster"):
            argv += ["--cluster", o["cluster"]]
        argv += [r["script"], *r["args"]]
        with open(os.path.join(r["dir"], "console.log"), "ab") as console:
            proc = self.spawner.popen(argv, cwd=r["dir"], stdin=subprocess.DEVNULL,
                                      stdout=console, stderr=subprocess.STDOUT,
                                      start_new_session=True, preexec_fn=_die_with_spawner,
                                      env=dict(os.environ, TASKFLOW_SERVICE_RUN=rid))
        self.procs[rid] = proc
        self.store.set_state(rid, S.RUNNING, (S.QUEUED,), t_start=time.time(), pid=proc.pid)
        log.info("run %s started (pid %d)", rid, proc.pid)

    def _reap(self) -> None:
        for rid, proc in list(self.procs.items()):
            code = proc.poll()
            if code is None:
                continue
            del self.procs[rid]
            cancelled = self.cancels.pop(rid, None) is not None
            state = S.CANCELLED if cancelled else S.FINISHED if code == 0 else S.FAILED
            reason = "cancelled" if cancelled else None if code == 0 else \
                f"taskflow run exited with {code}"
            self.store.set_state(rid, state, (S.RUNNING,), t_end=time.time(), exit_code=code,
                                 reason=reason)
            log.info("run %s %s (exit %s)", rid, state, code)

    def _signal_cancels(self) -> None:
        now = time.time()
        for rid, t in list(self.cancels.items()):
            proc = self.procs.get(rid)
            if proc is None:
                continue
            if t == 0.0:
                _signal(proc.pid, signal.SIGINT, group=False)
                self.cancels[rid] = now
            elif now - t > 2 * CANCEL_GRACE:
                _signal(proc.pid, signal.SIGKILL, group=True)
            elif now - t > CANCEL_GRACE:
                _signal(proc.pid, signal.SIGTERM, group=True)

    # -- shutdown -------------------------------------------------------------------
    def stop(self, grace: float = CANCEL_GRACE) -> None:
        """Interrupt the running runs (they are ``interrupted``); queued ones stay queued."""
        with self.cond:
            self.stopping = True
            self.cond.notify_all()
        if self.thread.is_alive():
            self.thread.join(5)
        procs = dict(self.procs)
        for proc in procs.values():
            _signal(proc.pid, signal.SIGINT, group=False)
        deadline = time.time() + grace
        for rid, proc in procs.items():
            try:
                proc.wait(max(0.1, deadline - time.time()))
            except subprocess.TimeoutExpired:
                _signal(proc.pid, signal.SIGKILL, group=True)
                proc.wait(5)
            cancelled = rid in self.cancels
            self.store.set_state(rid, S.CANCELLED if cancelled else S.INTERRUPTED, (S.RUNNING,),
                                 t_end=time.time(), exit_code=proc.returncode,
                                 reason="cancelled" if cancelled else "the service was stopped")
        self.procs.clear()


def _signal(pid: int, sig: int, group: bool) -> None:
    try:
        if group:
            os.killpg(pid, sig)
        else:
            os.kill(pid, sig)
    except OSError:
        pass


def _is_our_run(pid: int, run_dir: str) -> bool:
    """Whether ``pid`` is still the ``taskflow run`` of ``run_dir`` (not a reused pid)."""
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            cmd = f.read().split(b"\0")
    except OSError:
        return False
    return os.path.join(run_dir, "journal").encode() in cmd
