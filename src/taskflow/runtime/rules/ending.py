"""What every end of a task does to the graph, however it ended.

Its futures finish (the tasks waiting for them become ready, whoever waits on
them wakes), or its successors are cancelled with it; a chained successor
already sent to a node is taken back; and :func:`task_ended` keeps the
counters and gives the journal its rows. The outcome rules
(:mod:`.outcomes`: a result, a failure and its policy, a lost node),
cancellations (:mod:`.cancel`) and lineage (:mod:`.lineage`) build on these
and import them; this module imports none of them. Everything here runs on
the loop thread with the run's lock held.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any, Callable, Union

from ...errors import TaskCancelled, TaskError, with_cause
from ...future import FINISHED, Future
from ...graph import task as T
from ...graph.keys import waiting_key
from ...graph.recorded import Snapshot
from ...graph.task import Task
from ...providers.handle import placed_on
from ...wire import messages as M
from ...wire.thresholds import MASTER_SHORT
from ...events import Ready, ended

if TYPE_CHECKING:
    from ..state import RunState

Callbacks = list[tuple[Callable[[Future], Any], Future]]   # run after the lock is released


def finish_future(rt: RunState, fut: Future, cbs: Callbacks) -> None:
    """``fut``'s value, error or holders are set: mark it finished, release the tasks
    that wait for it and wake whoever waits on it."""
    consumers = fut.settle(cbs)
    if consumers is not None:
        release(rt, fut, consumers, cbs)


def release(rt: RunState, fut: Future, consumers: list[Task], cbs: Callbacks) -> None:
    """``fut`` just finished with ``consumers`` (:meth:`Future.finish`, ``settle``): they
    go ready (or get the value, when chained); then whoever waits on ``fut`` wakes."""
    push = rt.scheduler.push
    for t in consumers:
        t.npending -= 1
        if t.state == T.SUBMITTED:
            if t.npending == 0:
                t.state = T.READY
                push(t)
                if rt.bus.active:
                    _ready_event(rt, t)
        elif t.state == T.DISPATCHED and fut._payload is not None:
            # chained: make sure it gets there (DISPATCHED: its node is set)
            rt.comm.push_data(t.node, fut)  # type: ignore[arg-type]
    fut.notify_done(cbs)


def _ready_event(rt: RunState, t: Task) -> None:
    """READY for the journal, for tasks not known to be short (as their dispatch event)."""
    spec = t.spec
    run = rt.spec_runs[spec]
    if not (run.n and run.mean < MASTER_SHORT):
        rt.bus.emit(Ready("ready", time.time(), t.id, spec.name, "", None))


def cancel_successors(rt: RunState, task: Task, err: BaseException | None,
                      cbs: Callbacks) -> None:
    """Cancel every task downstream of ``task`` (iteratively, graphs can be deep)."""
    stack = [task]
    while stack:
        t = stack.pop()
        for fut in t.all_outputs():
            consumers = fut.take_consumers()
            if not consumers:
                continue
            for succ in consumers:
                if succ.state == T.DISPATCHED and succ.npending > 0:
                    undispatch(rt, succ)
                if succ.state != T.SUBMITTED:
                    continue
                cancel_task(rt, succ, task, err, cbs, cascade=False)
                stack.append(succ)


def undispatch(rt: RunState, task: Task) -> None:
    """Take back a chained task from its node (its producer failed or moved)."""
    node = placed_on(task)
    if node is not None and node.release(task.id) is not None:
        rt.scheduler.freed(node)
        if node.alive:
            rt.comm.cancel_on(node, task.id)
        for d in task.reads or ():   # the value it waited for will not be made there now
            if d._state is not FINISHED:
                d.not_held_by(node.name)
    task.node = None
    task.state = T.SUBMITTED


def take_back_chained(rt: RunState, task: Task) -> None:
    """Undispatch every chained task downstream of ``task`` (it is to run again)."""
    stack = [task]
    while stack:
        t = stack.pop()
        for fut in t.all_outputs():
            for c in fut._consumers or ():
                if c.state == T.DISPATCHED and c.npending > 0:
                    undispatch(rt, c)
                    stack.append(c)


def cancel_task(rt: RunState, task: Task, cause: Union[Task, str], err: BaseException | None,
                cbs: Callbacks, cascade: bool = True) -> None:
    """Cancel a task that never ran; ``err`` None means its values become None."""
    task.state = T.CANCELLED
    if err is not None:
        if not isinstance(cause, str):
            cname, cid = cause.spec.name, cause.id
        elif isinstance(err, TaskError) and err.task_id:    # (a finished future let go
            cname, cid = err.task_name or "?", err.task_id  # of its task: its error names it)
        else:
            cname, cid = cause, 0
        # (reported already, as every new TaskError is: the root failure is what the
        # run reports)
        # TaskCancelled(ZeroDivisionError) when the root failure was one: what the program
        # catches the failure by catches its consequences too
        cerr = with_cause(
            TaskCancelled, f"task {task.spec.name} (id {task.id}) was cancelled because task "
            f"{cname} (id {cid}) failed:\n{err}", err.__cause__, task_name=task.spec.name,
            task_id=task.id, remote_traceback=getattr(err, "remote_traceback", ""),
            kind="cancelled")
        cerr.root = err         # met with it (TaskError.met)
        task.error = cerr
        for fut in task.all_outputs():
            fut.fail(cerr)
    else:
        for fut in task.all_outputs():
            fut.void(cancel_readers=True)
    if cascade:
        cancel_successors(rt, task, err, cbs)
    for fut in task.all_outputs():
        fut.finish_cancelled(cbs)
    task_ended(rt, task)


def task_ended(rt: RunState, task: Task) -> None:
    """The task is over: counters, its journal rows, and what it no longer holds.

    An ended task keeps no value left on a node alive: such inputs are
    dropped here (the journal's rows need only their data ids), and such
    outputs in :func:`.outcomes.task_done`, so they are freed on their node
    the moment the caller lets go of them, not when the bus has delivered the
    task's rows. (Values that live only in the master, small by the inline
    limit, stay until then: no work per task for them.)
    """
    active = rt.tally.ended(task.state)
    task.reads = None       # free what the graph no longer needs (1M-task runs)
    if task.nest is not None and rt.nesting is not None:     # it called tasks
        rt.nesting.ended(task)
    if rt.streams is not None:                      # it had streams (runtime.streams)
        rt.streams.ended(task)
    bus = rt.bus
    if task.ordinal and task.key is None and task.state == T.DONE:
        waiting_key(task)   # its key waited (graph.keys): made when asked, from the task
        keys = rt.keys
        if keys is not None and task.refs is not None and task.outputs and \
                task.outputs[0]._payload is None and task.outputs[0]._holders:
            keys.held(task)     # its value stayed on its node: its record now
    if bus.active:
        # The bus makes the rows later, in its thread (events.py): the task goes as it
        # is, with its arguments, which its submitted row may still need.
        refs = task.refs
        if refs is not None and _holds_node_values(refs):
            if rt.keys is not None and task.ordinal and task.key is None and \
                    task.state == T.DONE:
                rt.keys.let_go(task)    # what its key needs of the futures let go here
            task.refs = _row_refs(refs)
        if task.state == T.DONE:
            bus.done_rows.append(task)
        else:
            bus.emit(ended(task))
    else:
        task.argv = None
        task.kwargs = None
        task.refs = None
    if active == 0 and rt.idle_waiters and (rt.nesting is None or not rt.nesting.calls):
        for w in rt.idle_waiters:
            w.set()
        rt.idle_waiters.clear()


def _holds_node_values(refs: list[Any]) -> bool:
    """Some input of a call is a value left on a node (its row must not keep it there)."""
    for _, kind, obj in refs:
        if kind == M.REF_VALUE:
            if obj._holders:
                return True
        elif kind == M.REF_PICKLED:
            for f in obj[1]:
                if f._holders:
                    return True
    return False


def _as_row(obj: Any) -> Any:
    return (obj._did, obj._path) if type(obj) is Future else obj


def _row_refs(refs: list[Any]) -> list[Any]:
    """A call's resolved arguments as its journal row shows them: futures become
    (data id, path), as the journal's pickler reduces them (journal/wire.py)."""
    out = []
    for path, kind, obj in refs:
        if kind == M.REF_PICKLED:
            blob, futs = obj
            if type(obj) is Snapshot:   # a large argument: the journal hashes its pickle
                obj = (blob, [_as_row(f) for f in futs], obj.what)
            else:
                obj = (None, [_as_row(f) for f in futs])    # (the snapshot: not shown)
        elif type(obj) is tuple:
            obj = tuple(_as_row(f) for f in obj)
        else:
            obj = _as_row(obj)
        out.append((path, kind, obj))
    return out
