"""Tasks the node stops or loses: time-outs, cancels, an interrupted run, a dead executor.

The agent's loop (:mod:`.agent`) hands these here; each ends with the
results the master is told (appended to the round's ``results``) and the
executors the pool replaces:

- a task past its ``time_out`` is killed with its executor (TIMEOUT); the
  tasks queued behind it go back on the agent's queue;
- a CANCEL kills the executors running a cancelled task; the cancelled
  tasks queued behind another one are dropped when their results come
  (``cancelled``, the agent's: task id -> the copy cancelled, read with each executor's answer);
- an interrupted run (INTERRUPT) gets SIGINT into every busy executor, and
  whatever still runs after the grace is killed (INTERRUPTED);
- an executor that died takes its head task with it (CRASHED, or OVER_MEMORY
  when the kernel's limit killed it: :mod:`.executor.limits`);
- a task held for inputs that never come fails, naming them (never a
  silent wait).
"""
from __future__ import annotations

import os
import signal
import time

from ..wire import messages as M
from ..wire.thresholds import HELD_INPUT_WAIT, HELD_RECHECK
from .chained import Chaining
from .link import say
from .placement import Placement
from .pool import Executor, Pool, kill_group, reap
from .state import NodeState
from .workqueue import WorkQueue


class Stops:
    """What the agent does when a task ends without its executor's answer."""

    def __init__(self, state: NodeState, queue: WorkQueue, pool: Pool, placement: Placement,
                 chaining: Chaining, cancelled: dict[int, M.TaskMsg]) -> None:
        self.state = state
        self.queue = queue
        self.pool = pool
        self.placement = placement
        self.chaining = chaining
        # the agent's (see the module's docstring): the copy cancelled, by its id; the
        # master may send the task again under that id, and the result of the new copy
        # must not be dropped for the old one's
        self.cancelled = cancelled
        self.interrupt_at: float | None = None    # the run is interrupted: kill at this time
        self.held_next = 0.0                      # when to look for held tasks waiting in vain

    # -- time-outs and held tasks ----------------------------------------------------
    def check_deadlines(self, results: list[M.ResultWire]) -> None:
        deadlines = self.state.deadlines
        if not deadlines:
            return
        now = time.time()
        for tid, (deadline, ex) in list(deadlines.items()):
            if now >= deadline:
                del deadlines[tid]
                # (the executor's head, or a task waiting under it for the tasks it called)
                late = next((t for t in (*ex.queue, *ex.parked) if t.task_id == tid), None)
                if late is None:                # (it ended meanwhile)
                    continue
                opts = late.options
                timeout = opts.time_out if opts is not None else None
                assert timeout is not None      # (only tasks with a time-out have a deadline)
                if late in ex.parked:
                    ex.parked.remove(late)      # (its TIMEOUT below, not a crash)
                self.kill(ex, results)
                results.append((tid, M.TIMEOUT, None, M.ErrorInfo(
                    "TimeoutError", f"ran longer than time_out={timeout:g} s", "", None),
                    (deadline - timeout, now)))

    def check_held(self, results: list[M.ResultWire], node: str) -> None:
        """A task held for inputs that never come fails, naming them (never a silent wait);
        one whose inputs all came goes (it should have gone when the last came: said)."""
        now = time.time()
        released = self.chaining.release_arrived()
        if released:
            say(f"taskflow.node: {node}: task(s) {', '.join(map(str, released))} were held "
                f"for inputs that had come; released by the check of held tasks (report "
                f"this: it is a taskflow bug)")
        for t, lacking in self.chaining.overdue(now, HELD_INPUT_WAIT):
            ids = ", ".join(f"d{d}" for d in lacking)
            results.append((t.task_id, M.ERROR, None, M.ErrorInfo(
                "InputsMissing", f"waited {HELD_INPUT_WAIT:g} s on node {node} for input "
                f"value(s) {ids} that nothing there makes and the master never sent; it will "
                f"be retried (report this: it is a taskflow bug)", "", None), (now, now)))
        self.held_next = now + HELD_RECHECK       # (a scan of the held set: cheap)

    # -- the run is interrupted ---------------------------------------------------
    def interrupt(self, grace: float) -> bool:
        """The run is interrupted: what still runs in ``grace`` seconds will be killed
        (:meth:`kill_the_rest`). False: it was already."""
        if self.interrupt_at is not None:
            return False
        self.interrupt_at = time.time() + grace
        return True

    def signal_busy(self) -> None:
        """SIGINT into every executor that runs a task (the interrupt): a Python task gets
        KeyboardInterrupt, a program SIGTERM."""
        for ex in self.pool.every():
            if ex.queue:
                try:
                    os.kill(ex.pid, signal.SIGINT)
                except ProcessLookupError:
                    pass

    def kill_the_rest(self) -> None:
        """The grace period is over: kill every executor still busy, with its programs."""
        for ex in self.pool.every():
            if ex.queue or ex.parked:
                kill_group(ex)
        self.interrupt_at = float("inf")    # once

    @staticmethod
    def _interrupted(ex: Executor, why: str, results: list[M.ResultWire]) -> None:
        """An executor that ended during the interrupt: its tasks did not finish."""
        now = time.time()
        for i, t in enumerate([*ex.queue, *ex.parked]):
            if i == 0:
                results.append((t.task_id, M.INTERRUPTED, None, M.ErrorInfo(
                    "Interrupted", why, "", None), (ex.started, now)))
            else:
                results.append((t.task_id, M.NOT_STARTED, None, M.ErrorInfo(
                    "Interrupted", "not started: the run was interrupted", "", None),
                    (now, now)))

    # -- executors that die or are killed -------------------------------------------------
    def died(self, ex: Executor, results: list[M.ResultWire], node: str) -> None:
        """``ex`` ended (its pipe closed): its head task failed, the rest run elsewhere, and
        a new executor takes its place (none during an interrupt)."""
        ex.slot.terminate()       # a program it was running must not outlive it
        status = reap(ex.pid)
        if self.interrupt_at is not None:   # interrupted: report, replace nothing
            self._interrupted(ex, f"killed when the run was interrupted ({status})", results)
            self.pool.forget(ex)
            self._replaced(ex)
            return
        head = ex.queue[0] if ex.queue else None
        self._parked_ended(ex, f"it died ({status})", results)
        rest = self.pool.forget(ex)
        self._replaced(ex)
        self._requeue(rest)
        if head is not None:
            tid = head.task_id
            self.state.deadlines.pop(tid, None)
            if self.cancelled.get(tid) is head:
                del self.cancelled[tid]
            else:
                limit = head.options.memory_limit if head.options is not None else None
                over = None
                if limit:                   # the kernel's limit (agent.executor.limits)?
                    from .executor.limits import executor_killed
                    over = executor_killed(tid, limit)
                if over is not None:
                    results.append((tid, M.OVER_MEMORY, None, over, (ex.started, time.time())))
                else:
                    hint = f"; it had a memory limit of {limit:g} GB and may have died " \
                        f"allocating past it (in code that does not raise MemoryError)" \
                        if limit else ""
                    results.append((tid, M.CRASHED, None, M.ErrorInfo(
                        "WorkerDied", f"the executor process running the task died ({status}) "
                        f"on node {node}{hint}", "", None), (ex.started, time.time())))
        self.pool.spawn(io=ex.io)

    def kill(self, ex: Executor, results: list[M.ResultWire]) -> None:
        """Kill ``ex`` (its head task timed out or was cancelled); the rest runs elsewhere."""
        self._parked_ended(ex, "it was killed (a task on it timed out or was cancelled)",
                           results)
        _, rest = self.pool.kill(ex)
        self._replaced(ex)
        self._requeue(rest)
        self.pool.spawn(io=ex.io)

    def _parked_ended(self, ex: Executor, why: str, results: list[M.ResultWire]) -> None:
        """Tasks waiting on ``ex`` for the tasks they called (executor.nested) end with it."""
        parked, ex.parked = ex.parked, []
        now = time.time()
        for t in parked:
            self.pool.parked.pop(t.task_id, None)
            self.state.deadlines.pop(t.task_id, None)
            if self.cancelled.get(t.task_id) is t:
                del self.cancelled[t.task_id]
                continue
            results.append((t.task_id, M.CRASHED, None, M.ErrorInfo(
                "WorkerDied", f"the executor running the task ended while the task waited for "
                f"the tasks it called: {why}", "", None), (now, now)))

    def _replaced(self, ex: Executor) -> None:
        """Values ``ex`` was to make are not coming from it any more."""
        producing = self.state.producing
        for d in [d for d, e in producing.items() if e is ex]:
            del producing[d]

    def _requeue(self, tasks: list[M.TaskMsg]) -> None:
        """Tasks a dead executor had not started go back on the agent's queue; those
        cancelled while queued there are dropped (no result of theirs will come, and the
        one of a copy sent again under the same id must not be taken for theirs)."""
        cancelled = self.cancelled
        for t in tasks:
            if cancelled and cancelled.get(t.task_id) is t:
                del cancelled[t.task_id]
                continue
            if t.refs and self.chaining.hold(t):
                continue
            if t.units == 0:            # an @IO task: the I/O executors' queue
                self.placement.io_queue.append(t)
                continue
            self.queue.push(t)

    def cancel(self, tids: set[int], results: list[M.ResultWire]) -> None:
        """CANCEL: the tasks ``tids`` end wherever they are on the node. (A task waiting
        for the tasks it called goes on: those are cancelled, its wait raises.)"""
        for ex in self.pool.every():
            if not ex.queue:
                continue
            head = ex.queue[0].task_id
            if head in tids:        # (its queue goes back: the cancelled dropped below)
                self.state.deadlines.pop(head, None)
                self.kill(ex, results)
            else:
                self.cancelled.update({t.task_id: t for t in ex.queue[1:] if t.task_id in tids})
        self.chaining.drop(tids)
        self.queue.remove(tids)
        self.placement.drop_io(tids)
