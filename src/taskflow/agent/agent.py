"""The node agent: one per host, the same whatever transport reached it.

It speaks the framed protocol (:mod:`taskflow.wire`) with the master over a
pair of file descriptors, forks one executor per slot (:mod:`.pool`), keeps
a queue of the work it was sent (:mod:`.workqueue`), places it on executors
(:mod:`.placement`), holds tasks sent before their inputs exist
(:mod:`.chained`), holds data that stays on the node, enforces time-outs,
and reports results, logs and resource samples. It is single-threaded (a
``selectors`` loop), so forking a fresh executor is safe at any time.
"""
from __future__ import annotations

import os
import selectors
import signal
import socket
import sys
import time
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..context import private_dir, total_memory_gb
from ..errors import ProtocolError
from ..wire import budget, messages as M
from ..wire import protocol as P
from ..wire.channel import Channel, FdChannel
from ..wire.framewriter import FrameWriter
from ..wire.adoption import PING_EVERY, silence_limit
from ..wire.thresholds import HELD_INPUT_WAIT, RUNNING_SIGNAL_MIN
from .executor import loglines
from .chained import Chaining
from .holding import INLINE_MAX, Holding
from .memory import NodeMemory
from .placement import Placement
from .pool import Executor, Pool, kill_group, reap
from .state import NodeState
from .executor.taskenv import compss_environment
from .tracking import Tracker
from .workqueue import WorkQueue
from .orphan import forget_keys
from .recent import Recent
from .rejoin import Rejoin

if TYPE_CHECKING:
    from .orphan import Orphan
    from .sampler import Sampler

# bytes waiting for the master above which the executors are not read (their results and
# output lines wait in their pipes: the node holds no more than this of them), and below
# which they are read again
OUT_HIGH = 8 * loglines.ROW_MAX
OUT_LOW = 2 * loglines.ROW_MAX

