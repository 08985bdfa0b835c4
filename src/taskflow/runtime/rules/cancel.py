"""Cancelling tasks that have not ended: task groups, group aborts, ``stop(code)``.

A cancelled task that waits (submitted or ready) never runs; one that was
sent to a node is taken back (``CANCEL``: the node kills the executor
running it, so a program it started gets SIGTERM) and its slots are free
again. Its values raise :class:`~taskflow.errors.TaskCancelled` naming why,
its successors are cancelled the same way, and nothing that already ended
changes. These functions run with the run's lock held.

:func:`abort_group` is what happens when a task raises
:class:`~taskflow.errors.GroupAbort` (PyCOMPSs's ``COMPSsException``): the
task is not retried, the rest of its innermost group is cancelled, and the
exception waits in ``group_aborts`` for the program to reach the group's
barrier (``TaskGroup`` exit, ``barrier_group``), where it is raised.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Iterable

from ...errors import GroupAbort, TaskCancelled, TaskError
from ...graph import task as T
from ...providers.handle import placed_on
from ..scheduling import gang
from .ending import Callbacks, cancel_successors, finish_future, task_ended

if TYPE_CHECKING:
    from ...graph.task import Task
    from ...providers.handle import NodeHandle
    from ...wire.messages import ErrorInfo
    from ..state import RunState


def cancel_tasks(rt: RunState, tasks: Iterable[Task], why: str, cbs: Callbacks) -> int:
    """Cancel every task of ``tasks`` that has not ended; return how many were."""
    doomed = [t for t in tasks if t.state not in T.FINAL_STATES]
    if not doomed:
        return 0
    ready = {id(t) for t in doomed if t.state == T.READY}
    if ready:
        sched = rt.scheduler
        sched.ready.replace([t for t in sched.ready if id(t) not in ready])
    for t in doomed:
        if t.state in T.FINAL_STATES:        # cancelled above as a successor of another one
            continue
        if t.state in (T.DISPATCHED, T.RUNNING):
            _take_back(rt, t)
        _cancel_one(rt, t, why, cbs)
    rt.comm.wake()
    return len(doomed)


def cancel_all(rt: RunState, why: str, cbs: Callbacks) -> int:
    """Cancel everything that has not ended (``stop(code)`` with a code other than 0).

    Every waiting task is downstream of a ready or a sent one, so cancelling
    those with their successors reaches them all.
    """
    tasks = list(rt.scheduler.ready)
    for n in rt.nodes:
        tasks.extend(n.inflight.values())
    return cancel_tasks(rt, tasks, why, cbs)


def _take_back(rt: RunState, t: Task) -> None:
    node = placed_on(t)
    if node is not None and node.release(t.id) is not None:
        if node.alive:
            rt.comm.cancel_on(node, t.id)
    if rt.scheduler.gangs:
        gang.release(rt.scheduler, t)


def _cancel_one(rt: RunState, t: Task, why: str, cbs: Callbacks) -> None:
    t.state = T.CANCELLED
    # (reported already, as every new TaskError is: a cancellation asked for is no failure
    # of the run)
    err = TaskCancelled(f"task {t.spec.name} (id {t.id}) was cancelled: {why}",
                        task_name=t.spec.name, task_id=t.id, kind="cancelled")
    t.error = err
    outs = t.all_outputs()
    for fut in outs:
        fut.fail(err)
    cancel_successors(rt, t, err, cbs)
    for fut in outs:
        fut.finish_cancelled(cbs)
    task_ended(rt, t)


_ORDINARY = frozenset({"Exception", "ValueError", "TypeError", "KeyError", "IndexError",
                       "RuntimeError", "ZeroDivisionError", "AttributeError", "ProgramFailed",
                       "FileNotFoundError", "OSError", "AssertionError", "NameError"})


def raised_abort(error: ErrorInfo | None) -> BaseException | None:
    """The GroupAbort a failed task raised, if that is why it failed."""
    if error is None:
        return None
    type_name, _, _, blob = error
    if blob is None or type_name in _ORDINARY:
        return None
    try:
        import cloudpickle
        exc = cloudpickle.loads(blob)
    except Exception:  # noqa: BLE001 - not rebuildable here: an ordinary failure
        return None
    return exc if isinstance(exc, GroupAbort) else None


def abort_group(rt: RunState, task: Task, exc: BaseException, error: ErrorInfo,
                node: NodeHandle | None, cbs: Callbacks) -> None:
    """``task`` raised GroupAbort: no retry; its group's other tasks are cancelled."""
    spec = task.spec
    if rt.scheduler.gangs:
        gang.release(rt.scheduler, task)
    task.attempts += 1
    node_name = node.name if node is not None else "-"
    group = task.group[-1] if task.group else None
    where = f"in task group {group!r}" if group is not None else \
        "outside any task group (raise it in a task called inside `with TaskGroup(...)`)"
    msg = (f"task {spec.name} (id {task.id}) raised {type(exc).__name__} {where} on node "
           f"{node_name}: {exc}")
    logs = rt.logs_command(task.id)
    if logs:
        msg += f"\nlogs: {logs}"
    _, _, tb, _ = error
    if tb:
        msg += f"\n\nRemote traceback (task {spec.name} on {node_name}):\n{tb.rstrip()}"
    err = TaskError(msg, task_name=spec.name, task_id=task.id, node=node_name,
                    remote_traceback=tb,
                    kind="abort" if group is not None else "error")
    err.__cause__ = exc
    rt.add_failure(err)             # claimed (removed) at the group's barrier
    task.error = err
    task.state = T.FAILED
    outs = task.all_outputs()
    for fut in outs:
        fut.fail(err)
    cancel_successors(rt, task, err, cbs)
    for fut in outs:
        finish_future(rt, fut, cbs)
    task_ended(rt, task)
    if group is not None:
        rt.group_aborts.setdefault(group, (err, exc))
        cancel_tasks(rt, rt.groups.get(group, ()),
                     f"task {spec.name} (id {task.id}) raised {type(exc).__name__} in task "
                     f"group {group!r}: {exc}", cbs)


def claim_abort(rt: RunState, group: str) -> BaseException | None:
    """The group's pending abort, now seen by the program (it no longer fails the run)."""
    entry = rt.group_aborts.pop(group, None)
    if entry is None:
        return None
    err, exc = entry
    if err in rt.failures:
        rt.failures.remove(err)
    err.seen()
    exc.task_error = err          # type: ignore[attr-defined]  # where and why, for users
    return exc
