"""Recompute values that were lost with a node, from the tasks that made them.

A result larger than the inline limit stays on the node that produced it
(``fut._holders``). When that node is lost, the value is gone; the task
that produced it is remembered (``fut._lineage``: the task and the inputs it
was called with), so whoever needs the value next — a task about to be
dispatched, or ``wait_on`` in the main program — makes the runtime run that
task again. Its own inputs follow the same rule, recursively. Called with
the runtime lock held.
"""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING

from ..future import PENDING
from ..graph import task as T

if TYPE_CHECKING:
    from ..future import Future
    from ..graph.task import Task
    from .outcomes import Callbacks
    from .state import RunState, Waiter


def remember(task: Task) -> None:
    """``task`` left a value on a node: keep what is needed to run it again."""
    lin = (task, task.argv, task.kwargs, task.refs, task.reads)
    for fut in task.all_outputs():
        if fut._payload is None and fut._holders:
            fut._lineage = lin


class _EventWaiter:
    __slots__ = ("event",)

    def __init__(self, event: threading.Event) -> None:
        self.event = event

    def one_done(self) -> None:
        self.event.set()


class _TaskWaiter:
    """A task that was about to be dispatched: back to the ready queue once recomputed."""
    __slots__ = ("rt", "task", "fut", "producer")

    def __init__(self, rt: RunState, task: Task, fut: Future, producer: Task) -> None:
        self.rt, self.task, self.fut, self.producer = rt, task, fut, producer

    def one_done(self) -> None:
        if self.task.state != T.READY:
            return
        if self.fut._exception is not None:
            from . import outcomes
            cbs: Callbacks = []
            outcomes.cancel_task(self.rt, self.task, self.producer, self.fut._exception, cbs)
            for fn, f in cbs:
                try:
                    fn(f)
                except Exception:  # noqa: BLE001
                    pass
            return
        self.rt.scheduler.push(self.task)


def recompute(rt: RunState, fut: Future, waiter: Waiter) -> bool:
    """No live node holds ``fut``: rerun its producer; ``waiter`` resumes after it."""
    lin = fut._lineage
    if lin is None:
        return False
    task = lin[0]
    if task.state == T.DONE:
        task.argv, task.kwargs, task.refs, task.reads = lin[1:]
        task.state = T.READY
        task.node = None
        rt.n_active += 1
        rt.n_done -= 1
        rt.n_retries += 1
        for f in task.all_outputs():
            f._holders = None
        rt.scheduler.push(task)
        if rt.bus.active:
            rt.bus.emit(("retry", time.time(), task.id, task.spec.name, "",
                         "recomputing a value lost with its node"))
    elif task.state in (T.FAILED, T.CANCELLED):
        return False
    w = _EventWaiter(waiter) if isinstance(waiter, threading.Event) else \
        _TaskWaiter(rt, waiter, fut, task)
    fut._wev = (fut._wev or []) + [w]
    fut._state = PENDING
    return True