class Agent:
    def __init__(self, rfd: int, wfd: int, channel: Channel | None = None) -> None:
        self.rfd = rfd
        self.wfd = wfd
        self.chan: Channel = channel if channel is not None else FdChannel(rfd, wfd)
        self.reader = P.FrameReader(self.chan)
        self.sel = selectors.DefaultSelector()
        self.out = FrameWriter(self.chan)         # frames to the master
        self.out.attach(self.sel, None)           # (None: the master's key, see run)
        self._term_r, self._term_w = os.pipe()
        self.state = NodeState()
        self.queue = WorkQueue()
        self.pool = Pool(self.sel, [rfd, wfd, self._term_r, self._term_w])
        self.placement = Placement(self.state, self.queue, self.pool)
        self.chaining = Chaining(self.state, self.queue, self.placement)
        self.placement.chaining = self.chaining
        self.holding = Holding(self.state, self.queue, self.chaining, self._send_parts)
        self.results: list[M.ResultWire] = []     # to the master at the end of the round
        self.logs: list[M.LogWire] = []
        self.cancelled: set[int] = set()          # queued behind a running task, then cancelled
        self.slots = 1
        self.sampler: Sampler | None = None
        self._sample_interval = 2.0
        self._sampler_at = 0.0
        self.running = True
        self.name = socket.gethostname()
        self.leaving: str | None = None   # why the agent drains (SIGTERM, idle): no new work
        self.idle_exit: float | None = None
        self.last_busy = time.time()
        self._held_next = 0.0             # when to look for held tasks waiting in vain
        self.interrupt_at: float | None = None    # the run is interrupted: kill at this time
        self.memory: NodeMemory | None = None     # the budget (set at the handshake)
        self.tracker: Tracker | None = None       # what tasks start (set at the handshake)
        # an adoptable run (wire.adoption): how long to outlive a lost master, for whom
        self.adopt_grace, self.adopt_secret, self.adopt_run = 0.0, "", ""
        self.silence, self.last_rx = 0.0, time.time()   # s without a frame: the master is lost
        self.told_to_stop = False                 # SHUTDOWN: the master ends the run
        self.orphan: Orphan | None = None         # the master was lost (agent.orphan)
        self.rejoin: Rejoin | None = None         # a dial-back agent looks for a resumed master

    # -- set-up ----------------------------------------------------------
    def handshake(self) -> None:
        op, body = P.read_frame_blocking(self.chan)
        if op != M.HELLO:
            raise ProtocolError("expected HELLO")
        hello: M.Hello = body           # (a TypedDict: its keys are checked by mypy)
        for p in reversed(hello.get("sys_path", [])):
            if p not in sys.path:
                sys.path.insert(0, p)
        if hello.get("cwd") and os.path.isdir(hello["cwd"]):
            os.chdir(hello["cwd"])
        if hello.get("data_dir"):         # file versions of the run: user-only on this node too
            private_dir(hello["data_dir"])
        os.environ.update(hello.get("env", {}))
        self.name = self.holding.name = hello.get("name", self.name)
        self.slots = int(hello.get("slots") or os.cpu_count() or 1)
        self.idle_exit = hello.get("idle_exit")
        self.adopt_grace = float(hello.get("adopt_grace") or 0.0)
        self.adopt_secret = hello.get("adopt_secret", "")
        self.adopt_run = hello.get("adopt_run", "")
        self.silence = silence_limit(hello.get("heartbeat_timeout") or 0.0) if self.adopt_grace else 0.0
        self.rejoin = Rejoin.named(hello) if self.adopt_grace else None
        self.recent = Recent(self.silence + 2 * PING_EVERY if self.silence else 0.0)  # cut link
        store = self.state.store
        if hello.get("data_dir"):
            store.dir = os.path.join(hello["data_dir"], f"spill-{self.name}-{os.getpid()}")
            # (the run's directory on this node: its job logs, as programs' are)
            loglines.KEEP_DIR[:] = [os.path.join(os.path.dirname(hello["data_dir"]), "jobs")]
        mem_gb = float(hello.get("memory_gb") or total_memory_gb())
        high, pause = budget.marks(hello.get("memory_budget"), hello.get("memory_pause"), mem_gb)
        self.memory = NodeMemory(store, self.pool, high, pause,
                                 lambda r: self._send(M.MEMORY, r))
        if hello.get("compss_env"):     # PyCOMPSs: what every task sees (before the forks)
            compss_environment(hello.get("label") or self.name)
        self.tracker = Tracker()        # before the executors: a cgroup is theirs too
        for _ in range(self.slots):
            self.pool.spawn()
        io = int(hello.get("io_executors") or 0)     # @IO tasks' own executors (placement)
        for _ in range(io):
            self.pool.spawn(io=True)
        # The sampler (psutil: ~16 ms of imports) starts after the handshake (see _sample).
        self._sample_interval = hello.get("sample_interval", 2.0)
        self._sampler_at = time.time() + 0.1
        info: M.Ready = {"hostname": socket.gethostname(), "pid": os.getpid(),
                         "slots": self.slots, "cpus": os.cpu_count(), "io_executors": io,
                         "memory_gb": total_memory_gb(), "python": sys.version.split()[0],
                         "version": __version__, "memory_budget": high, "memory_pause": pause}
        P.write_all(self.chan, P.encode(M.READY, info))
        self.tracker.arm()                  # (after READY: the sub-reaper costs an import)
        self.chan.set_blocking(False)
        self.sel.register(self.rfd, selectors.EVENT_READ, None)
        # SIGTERM (Slurm's walltime warning, scancel, a user's kill) drains the node:
        # running tasks finish, the rest goes back to the master (see _leave).
        os.set_blocking(self._term_w, False)
        self.sel.register(self._term_r, selectors.EVENT_READ, "term")
        signal.signal(signal.SIGTERM, self._on_sigterm)

    # -- main loop -------------------------------------------------------
    def run(self) -> None:
        pool = self.pool
        placement = self.placement
        while self.running:
            timeout = self._timeout()
            for key, mask in self.sel.select(timeout):
                data = key.data
                if data == "term":
                    os.read(self._term_r, 64)
                    if self.orphan is not None and self.orphan.waiting():
                        self.orphan.give_up()       # (no master to hand work back to)
                    self._leave("SIGTERM")
                elif data == "adopt":
                    assert self.orphan is not None
                    self.orphan.accept()
                elif data is None:
                    if mask & selectors.EVENT_READ:
                        self._from_master()
                    if mask & selectors.EVENT_WRITE:
                        self._flush()
                elif type(data) is tuple:       # ("w", executor): its pipe has room again
                    _, ex = data
                    if ex in pool:
                        pool.flush(ex)
                elif data in pool:
                    # (an executor replaced earlier in this round may have left a stale
                    # event whose fd number now belongs to its successor: skip it)
                    self._from_exec(data)
            self._check_deadlines()
            if pool.doomed:
                pool.kill_doomed(time.time())
            if self.interrupt_at is not None and time.time() >= self.interrupt_at:
                self._kill_the_rest()
            if self.chaining.blocked and time.time() >= self._held_next:
                self._check_held()
            if self.leaving is None:
                placement.schedule()
                if self.idle_exit is not None:
                    self._check_idle()
            if pool.dirty:
                pool.send_batches()
            self._sample()
            tracker = self.tracker
            if tracker is not None and tracker.subreaper and time.time() >= tracker.next_reap:
                tracker.reap({e.pid for e in pool.every()}, time.time())
            if self.memory is not None:
                self.memory.check(time.time())
            self._send_batches()
            pending = self.out.pending()
            if pending > OUT_HIGH:      # the master takes less than the executors send
                pool.pause_reads()
            elif not pool.reading and pending < OUT_LOW:
                pool.resume_reads()
            orphan = self.orphan
            if self.silence and (orphan is None or not orphan.waiting()) and \
                    time.time() - self.last_rx > self.silence:
                self._master_lost(f"it was silent for {self.silence:g} s")
            elif orphan is not None and orphan.waiting():
                orphan.tick(time.time())      # (its grace; a dial-back agent looks for one)
            elif self.leaving is not None:
                if self.queue or self.chaining.blocked:     # requeued after an executor died
                    self._hand_back()
                if not pool.busy():
                    self.running = False      # drained: every task it kept has reported
        self._shutdown()

    def _timeout(self) -> float:
        t = (self.sampler.next_due() if self.sampler else self._sampler_at) - time.time()
        deadlines = self.state.deadlines
        if deadlines:
            t = min(t, min(d for d, _ in deadlines.values()) - time.time())
        if self.idle_exit is not None and self.leaving is None:
            t = min(t, self.last_busy + self.idle_exit - time.time())
        if self.chaining.blocked:
            t = min(t, self._held_next - time.time())
        if self.interrupt_at is not None:
            t = min(t, self.interrupt_at - time.time())
        if self.pool.doomed:
            t = min(t, min(self.pool.doomed.values()) - time.time())
        if self.orphan is not None and self.orphan.waiting():
            t = min(t, self.orphan.due())
        lead_at = self.placement.lead_at
        if lead_at is not None and self.leaving is None:   # a long task's successor is
            # due (placement.py); a leaving agent places nothing, so it must not wake
            t = min(t, lead_at - time.time())
        return max(0.0, min(t, 5.0))

    # -- leaving: SIGTERM or idle ------------------------------------------------
    def _on_sigterm(self, signum: int, frame: Any) -> None:
        try:
            os.write(self._term_w, b"t")
        except OSError:
            pass

    def _check_idle(self) -> None:
        now = time.time()
        idle_exit = self.idle_exit
        if self.queue or self.chaining.blocked or self.pool.busy():
            self.last_busy = now
        elif idle_exit is not None and now - self.last_busy >= idle_exit:
            self._leave(f"idle for {idle_exit:g} s")

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
        io = self.placement.io_queue
        back = [t.task_id for t in self.queue.take_all()] + self.chaining.take_all() + \
            [t.task_id for t in io]
        io.clear()
        self._send(M.LEAVING, M.Leaving(self.leaving or "", back))

    # -- frames in ---------------------------------------------------------------
    def _from_master(self) -> None:
        try:
            msgs = self.reader.feed()
        except BlockingIOError:      # a socket shares O_NONBLOCK with its write side
            return
        except OSError:
            msgs = None
        if msgs is None:     # the master is gone: leave no process behind (or wait for one)
            self._master_lost("its stream closed")
            return
        self.last_rx = time.time()
        state = self.state
        for op, body in msgs:
            if op == M.TASKS:
                if self.leaving is not None:
                    self._send(M.LEAVING, M.Leaving(self.leaving,
                                                    [t.task_id for t in M.tasks(body)]))
                    continue
                self.placement.enqueue(M.tasks(body))
            elif op == M.FUNC:
                state.funcs[body.digest] = body.payload
                if body.code is not None:
                    state.codes[body.digest] = body.code
            elif op == M.DATA:
                self.holding.data(body)
            elif op == M.FETCH:
                self.holding.fetch(body)
            elif op == M.PULL:
                self.holding.pull(body)
            elif op == M.PART:
                self.holding.parts(body)
            elif op == M.DROP:
                self.holding.drop(body)
            elif op == M.CANCEL:
                self._cancel(set(body))
            elif op == M.INTERRUPT:
                self._interrupt(float(body))
            elif op == M.SHUTDOWN:
                self.told_to_stop = True
                self.running = False
            elif op == M.KEYS:
                state.keys.update(body)
            elif op == M.ADOPT:
                if self.orphan is not None:
                    self.orphan.adopt(body)

    def _master_lost(self, why: str) -> None:
        """Exit, leaving no process, or keep the tasks for a resumed master (agent.orphan)."""
        from .orphan import master_lost
        if not master_lost(self, why):
            self.running = False

    def _from_exec(self, ex: Executor) -> None:
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
        producing = self.state.producing
        deadlines = self.state.deadlines
        cancelled = self.cancelled
        mean = self.state.mean
        results = self.results
        chaining = self.chaining
        ok = M.OK
        packed = M.Packed
        rs_end = 0.0
        for op, body in msgs:
            if op != M.RESULTS:
                continue
            rs, lines = body
            n = len(rs)
            # An executor answers in the order it was sent work: the head of its queue.
            head: list[M.TaskMsg | None] = queue[:n]     # type: ignore[assignment]
            del queue[:n]
            if len(head) < n:
                head += [None] * (n - len(head))
            digest = None
            m = None
            for res, tmsg in zip(rs, head):
                tid, status, outputs, _, timing = res
                try:
                    t0, t1 = timing
                except ValueError:          # measured (agent.executor.usage): start, end, cpu, peak, io
                    t0, t1 = timing[0], timing[1]
                rs_end = t1
                if deadlines:
                    deadlines.pop(tid, None)
                if tmsg is not None:
                    if tmsg.digest is not digest:      # mean duration here (prefetch depth)
                        if digest is not None and m is not None:
                            mean[digest] = m
                        digest = tmsg.digest
                        m = mean.get(digest)
                    d = t1 - t0
                    m = d if m is None else 0.8 * m + 0.2 * d
                    for did in tmsg.outputs:
                        if producing.get(did) is ex:
                            del producing[did]
                if cancelled and tid in cancelled:
                    cancelled.discard(tid)
                    continue
                if status == ok and tmsg is not None and outputs is not None:
                    if chaining.waiting_on:
                        chaining.outputs_made(tmsg.outputs, outputs)
                    for payload in outputs:
                        kind = type(payload)
                        if (kind is bytes and len(payload) > INLINE_MAX) or kind is packed:
                            res = self.holding.keep_large(res, tmsg)
                            break
                elif status == M.MISSING and tmsg is not None:
                    res = self.holding.resend(res, tmsg)
                    if res is None:
                        continue
                results.append(res)
            if digest is not None and m is not None:
                mean[digest] = m
            for tid, tlines in lines:
                self.logs.extend((tid, t, lvl, line) for t, lvl, line in tlines)
        if not ex.queue:
            ex.reserved = 0
            ex.started = 0.0
        elif rs_end:
            ex.started = rs_end       # the next task started when the last one ended
            nxt = ex.queue[0]
            mean_next = mean.get(nxt.digest)
            if mean_next is None or mean_next >= RUNNING_SIGNAL_MIN:
                self.state.started.append((nxt.task_id, rs_end))

    # -- failures on the node ---------------------------------------------
    def _check_deadlines(self) -> None:
        deadlines = self.state.deadlines
        if not deadlines:
            return
        now = time.time()
        for tid, (deadline, ex) in list(deadlines.items()):
            if now >= deadline:
                del deadlines[tid]
                opts = ex.queue[0].options
                timeout = opts.time_out if opts is not None else None
                assert timeout is not None      # (only tasks with a time-out have a deadline)
                self._kill_exec(ex)
                self.results.append((tid, M.TIMEOUT, None, M.ErrorInfo(
                    "TimeoutError", f"ran longer than time_out={timeout:g} s", "", None),
                    (deadline - timeout, now)))

    def _check_held(self) -> None:
        """A task held for inputs that never come fails, naming them (never a silent wait)."""
        now = time.time()
        for t, lacking in self.chaining.overdue(now, HELD_INPUT_WAIT):
            ids = ", ".join(f"d{d}" for d in lacking)
            self.results.append((t.task_id, M.ERROR, None, M.ErrorInfo(
                "InputsMissing", f"waited {HELD_INPUT_WAIT:g} s on node {self.name} for input "
                f"value(s) {ids} that nothing there makes and the master never sent; it will "
                f"be retried (report this: it is a taskflow bug)", "", None), (now, now)))
        oldest = self.chaining.oldest()      # next look: when the oldest one is due, or in
        self._held_next = now + 1.0 if oldest is None else \
            max(now + 1.0, oldest + HELD_INPUT_WAIT)     # a second if one waits legitimately

    # -- the run is interrupted ---------------------------------------------------
    def _interrupt(self, grace: float) -> None:
        """Start nothing more; stop what runs (SIGINT: a Python task gets KeyboardInterrupt,
        a program SIGTERM); what still runs after ``grace`` seconds is killed."""
        if self.interrupt_at is not None:
            return
        self.interrupt_at = time.time() + grace
        self._leave("interrupted")          # the agent's queue and held tasks go back
        for ex in self.pool.every():
            if ex.queue:
                try:
                    os.kill(ex.pid, signal.SIGINT)
                except ProcessLookupError:
                    pass

    def _kill_the_rest(self) -> None:
        """The grace period is over: kill every executor still busy, with its programs."""
        for ex in self.pool.every():
            if ex.queue:
                kill_group(ex)
        self.interrupt_at = float("inf")    # once

    def _interrupted_results(self, ex: Executor, why: str) -> None:
        """An executor that ended during the interrupt: its tasks did not finish."""
        now = time.time()
        for i, t in enumerate(ex.queue):
            self.results.append((t.task_id, M.INTERRUPTED, None, M.ErrorInfo(
                "Interrupted", why if i == 0 else "not started: the run was interrupted", "",
                None), (ex.started if i == 0 else now, now)))

    def _exec_died(self, ex: Executor) -> None:
        ex.slot.terminate()       # a program it was running must not outlive it
        status = reap(ex.pid)
        if self.interrupt_at is not None:   # interrupted: report, replace nothing
            self._interrupted_results(ex, f"killed when the run was interrupted ({status})")
            self.pool.forget(ex)
            self._replaced(ex)
            return
        head = ex.queue[0] if ex.queue else None
        rest = self.pool.forget(ex)
        self._replaced(ex)
        self._requeue(rest)
        if head is not None:
            tid = head.task_id
            self.state.deadlines.pop(tid, None)
            if tid in self.cancelled:
                self.cancelled.discard(tid)
            else:
                limit = head.options.memory_limit if head.options is not None else None
                over = None
                if limit:                   # the kernel's limit (agent.executor.limits)?
                    from .executor.limits import executor_killed
                    over = executor_killed(tid, limit)
                if over is not None:
                    self.results.append((tid, M.OVER_MEMORY, None, over,
                                         (ex.started, time.time())))
                else:
                    hint = f"; it had a memory limit of {limit:g} GB and may have died " \
                        f"allocating past it (in code that does not raise MemoryError)" \
                        if limit else ""
                    self.results.append((tid, M.CRASHED, None, M.ErrorInfo(
                        "WorkerDied", f"the executor process running the task died ({status}) "
                        f"on node {self.name}{hint}", "", None), (ex.started, time.time())))
        self.pool.spawn(io=ex.io)

    def _kill_exec(self, ex: Executor) -> None:
        """Kill ``ex`` (its head task timed out or was cancelled); the rest runs elsewhere."""
        _, rest = self.pool.kill(ex)
        self._replaced(ex)
        self._requeue(rest)
        self.pool.spawn(io=ex.io)

    def _replaced(self, ex: Executor) -> None:
        """Values ``ex`` was to make are not coming from it any more."""
        producing = self.state.producing
        for d in [d for d, e in producing.items() if e is ex]:
            del producing[d]

    def _requeue(self, tasks: list[M.TaskMsg]) -> None:
        """Tasks a dead executor had not started go back on the agent's queue."""
        for t in tasks:
            if t.refs and self.chaining.hold(t):
                continue
            if t.units == 0:            # an @IO task: the I/O executors' queue
                self.placement.io_queue.append(t)
                continue
            self.queue.push(t)

    def _cancel(self, tids: set[int]) -> None:
        for ex in self.pool.every():
            if not ex.queue:
                continue
            head = ex.queue[0].task_id
            if head in tids:        # (its queue goes back: the cancelled dropped below)
                self.state.deadlines.pop(head, None)
                self._kill_exec(ex)
            else:
                self.cancelled.update(t.task_id for t in ex.queue[1:] if t.task_id in tids)
        self.chaining.drop(tids)
        self.queue.remove(tids)
        self.placement.drop_io(tids)

    # -- frames out ------------------------------------------------------------
    def _sample(self) -> None:
        s = self.sampler
        if s is None:
            if time.time() < self._sampler_at:
                return
            from .sampler import Sampler
            s = self.sampler = Sampler(self._sample_interval)
        if time.time() >= s.next_due():
            self._send(M.SAMPLE, s.sample())

    def _send_batches(self) -> None:
        if self.orphan is not None and self.orphan.sift():     # no master: held for one
            return
        if self.state.keys and self.results:        # (keyed calls of an adoptable run)
            forget_keys(self.state.keys, self.results)
        if self.logs:       # first: a task's lines are in before its result (none lost at stop)
            self._send(M.LOG, self.logs)
            self.logs = []
        if self.results:
            self.recent.sent(self.results, self._send(M.RESULTS, self.results))  # (recent.py)
            self.results = []
        started = self.state.started
        if started:         # after the results: a task queued behind its producer starts
            self._send(M.STARTED, started)     # once the producer's result is in
            self.state.started = []

    def _send(self, op: int, body: Any) -> int:
        if self.orphan is not None and self.orphan.waiting():
            return 0                # no master to tell (else: the frame's size)
        self.out.queue(frame := P.encode(op, body))
        self._flush()
        return len(frame)

    def _send_parts(self, op: int, body: Any) -> None:
        """A frame that may carry values: their buffers are written from where they are."""
        self.out.queue_parts(P.encode_parts(op, body))
        self._flush()

    def _flush(self) -> None:
        """Write what the master's stream takes now (the rest when it has room)."""
        try:
            self.out.flush()
        except OSError:             # the master is gone
            self._master_lost("a write to it failed")

    def _shutdown(self) -> None:
        if self.orphan is not None:
            self.orphan.close_listener()
        self.pool.shutdown()
        if self.tracker is not None:        # what the tasks left (daemons, kept children)
            self.tracker.end()
        self.state.store.close()
        try:
            self.chan.set_blocking(True)
            self.out.drain()
        except OSError:
            pass
