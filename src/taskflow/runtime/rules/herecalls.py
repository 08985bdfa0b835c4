"""Calls a running task's executor runs itself (agent/executor/runhere.py): the master's
side. Such a call is made as any call of a task in a task (runtime.nesting), then held
running on its parent's node with no unit of it (its parent's slot runs it), until its
end comes in the parent's frames: then it ends as a dispatched task does."""
from __future__ import annotations

from collections import deque
from typing import TYPE_CHECKING, Any, Callable

from ...graph import task as T
from ...wire import messages as M
from . import outcomes
from .cancel import cancel_tasks
from .ending import Callbacks

if TYPE_CHECKING:
    from ...providers.handle import NodeHandle
    from ..state import RunState


def take(rt: RunState, out: deque[tuple[Any, Any]], cbs: Callbacks,
         logs: Callable[[NodeHandle, list[M.LogWire]], None]) -> None:
    """The loop thread, the lock held: the ends the nesting thread passed on, in order."""
    while out:
        rec, e = out.popleft()
        if type(e) is str:
            doomed(rt, rec, e, cbs)
        else:
            ended(rt, rec, e, cbs, logs)


def ended(rt: RunState, rec: Any, e: M.NestHereEnd, cbs: Callbacks,
          logs: Callable[[NodeHandle, list[M.LogWire]], None]) -> None:
    """A call run in its parent's executor ended (the loop thread, the lock held): its lines, then
    its end as a dispatched task's (its retries and TaskError are the master's); the
    dispatched calls it made are cancelled if it failed (as a failed parent's are)."""
    task = rec.here.pop(e.seq, None)
    under = rec.under.pop(e.seq, None) if rec.under else None
    if task is None:
        return              # cancelled meanwhile (its parent's end), or never running here
    node = rec.node
    if e.lines:
        logs(node, [(task.id, t, level, line) for t, level, line in e.lines])
    if task.state is T.RUNNING:
        task.t_start, task.t_end = e.t0, e.t1
        if e.error is None:
            outcomes.task_done(rt, task, [e.result], node, cbs)
        else:
            stopped = e.error.type_name == "KeyboardInterrupt"     # (the run's interrupt)
            outcomes.task_failed(rt, task, M.INTERRUPTED if stopped else M.ERROR, e.error,
                                 node, cbs)
    if under and task.state is not T.DONE:
        cancel_tasks(rt, under, f"its parent task {task.spec.name} (id {task.id}) failed",
                     cbs)


def doomed(rt: RunState, rec: Any, why: str, cbs: Callbacks) -> None:
    """Calls that were running in the executor of a task that failed, was cancelled or
    runs again, and whose end did not come (it was sent before the parent's): cancelled."""
    tasks, rec.here = list(rec.here.values()), {}
    cancel_tasks(rt, tasks, why, cbs)
