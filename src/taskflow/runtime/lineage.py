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
from typing import Any

from ..graph import task as T


def remember(task: Any) -> None:
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

    def __init__(self, rt: Any, task: Any, fut: Any, producer: Any) -> None:
        self.rt, self.task, self.fut, self.producer = rt, task, fut, producer

    def one_done(self) -> None:
        if self.task.state != T.READY:
            return
        if self.fut._exception is not None:
            from . import outcomes
            cbs: list = []
            outcomes.cancel_task(self.rt, self.task, self.producer, self.fut._exception, cbs)
            for fn, f in cbs:
                try:
                    fn(f)
                except Exception:  # noqa: BLE001
                    pass
            return
        self.rt.scheduler.push(self.task)


def recompute(rt: Any, fut: Any, waiter: Any) -> bool:
    """No live node holds ``fut``: rerun its producer; ``waiter`` resumes after it."""
    lin = getattr(fut, "_lineage", None)
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
            import time
            rt.bus.emit(("retry", time.time(), task.id, task.spec.name, "",
                         "recomputing a value lost with its node"))
    elif task.state in (T.FAILED, T.CANCELLED):
        return False
    w = _EventWaiter(waiter) if hasattr(waiter, "set") else _TaskWaiter(rt, waiter, fut, task)
    fut._wev = (fut._wev or []) + [w]
    from ..future import PENDING
    fut._state = PENDING
    return True
