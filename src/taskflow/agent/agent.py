"""The node agent: one per host, the same whatever transport reached it.

It speaks the framed protocol (:mod:`taskflow.nodes.protocol`) with the
master over a pair of file descriptors, forks one executor per slot, keeps a
priority queue of the work it was sent, holds data that stays on the node,
enforces time-outs, and reports results, logs and resource samples. It is
single-threaded (a ``selectors`` loop), so forking a fresh executor is safe
at any time.

Placing work on executors is :mod:`taskflow.nodes.placement`; tasks sent
before their inputs exist are :mod:`taskflow.nodes.chained` (both mixins of
:class:`Agent`, sharing its state).
"""
from __future__ import annotations

import heapq
import os
import selectors
import signal
import socket
import sys
import time
from typing import TYPE_CHECKING, Any

from ..wire import protocol as P
from .chained import Chaining
from .executor import executor_main
from ..context import total_memory_gb
from .placement import Placement

if TYPE_CHECKING:
    from .sampler import Sampler

INLINE_MAX = 256 * 1024   # larger results stay on the node until fetched


class _Exec:
    __slots__ = ("pid", "wfd", "rfd", "reader", "queue", "digests", "reserved", "started",
                 "out", "wreg", "batch", "bdata")

    def __init__(self, pid: int, wfd: int, rfd: int) -> None:
        self.pid = pid
        self.wfd = wfd
        self.rfd = rfd
        self.reader = P.FrameReader(rfd)
        self.queue: list = []       # task messages sent, in order, not yet answered
        self.digests: set = set()
        self.reserved = 0           # extra slots held by a multi-unit task running here
        self.started = 0.0
        self.out = bytearray()      # frames the executor's pipe has not taken yet
        self.wreg = False
        self.batch: list = []       # tasks for it this round: one TASKS frame, one write
        self.bdata: dict = {}       # the stored values those tasks read, sent with them


