"""The agent's executors: one forked process per slot, and the pipes to them.

The pool forks executors (and replaces those that die or are killed), keeps
each one's queue of tasks sent but not answered, and writes its work: the
tasks queued on an executor during one agent round go as one TASKS frame in
one write (:meth:`Pool.send_batches`), and writes never block (what a pipe
does not take waits in ``out``, a :class:`~taskflow.wire.framewriter.FrameWriter`,
until the pipe has room).
"""
from __future__ import annotations

import os
import selectors
import signal
import time
from typing import Any

from ..context import keep_nested_here
from ..wire import messages as M
from ..wire import protocol as P
from ..wire.framewriter import FrameWriter
from .executor import lifeline, sharedfiles
from .executor.loop import executor_main
from .executor.programs import PidSlot


PROGRAM_GRACE = 5.0      # s a killed task's programs get between SIGTERM and SIGKILL
MAX_PRELOAD = 256        # module names kept for executors (PRELOAD), masters after masters


class Executor:
    """One executor process, as the agent sees it."""

    __slots__ = ("pid", "wfd", "rfd", "reader", "queue", "digests", "reserved", "started",
                 "out", "batch", "bdata", "slot", "io", "parked", "mods")

    def __init__(self, pid: int, wfd: int, rfd: int, slot: PidSlot | None = None,
                 io: bool = False) -> None:
        self.pid = pid
        self.io = io                        # an I/O executor (@IO tasks only: placement.py)
        # the pid of the program it runs now (invokers.spawn), in memory both processes see
        self.slot = slot if slot is not None else PidSlot()
        self.wfd = wfd
        self.rfd = rfd
        self.reader = P.FrameReader(rfd)
        self.queue: list[M.TaskMsg] = []   # sent, in order, not yet answered (head: running)
        self.digests: set[bytes] = set()    # functions it has
        self.reserved = 0                   # extra slots held by a multi-unit task running here
        self.started = 0.0                  # when its head task started (expected-end guesses)
        self.out = FrameWriter(wfd)         # frames its pipe has not taken yet
        self.batch: list[M.TaskMsg] = []    # tasks for it this round: one TASKS frame
        self.bdata: dict[int, M.Payload] = {}   # the stored values those tasks read
        # tasks waiting for the tasks they called (executor.nested), innermost last: out of
        # the queue meanwhile, so the executor counts as idle and runs work on top of them
        self.parked: list[M.TaskMsg] = []
        self.mods = 0                       # how many of Pool.modules it was sent (PRELOAD)