class Agent(Placement, Chaining):
    def __init__(self, rfd: int, wfd: int) -> None:
        self.rfd = rfd
        self.wfd = wfd
        self.reader = P.FrameReader(rfd)
        self.sel = selectors.DefaultSelector()
        self.out = bytearray()
        self.funcs: dict[bytes, bytes] = {}
        self.store: dict[int, bytes] = {}
        self.queue: list = []       # heap of (-priority, seq, msg)
        self.seq = 0
        self.execs: list[_Exec] = []
        self.by_fd: dict[int, _Exec] = {}
        self.results: list = []
        self.logs: list = []
        self.mean: dict[bytes, float] = {}
        self.deadlines: dict[int, tuple[float, _Exec]] = {}
        self.slots = 1
        self.sampler: Sampler | None = None
        self._sample_interval = 2.0
        self._sampler_at = 0.0
        self.running = True
        self.name = socket.gethostname()
        self.cancelled: set = set()
        self.blocked: dict = {}       # task id -> [missing inputs, task msg]
        self.producing: dict = {}     # data id -> executor whose queue makes it
        self.waiting_on: dict = {}    # data id -> [task ids] (chained tasks)
        self.leaving: str | None = None   # why the agent drains (SIGTERM, idle): no new work
        self.idle_exit: float | None = None
        self.last_busy = time.time()
        self._term_r, self._term_w = os.pipe()
        self._dirty: list = []      # executors with a batch to send this round
        self.lead_at: float | None = None   # when to place a long task's successor early

    # -- set-up ----------------------------------------------------------
    def handshake(self) -> None:
        hello = P.read_frame_blocking(self.rfd)
        if hello[0] != P.HELLO:
            raise P.ProtocolError("expected HELLO")
        cfg = hello[1]
        for p in reversed(cfg.get("sys_path", [])):
            if p not in sys.path:
                sys.path.insert(0, p)
        if cfg.get("cwd") and os.path.isdir(cfg["cwd"]):
            os.chdir(cfg["cwd"])
        os.environ.update(cfg.get("env", {}))
        self.name = cfg.get("name", self.name)
        self.slots = int(cfg.get("slots") or os.cpu_count() or 1)
        self.idle_exit = cfg.get("idle_exit")
        for _ in range(self.slots):
            self._spawn()
        # The sampler (psutil: ~16 ms of imports) starts after the handshake (see _sample).
        self._sample_interval = cfg.get("sample_interval", 2.0)
        self._sampler_at = time.time() + 0.1
        info = {"hostname": socket.gethostname(), "pid": os.getpid(), "slots": self.slots,
                "cpus": os.cpu_count(), "memory_gb": total_memory_gb(),
                "python": sys.version.split()[0], "version": _version()}
        P.write_all(self.wfd, P.encode((P.READY, info)))
        os.set_blocking(self.wfd, False)
        self.sel.register(self.rfd, selectors.EVENT_READ, None)
        # SIGTERM (Slurm's walltime warning, scancel, a user's kill) drains the node:
        # running tasks finish, the rest goes back to the master (see _leave).
        os.set_blocking(self._term_w, False)
        self.sel.register(self._term_r, selectors.EVENT_READ, "term")
        signal.signal(signal.SIGTERM, self._on_sigterm)

    def _spawn(self) -> _Exec:
        t_r, t_w = os.pipe()      # agent -> executor
        r_r, r_w = os.pipe()      # executor -> agent
        pid = os.fork()
        if pid == 0:  # child
            try:
                os.close(t_w)
                os.close(r_r)
                os.close(self.rfd)
                os.close(self.wfd)
                os.close(self._term_r)
                os.close(self._term_w)
                # A signal sent to the whole job step must not kill a running task: the
                # agent decides (a Python handler, so programs the task starts get the
                # default disposition back at exec).
                signal.signal(signal.SIGTERM, _ignore)
                executor_main(t_r, r_w)
            finally:
                os._exit(1)
        os.close(t_r)
        os.close(r_w)
        P.grow_pipe(t_w)
        os.set_blocking(t_w, False)     # never block on an executor: it may be writing to us
        os.set_blocking(r_r, False)     # nor wait on a read that a stale event announced
        ex = _Exec(pid, t_w, r_r)
        self.execs.append(ex)
        self.by_fd[r_r] = ex
        self.sel.register(r_r, selectors.EVENT_READ, ex)
        return ex

    # -- main loop -------------------------------------------------------
    def run(self) -> None:
        while self.running:
            timeout = self._timeout()
            for key, mask in self.sel.select(timeout):
                data = key.data
                if data == "term":
                    os.read(self._term_r, 64)
                    self._leave("SIGTERM")
                elif data is None:
                    if mask & selectors.EVENT_READ:
                        self._from_master()
                    if mask & selectors.EVENT_WRITE:
                        self._flush()
                elif type(data) is tuple:       # ("w", executor): its pipe has room again
                    if data[1] in self.execs:
                        self._flush_exec(data[1])
                elif data in self.execs:
                    # (an executor replaced earlier in this round may have left a stale
                    # event whose fd number now belongs to its successor: skip it)
                    self._from_exec(data)
            self._check_deadlines()
            if self.leaving is None:
                self._schedule()
                if self.idle_exit is not None:
                    self._check_idle()
            if self._dirty:
                self._send_exec_batches()
            self._sample()
            self._send_batches()
            if self.leaving is not None:
                if self.queue or self.blocked:     # requeued after an executor died
                    self._hand_back()
                if not any(e.queue for e in self.execs):
                    self.running = False      # drained: every task it kept has reported
        self._shutdown()

    def _timeout(self) -> float:
        t = (self.sampler.next_due() if self.sampler else self._sampler_at) - time.time()
        if self.deadlines:
            t = min(t, min(d for d, _ in self.deadlines.values()) - time.time())
        if self.idle_exit is not None and self.leaving is None:
            t = min(t, self.last_busy + self.idle_exit - time.time())
        if self.lead_at is not None and self.leaving is None:   # a long task's successor
            # is due (placement.py); a leaving agent places nothing, so it must not wake
            t = min(t, self.lead_at - time.time())
        return max(0.0, min(t, 5.0))

    # -- leaving: SIGTERM or idle ------------------------------------------------
    def _on_sigterm(self, signum: int, frame: Any) -> None:
        try:
            os.write(self._term_w, b"t")
        except OSError:
            pass

    def _check_idle(self) -> None:
        now = time.time()
        if self.queue or self.blocked or any(e.queue for e in self.execs):
            self.last_busy = now
        elif now - self.last_busy >= self.idle_exit:
            self._leave(f"idle for {self.idle_exit:g} s")

    def _leave(self, reason: str) -> None:
        """Drain: take no new work, hand back what has not started, finish the rest.

        Tasks already queued on an executor run (the head is running; the
        others are short ones prefetched behind it, or one long task queued
        in the last LEAD of the head's expected time). Held tasks and the
        agent's own queue go back to the master, which places them elsewhere;
        tasks that arrive later go back the same way.
        """
        if self.leaving is not None:
            return
        self.leaving = reason
        self._hand_back()

    def _hand_back(self) -> None:
        back = [t[0] for t in self._queued()] + list(self.blocked)
        self.queue = []
        self.blocked.clear()
        self.waiting_on.clear()
        self._send((P.LEAVING, self.leaving, back))

    def _from_master(self) -> None:
        try:
            msgs = self.reader.feed()
        except BlockingIOError:      # a socket shares O_NONBLOCK with its write side
            return
        except OSError:
            msgs = None
        if msgs is None:     # the master is gone: leave no process behind
            self.running = False
            return
        for msg in msgs:
            op = msg[0]
            if op == P.TASKS:
                if self.leaving is not None:
                    self._send((P.LEAVING, self.leaving, [t[0] for t in msg[1]]))
                    continue
                self._enqueue(msg[1])
            elif op == P.FUNC:
                self.funcs[msg[1]] = msg[2]
            elif op == P.DATA:
                for did, payload in msg[1]:
                    self.store[did] = payload
                    if did in self.waiting_on:
                        self._unblock(did)
            elif op == P.FETCH:
                self._send((P.DATA, [(d, self.store.get(d)) for d in msg[1]]))
            elif op == P.DROP:
                for d in msg[1]:
                    self.store.pop(d, None)
            elif op == P.CANCEL:
                self._cancel(set(msg[1]))
            elif op == P.SHUTDOWN:
                self.running = False

    def _from_exec(self, ex: _Exec) -> None:
        try:
            msgs = ex.reader.feed()
        except BlockingIOError:
            return
        except OSError:
            msgs = None
        if msgs is None:
            self._exec_died(ex)
            return
        queue = ex.queue
        producing = self.producing
        deadlines = self.deadlines
        cancelled = self.cancelled
        mean = self.mean
        results = self.results
        ok = P.OK
        rs_end = 0.0
        for msg in msgs:
            if msg[0] != P.RESULTS:
                continue
            rs = msg[1]
            if rs:
                rs_end = rs[-1][4][1]
            n = len(rs)
            # An executor answers in the order it was sent work: the head of its queue.
            head = queue[:n]
            del queue[:n]
            if len(head) < n:
                head += [None] * (n - len(head))
            digest = None
            m = None
            for res, tmsg in zip(rs, head):
                tid = res[0]
                if deadlines:
                    deadlines.pop(tid, None)
                if tmsg is not None:
                    if tmsg[1] is not digest:      # mean duration here (the prefetch depth)
                        if digest is not None:
                            mean[digest] = m
                        digest = tmsg[1]
                        m = mean.get(digest)
                    times = res[4]
                    d = times[1] - times[0]
                    m = d if m is None else 0.8 * m + 0.2 * d
                    for did in tmsg[11]:
                        if producing.get(did) is ex:
                            del producing[did]
                if cancelled and tid in cancelled:
                    cancelled.discard(tid)
                    continue
                if res[1] == ok and tmsg is not None:
                    if self.waiting_on:
                        self._outputs_made(tmsg[11], res[2])
                    for payload in res[2]:
                        if payload is not None and len(payload) > INLINE_MAX:
                            res = self._keep_large(res, tmsg)
                            break
                results.append(res)
            if digest is not None:
                mean[digest] = m
            for tid, lines in msg[2]:
                self.logs.extend((tid, t, lvl, line) for t, lvl, line in lines)
        if not ex.queue:
            ex.reserved = 0
            ex.started = 0.0
        elif rs_end:
            ex.started = rs_end       # the next task started when the last one ended

    def _keep_large(self, res: tuple, tmsg: tuple | None) -> tuple:
        """Results above INLINE_MAX stay here; the master gets a marker."""
        if res[1] != P.OK or not res[2] or tmsg is None:
            return res
        outs = res[2]
        for i, payload in enumerate(outs):
            if payload is not None and len(payload) > INLINE_MAX:
                if outs is res[2]:
                    outs = list(outs)
                key = tmsg[11][i]
                self.store[key] = payload
                outs[i] = ("held", key, len(payload))
        return res if outs is res[2] else (res[0], res[1], outs, res[3], res[4])

    # -- failures on the node ---------------------------------------------
    def _check_deadlines(self) -> None:
        if not self.deadlines:
            return
        now = time.time()
        for tid, (deadline, ex) in list(self.deadlines.items()):
            if now >= deadline:
                del self.deadlines[tid]
                t = ex.queue[0]
                timeout = t[7]["time_out"]
                self._kill_exec(ex, requeue_rest=True)
                self.results.append((tid, P.TIMEOUT, None,
                                     ("TimeoutError", f"ran longer than time_out={timeout:g} s",
                                      "", None), (deadline - timeout, now)))

    def _exec_died(self, ex: _Exec) -> None:
        status = _reap(ex.pid)
        head = ex.queue[0] if ex.queue else None
        self._forget(ex, requeue_rest=True)
        if head is not None:
            tid = head[0]
            self.deadlines.pop(tid, None)
            if tid in self.cancelled:
                self.cancelled.discard(tid)
            else:
                self.results.append((tid, P.ERROR, None, (
                    "WorkerDied", f"the executor process running the task died ({status}) on "
                    f"node {self.name}", "", None), (ex.started, time.time())))
        self._spawn()

    def _kill_exec(self, ex: _Exec, requeue_rest: bool) -> None:
        try:
            os.kill(ex.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        _reap(ex.pid)
        self._forget(ex, requeue_rest)
        self._spawn()

    def _send_exec_batches(self) -> None:
        """End of a round: each executor's new tasks in one frame and one write."""
        dirty, self._dirty = self._dirty, []
        execs = self.execs
        for ex in dirty:
            if ex.batch:
                self._seal(ex)
            if ex in execs:
                self._flush_exec(ex)

    def _flush_exec(self, ex: _Exec) -> None:
        out = ex.out
        try:
            while out:
                n = os.write(ex.wfd, out)
                del out[:n]
        except BlockingIOError:
            pass
        except OSError:
            out.clear()          # the executor died; _from_exec sees it and cleans up
        if out and not ex.wreg:
            self.sel.register(ex.wfd, selectors.EVENT_WRITE, ("w", ex))
            ex.wreg = True
        elif not out and ex.wreg:
            self.sel.unregister(ex.wfd)
            ex.wreg = False

    def _forget(self, ex: _Exec, requeue_rest: bool) -> None:
        if ex.wreg:
            self.sel.unregister(ex.wfd)
            ex.wreg = False
        self.sel.unregister(ex.rfd)
        os.close(ex.rfd)
        os.close(ex.wfd)
        self.execs.remove(ex)
        del self.by_fd[ex.rfd]
        if ex in self._dirty:
            self._dirty.remove(ex)
        for d in [d for d, e in self.producing.items() if e is ex]:
            del self.producing[d]
        if requeue_rest:
            for t in ex.queue[1:]:
                if t[3] and self._blocked_on_inputs(t):
                    continue
                self.seq += 1
                heapq.heappush(self.queue, (-t[8], self.seq, t))
        ex.queue = []

    def _cancel(self, tids: set) -> None:
        for tid in tids:
            self.blocked.pop(tid, None)
        kept = []
        for item in self.queue:
            x = item[2]
            if type(x) is list:
                x[:] = [t for t in x if t[0] not in tids]
                if x:
                    kept.append(item)
            elif x[0] not in tids:
                kept.append(item)
        heapq.heapify(kept)
        self.queue = kept
        for ex in list(self.execs):
            if ex.queue and ex.queue[0][0] in tids:
                tid = ex.queue[0][0]
                self.deadlines.pop(tid, None)
                self._kill_exec(ex, requeue_rest=True)
            elif ex.queue:
                self.cancelled.update(t[0] for t in ex.queue[1:] if t[0] in tids)

    # -- sending ------------------------------------------------------------
    def _sample(self) -> None:
        s = self.sampler
        if s is None:
            if time.time() < self._sampler_at:
                return
            from .sampler import Sampler
            s = self.sampler = Sampler(self._sample_interval)
        if time.time() >= s.next_due():
            self._send((P.SAMPLE, s.sample()))

    def _send_batches(self) -> None:
        if self.logs:       # first: a task's lines are in before its result (none lost at stop)
            self._send((P.LOG, self.logs))
            self.logs = []
        if self.results:
            self._send((P.RESULTS, self.results))
            self.results = []

    def _send(self, msg: Any) -> None:
        self.out += P.encode(msg)
        self._flush()

    def _flush(self) -> None:
        try:
            while self.out:
                n = os.write(self.wfd, self.out)
                del self.out[:n]
        except BlockingIOError:
            pass
        except OSError:
            self.running = False
            return
        want = selectors.EVENT_READ | (selectors.EVENT_WRITE if self.out else 0)
        if self.wfd == self.rfd:
            self.sel.modify(self.rfd, want, None)
        elif self.out:
            try:
                self.sel.register(self.wfd, selectors.EVENT_WRITE, None)
            except KeyError:
                pass
        else:
            try:
                self.sel.unregister(self.wfd)
            except (KeyError, ValueError):
                pass

    def _shutdown(self) -> None:
        for ex in list(self.execs):
            try:
                os.kill(ex.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        for ex in list(self.execs):
            _reap(ex.pid)
        try:
            os.set_blocking(self.wfd, True)
            if self.out:
                P.write_all(self.wfd, bytes(self.out))
        except OSError:
            pass


def _ignore(signum: int, frame: Any) -> None:
    pass


def _reap(pid: int) -> str:
    try:
        _, status = os.waitpid(pid, 0)
    except ChildProcessError:
        return "already reaped"
    if os.WIFSIGNALED(status):
        sig = os.WTERMSIG(status)
        try:
            return f"killed by {signal.Signals(sig).name}"
        except ValueError:
            return f"killed by signal {sig}"
    return f"exit code {os.WEXITSTATUS(status)}"


def _version() -> str:
    from .._version import __version__
    return __version__


def serve_stdio() -> None:
    """Run an agent on stdin/stdout; stray prints by tasks go to stderr."""
    rfd = os.dup(0)
    wfd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    sys.stdout = sys.stderr
    agent = Agent(rfd, wfd)
    agent.handshake()
    agent.run()