class Pool:
    """The executors of one agent.

    ``keep_closed`` are the agent's own descriptors, which a forked executor
    closes first; ``sel`` is the agent's selector (executors' pipes are
    registered with the executor as data).
    """

    def __init__(self, sel: selectors.BaseSelector, keep_closed: list[int]) -> None:
        self.sel = sel
        self.keep_closed = keep_closed
        self.execs: list[Executor] = []     # one per slot: the computing units' executors
        self.io_execs: list[Executor] = []  # the node's I/O executors (runcompss --io_executors)
        self.by_fd: dict[int, Executor] = {}
        self.dirty: list[Executor] = []     # executors with a batch to send this round
        self.doomed: dict[int, float] = {}  # process group -> when to SIGKILL what is left
        self.reading = True                 # executors' pipes are watched (see pause_reads)
        self.nest_out: list[M.Nest] = []    # tasks' calls and waits for the master (nest)
        self.parked: dict[int, Executor] = {}   # a waiting task's id -> its executor
        # tasks that called tasks or used a stream (sent NEST entries): a new master has none
        # of their calls, so they are not kept for one (orphan.taken); ended ones go when it
        # doubled (nest: off the results' path)
        self.callers: set[int] = set()
        self._prune_callers = 64
        # modules the script imported (PRELOAD): executors import them ahead of their tasks
        # (agent.executor.preload); see preload()
        self.modules: list[str] = []
        self.shared_tried = False   # the node's directory for large values (sharedfiles)

    def own(self, *fds: int) -> None:
        """``fds`` are the agent's (a master's stream, the orphan's socket): executors
        forked from now on close them."""
        self.keep_closed.extend(fds)

    def disown(self, *fds: int) -> None:
        """``fds`` are about to be closed: a forked executor must not close their numbers
        (the kernel gives them to the next descriptor opened: maybe its own pipe)."""
        self.keep_closed[:] = [fd for fd in self.keep_closed if fd not in fds]

    def spawn(self, io: bool = False) -> Executor:
        if not self.shared_tried:     # (once: every executor has the same directory, or none)
            self.shared_tried = True
            sharedfiles.setup()   # (before the fork: executors write large values there)
        t_r, t_w = os.pipe()      # agent -> executor
        r_r, r_w = os.pipe()      # executor -> agent
        slot = PidSlot()
        agent = os.getpid()
        lifeline.prepare()
        pid = os.fork()
        if pid == 0:  # child
            try:
                # Its own process group, which what its Python tasks start joins: killing
                # the executor (cancel, time_out) ends them and their children too (kill).
                os.setpgid(0, 0)
                # It ends with the agent, whatever kills the agent; a SIGTERM sent to the
                # whole job step does not end it (the agent decides): lifeline.py.
                lifeline.arm(agent)
                os.close(t_w)
                os.close(r_r)
                for fd in set(self.keep_closed):     # (a socket is both rfd and wfd)
                    os.close(fd)
                executor_main(t_r, r_w, slot)
            finally:
                os._exit(1)
        os.close(t_r)
        os.close(r_w)
        try:
            os.setpgid(pid, pid)        # (the child does it too: whichever runs first)
        except OSError:
            pass
        P.grow_pipe(t_w)
        P.grow_pipe(r_r)                # results with large values: a MiB per read, not 64 KiB
        os.set_blocking(t_w, False)     # never block on an executor: it may be writing to us
        os.set_blocking(r_r, False)     # nor wait on a read that a stale event announced
        ex = Executor(pid, t_w, r_r, slot, io)
        (self.io_execs if io else self.execs).append(ex)
        self.by_fd[r_r] = ex
        if self.reading:
            self.sel.register(r_r, selectors.EVENT_READ, ex)
        ex.out.attach(self.sel, ("w", ex))       # its pipe has room again (agent.run)
        if self.modules:                # (a replacement: its first frame, before any work)
            self._send_modules(ex)
        return ex

    def __contains__(self, ex: Any) -> bool:
        return ex in self.execs or ex in self.io_execs

    def every(self) -> list[Executor]:
        """Every executor: the computing units' and the I/O ones, in a list of its own (a
        caller may kill one while walking it: the pool replaces it in its lists)."""
        return self.execs + self.io_execs

    def busy(self) -> bool:
        """Some executor still has a task sent to it and not answered."""
        return any(e.queue or e.parked for e in self.execs) or \
            any(e.queue or e.parked for e in self.io_execs)

    # -- work to executors ------------------------------------------------------------
    def add_function(self, ex: Executor, digest: bytes, payload: bytes) -> None:
        """Send ``ex`` a function it does not have, after the tasks batched so far."""
        if ex.mods < len(self.modules):     # (its imports ahead of the function: preload)
            self._send_modules(ex)
        if ex.batch:
            self.seal(ex)
        ex.out.queue(P.encode(M.FUNC, M.Func(digest, payload)))
        ex.digests.add(digest)

    def preload(self, names: list[str]) -> None:
        """The master's PRELOAD: executors import ``names`` ahead of their tasks.

        The first ``cores - 1`` executors (at least one) are sent them now: on a node
        with fewer cores than executors and the script, importing on all of them at
        once would slow the one that runs the first task (and the script, on its own
        machine). The others get them with their first function (:meth:`add_function`),
        before it loads, as an executor forked later does at once."""
        have = self.modules
        names = [n for n in names if n not in have][:MAX_PRELOAD - len(have)]
        if not names:
            return
        have.extend(names)
        eager = max(1, (os.cpu_count() or 1) - 1)
        for ex in self.execs[:eager]:
            self._send_modules(ex)

    def _send_modules(self, ex: Executor) -> None:
        """The modules ``ex`` was not sent yet, in a frame after the tasks batched so far."""
        if ex.batch:
            self.seal(ex)
        ex.out.queue(P.encode(M.PRELOAD, M.Preload(self.modules[ex.mods:])))
        ex.mods = len(self.modules)
        self.flush(ex)

    def mark(self, ex: Executor) -> None:
        """``ex`` gets its first task of this round: its batch goes out at the round's end."""
        self.dirty.append(ex)

    @staticmethod
    def seal(ex: Executor) -> None:
        """The tasks queued on ``ex`` so far become one TASKS frame (the buffers of large
        values they read are written from the store, not copied into the frame)."""
        tasks = M.wire_tasks(ex.batch)
        body = (tasks, ex.bdata)
        if ex.bdata and any(type(v) is M.Packed for v in ex.bdata.values()):
            # a value in a shared file goes as its name (sharedfiles), the others as bytes
            body = (tasks, {d: sharedfiles.marker(v) for d, v in ex.bdata.items()})
            ex.out.queue_parts(P.encode_parts(M.TASKS, body))
        else:
            ex.out.queue(P.encode(M.TASKS, body))
        ex.batch = []
        ex.bdata = {}

    def send_batches(self) -> None:
        """End of a round: each executor's new tasks in one frame and one write."""
        dirty, self.dirty = self.dirty, []
        execs = self.execs
        for ex in dirty:
            if ex.batch:
                self.seal(ex)
            if ex in execs or ex in self.io_execs:
                self.flush(ex)

    @staticmethod
    def flush(ex: Executor) -> None:
        """Write what ``ex``'s pipe takes now (the rest when it has room)."""
        try:
            ex.out.flush()
        except OSError:
            pass            # the executor died; the agent's read sees it and cleans up

    def pause_reads(self) -> None:
        """Stop reading the executors (the master's stream is full: they wait in their
        writes, so what they send is not held in this process meanwhile)."""
        if self.reading:
            self.reading = False
            for ex in self.every():
                self.sel.unregister(ex.rfd)

    def resume_reads(self) -> None:
        if not self.reading:
            self.reading = True
            for ex in self.every():
                self.sel.register(ex.rfd, selectors.EVENT_READ, ex)

    # -- tasks that call tasks (executor.nested) -----------------------------------------
    def nest(self, ex: Executor, body: list[M.Nest]) -> None:
        """A task on ``ex`` waits for the tasks it called: it leaves the queue (``ex`` is
        idle for placement and runs work on top of it); it runs again: back at the head.
        The master is told all of it, before the round's results (``take_nest``)."""
        self.nest_out.extend(body)
        callers = self.callers
        for entry in body:
            callers.add(entry.parent)
            kind = type(entry)
            if kind is M.NestWait or kind is M.StreamPoll or kind is M.NestWaitFile:
                head = next(iter(ex.queue), None)
                if head is not None and head.task_id == entry.parent:
                    ex.parked.append(ex.queue.pop(0))
                    self.parked[entry.parent] = ex
                    ex.started = time.time()
            elif kind is M.NestResumed and ex.parked and ex.parked[-1].task_id == entry.parent:
                ex.queue.insert(0, ex.parked.pop())
                self.parked.pop(entry.parent, None)
                ex.started = time.time()

        if len(callers) >= self._prune_callers:
            here = {t.task_id for ex in self.every() for t in (*ex.queue, *ex.parked)}
            callers &= here
            self._prune_callers = max(64, 2 * len(callers))

    def nested_here(self, on: bool) -> None:
        """The master's ``Hello.nested_here`` (executor.runhere): for the executors forked
        from now on, and told to those running (a resumed master that adopted this agent
        says off: it restores calls that ended well, which must not run here again)."""
        keep_nested_here(on)
        for ex in self.every():
            ex.out.queue(P.encode(M.NESTED_HERE, on))
            self.flush(ex)

    def take_nest(self) -> list[M.Nest]:
        out, self.nest_out = self.nest_out, []
        return out

    def answer(self, answers: list[M.Answer]) -> None:
        """The master's answers to waits, each to the executor its waiting task is on.

        A task with nothing above it on its executor (nothing queued there, no task
        waiting on top of it) runs again as soon as its answer is in: it goes back to the
        head of the queue here and the master is told (``NestResumed``) now, and the
        executor, told so by NESTED_RUN, sends no NestResumed (a frame less per wait)."""
        by: dict[Executor, list[M.Answer]] = {}     # (one frame per executor)
        for a in answers:
            parent = a.parent
            ex = self.parked.get(parent)
            if ex is not None and ex in self:   # (else: the executor died meanwhile)
                if not ex.queue and ex.parked and ex.parked[-1].task_id == parent:
                    ex.queue.append(ex.parked.pop())
                    del self.parked[parent]
                    ex.started = time.time()
                    self.nest_out.append(M.NestResumed(parent))
                    ex.out.queue_parts(P.encode_parts(M.NESTED_RUN, [a]))
                    by.setdefault(ex, [])
                else:
                    by.setdefault(ex, []).append(a)
        for ex, some in by.items():
            if some:
                ex.out.queue_parts(P.encode_parts(M.NESTED, some))
            self.flush(ex)

    # -- ends ------------------------------------------------------------------------
    def forget(self, ex: Executor) -> list[M.TaskMsg]:
        """Drop a dead or killed executor; return the tasks it was sent and had not run."""
        ex.out.detach()
        if self.reading:
            self.sel.unregister(ex.rfd)
        os.close(ex.rfd)
        os.close(ex.wfd)
        (self.io_execs if ex.io else self.execs).remove(ex)
        for t in ex.parked:
            self.parked.pop(t.task_id, None)
        del self.by_fd[ex.rfd]
        ex.slot.close()
        if ex in self.dirty:
            self.dirty.remove(ex)
        rest = ex.queue[1:]
        ex.queue = []
        return rest

    def kill(self, ex: Executor) -> tuple[str, list[M.TaskMsg]]:
        """SIGKILL ``ex``, reap it and forget it: (how it ended, the tasks it had not run).

        The program its task runs (its own process group, children included) and
        what else the executor's group holds get SIGTERM first, and SIGKILL
        ``PROGRAM_GRACE`` seconds later if they are still there
        (:meth:`kill_doomed`); the executor itself ignores SIGTERM.
        """
        prog = ex.slot.terminate(signal.SIGTERM)
        try:
            os.killpg(ex.pid, signal.SIGTERM)
        except (ProcessLookupError, PermissionError):
            pass
        try:
            os.kill(ex.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        due = time.time() + PROGRAM_GRACE
        self.doomed[ex.pid] = due
        if prog:
            self.doomed[prog] = due
        how = reap(ex.pid)
        return how, self.forget(ex)

    def kill_doomed(self, now: float) -> None:
        """SIGKILL the process groups of killed executors whose grace has passed."""
        for pgid, due in list(self.doomed.items()):
            if now >= due:
                del self.doomed[pgid]
                try:
                    os.killpg(pgid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass

    def shutdown(self) -> None:
        every = self.every()
        for ex in every:                # each with its process group and its program's
            kill_group(ex)
        for ex in every:
            reap(ex.pid)


def kill_group(ex: Executor) -> None:
    """SIGKILL an executor and the program it runs (their process groups)."""
    ex.slot.terminate(signal.SIGKILL)
    pid = ex.pid
    try:
        os.killpg(pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def reap(pid: int) -> str:
    """Wait for a child; say how it ended."""
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
