"""What happens when a task ends: success, failure policy, cancellation.

These functions run on the runtime's loop thread with the runtime lock held.
They complete futures, release the tasks waiting for them and apply the
task's ``on_failure`` policy:

RETRY (default)    run again up to ``retries`` times (another node when one
                   exists), then as FAIL
FAIL               outputs carry the error; successors are cancelled with an
                   error naming this task; the run fails
IGNORE             outputs are None; successors run
CANCEL_SUCCESSORS  outputs are None; successors are cancelled (their values
                   None); the run does not fail
"""
from __future__ import annotations

import pickle
import time
from typing import TYPE_CHECKING, Any, Callable, Union

from ..errors import NodeLost, TaskCancelled, TaskError, TaskMemoryExceeded, TaskTimeout
from ..future import FINISHED, Future, notify_done
from ..graph import task as T
from ..graph.task import Task
from ..wire import messages as M
from ..wire import protocol as P
from ..wire.thresholds import MASTER_SHORT
from . import gang, lineage
from .state import RunState

if TYPE_CHECKING:
    from ..providers.handle import NodeHandle

NONE_PAYLOAD = pickle.dumps(None, P.PROTOCOL)
Callbacks = list[tuple[Callable[[Future], Any], Future]]   # run after the lock is released


def finish_future(rt: RunState, fut: Future, cbs: Callbacks) -> None:
    """Mark ``fut`` finished and release the tasks that wait for it."""
    fut._state = FINISHED
    fut._producer = None
    consumers = fut._consumers
    if consumers is not None:
        fut._consumers = None
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
    if fut._wev is not None or fut._cond is not None or fut._done_callbacks_:
        notify_done(fut, cbs)       # (most futures: nobody waits on them yet)


def _ready_event(rt: RunState, t: Task) -> None:
    """READY for the journal, for tasks not known to be short (as their dispatch event)."""
    spec = t.spec
    if not (spec.stats_n and spec.stats_mean < MASTER_SHORT):
        rt.bus.emit(("ready", time.time(), t.id, spec.name, "", None))


def task_done(rt: RunState, task: Task, outputs: list[M.Output], node: NodeHandle,
              cbs: Callbacks) -> None:
    task.state = T.DONE
    if rt.scheduler.gangs:
        gang.release(rt.scheduler, task)
    outs = task.outputs
    if len(outs) == 1 and not task.inouts and type(outputs[0]) is bytes:
        # the common end: one value that came back (no lineage, no INOUT versions)
        outs[0]._payload = outputs[0]
        finish_future(rt, outs[0], cbs)
        _stats(task)
        rt.n_done += 1
        _ended(rt, task)
        return
    name = node.name
    i = 0
    for fut in outs:
        _store(rt, fut, outputs[i], name)
        finish_future(rt, fut, cbs)
        i += 1
    if task.inouts:
        for entry in task.inouts:
            fut = entry.version
            if entry.kind == M.OUT_OBJECT:
                _store(rt, fut, outputs[i], name)
            else:
                fut._result = fut._path
                item = fut._item
                if item is not None and (item.last_done is None
                                         or item.last_done._did < fut._did):
                    item.last_done = fut
            finish_future(rt, fut, cbs)
            i += 1
    held = 0
    for o in outputs:
        if type(o) is M.Held:
            held += o.size
    spec = task.spec
    if held:        # values left on the node: keep lineage; how deep to prefetch (scheduler)
        lineage.remember(task)
        spec.held_mean = held if not spec.held_mean else (3 * spec.held_mean + held) // 4
    if spec.invoker == "python":    # (programs keep theirs: the journal's exit code)
        task.outputs = ()           # the task's rows and groups no longer pin its values
        task.inouts = None
    _stats(task)
    rt.n_done += 1
    _ended(rt, task)


def _stats(task: Task) -> None:
    """The running mean duration of the task's function (prefetch depth, walltime fit)."""
    spec = task.spec
    n = spec.stats_n
    dur = task.t_end - task.t_start
    spec.stats_mean = dur if n == 0 else \
        spec.stats_mean + (dur - spec.stats_mean) / (n + 1 if n < 49 else 50)
    spec.stats_n = n + 1


def _store(rt: RunState, fut: Future, payload: M.Output, node_name: str) -> None:
    if type(payload) is M.Held:         # the value stayed on the node
        if fut._holders is None:
            rt.comm.watch_remote(fut)
        fut._holders = {node_name}
    else:
        fut._payload = payload


def task_failed(rt: RunState, task: Task, status: int, error: M.ErrorInfo | None,
                node: NodeHandle | None, cbs: Callbacks) -> None:
    spec = task.spec
    if status == M.ERROR and error is not None:
        from . import cancel        # a GroupAbort (COMPSsException) is no failure to retry
        abort = cancel.raised_abort(error)
        if abort is not None:
            cancel.abort_group(rt, task, abort, error, node, cbs)
            return
    if rt.scheduler.gangs:
        gang.release(rt.scheduler, task)
    etype, emsg, tb, blob = error or M.ErrorInfo("Error", "unknown", "", None)
    node_name = node.name if node is not None else "-"
    if status == M.INTERRUPTED:
        task_interrupted(rt, task, f"{etype}: {emsg}", node_name, cbs)
        return
    crash = ""
    if status == M.CRASHED or (status == M.LOST and task.state == T.RUNNING):
        # Its worker died under it: not the task's failure, up to the crash limit.
        task.crashes += 1
        if task.crashes <= rt.crash_limit and (status == M.CRASHED or rt.scheduler.fits_ever(
                task.cus, task.mem) or rt.nodes_coming()):
            _retry(rt, task, node_name, f"{etype}: {emsg} (worker death {task.crashes} of at "
                                        f"most {rt.crash_limit})")
            return
        if task.crashes <= rt.crash_limit:      # within the limit: no node can take it
            crash = " (no node left that could run it again)"
        else:
            crash = (f" (its worker died {task.crashes} times, the crash limit is "
                     f"{rt.crash_limit}: if the task kills its worker, e.g. by its memory use "
                     f"or a crash in native code, fix that; else raise --crash-limit)")
    elif status == M.LOST:              # sent there, not started: placed again elsewhere
        if (rt.scheduler.fits_ever(task.cus, task.mem) or rt.nodes_coming()) \
                and task.attempts < 100:
            _retry(rt, task, node_name, f"node {node_name} lost")
            return
    else:
        task.attempts += 1
        retries = spec.retries if spec.retries is not None else rt.retries
        if spec.on_failure == "RETRY" and task.attempts <= retries \
                and status != M.OVER_MEMORY:       # (the same limit would stop it again)
            _retry(rt, task, node_name, f"{etype}: {emsg}")
            return
    cls = TaskTimeout if status == M.TIMEOUT else TaskMemoryExceeded \
        if status == M.OVER_MEMORY else TaskError
    runs = task.attempts + task.crashes
    tries = f" after {runs} attempt{'s' if runs != 1 else ''}"
    msg = (f"task {spec.name} (id {task.id}) failed on node {node_name}{tries}: {etype}: "
           f"{emsg}{crash}")
    logs = rt.logs_command(task.id)
    if logs:
        msg += f"\nlogs: {logs}"
    if tb:
        msg += f"\n\nRemote traceback (task {spec.name} on {node_name}):\n{tb.rstrip()}"
    err = cls(msg, task_name=spec.name, task_id=task.id, node=node_name, remote_traceback=tb,
              kind="timeout" if status == M.TIMEOUT else "memory" if status == M.OVER_MEMORY
              else "error")
    if blob is not None:
        try:
            import cloudpickle
            cause = cloudpickle.loads(blob)
        except Exception:
            cause = None
        if isinstance(cause, TaskMemoryExceeded) and isinstance(err, TaskMemoryExceeded):
            err.limit, err.peak = cause.limit, cause.peak
        elif cause is not None:
            err.__cause__ = cause
    task.error = err
    task.state = T.FAILED
    policy = spec.on_failure
    if policy in ("RETRY", "FAIL"):
        err._reported = False
        rt.failures.append(err)
        for fut in task.all_outputs():
            fut._exception = err
        cancel_successors(rt, task, err, cbs)
        for fut in task.all_outputs():
            finish_future(rt, fut, cbs)
    else:
        for fut in task.all_outputs():
            fut._payload = NONE_PAYLOAD
            fut._result = None
            if policy == "CANCEL_SUCCESSORS":
                fut._cancel_successors = True
        if spec.failure_defaults:       # @on_failure(..., name=value): outputs get defaults
            from .defaults import apply_defaults
            apply_defaults(task, spec.failure_defaults)
        if policy == "CANCEL_SUCCESSORS":
            cancel_successors(rt, task, None, cbs)
        for fut in task.all_outputs():
            finish_future(rt, fut, cbs)
        rt.n_ignored += 1
    rt.n_failed += 1
    _ended(rt, task)


def _retry(rt: RunState, task: Task, node_name: str, why: str) -> None:
    task.excluded = (task.excluded or set()) | {node_name}
    task.node = None
    take_back_chained(rt, task)
    if task.npending > 0:            # a chained task whose producer is not done yet
        task.state = T.SUBMITTED
    else:
        task.state = T.READY
        rt.scheduler.push(task)
    rt.n_retries += 1
    if rt.bus.active:
        rt.bus.emit(("retry", time.time(), task.id, task.spec.name, node_name, why))


def task_restored(rt: RunState, task: Task, outputs: tuple[tuple[Any, ...], ...],
                  values: list[bytes | None], cbs: Callbacks) -> None:
    """A resumed run: the earlier run finished this very call; its outputs come back."""
    task.state = T.DONE
    task.t_start = task.t_end = time.time()
    for fut, out, value in zip(task.all_outputs(), outputs, values):
        if out[0] == "v":
            fut._payload = value
        elif out[0] == "V":             # large buffers: the Packed, pickled in-band
            fut._payload = pickle.loads(value)      # type: ignore[arg-type]  # bytes for "V"
        else:                           # a file version, kept in the earlier run's directory
            fut._path = fut._result = out[1]
            item = fut._item
            if item is not None:
                item.last_done = fut
        finish_future(rt, fut, cbs)
    rt.n_done += 1
    _ended(rt, task)


def task_interrupted(rt: RunState, task: Task, why: str, node_name: str,
                     cbs: Callbacks) -> None:
    """The run's interrupt stopped the task (or kept it from starting on its node)."""
    err = TaskError(f"task {task.spec.name} (id {task.id}) on node {node_name} was "
                    f"interrupted: {why}", task_name=task.spec.name, task_id=task.id,
                    node=node_name, kind="interrupted")
    task.error = err
    task.state = T.INTERRUPTED
    for fut in task.all_outputs():
        fut._exception = err
        finish_future(rt, fut, cbs)
    rt.n_interrupted += 1
    _ended(rt, task)


def cancel_successors(rt: RunState, task: Task, err: BaseException | None,
                      cbs: Callbacks) -> None:
    """Cancel every task downstream of ``task`` (iteratively, graphs can be deep)."""
    stack = [task]
    while stack:
        t = stack.pop()
        for fut in t.all_outputs():
            consumers = fut._consumers
            if not consumers:
                continue
            fut._consumers = None
            for succ in consumers:
                if succ.state == T.DISPATCHED and succ.npending > 0:
                    undispatch(rt, succ)
                if succ.state != T.SUBMITTED:
                    continue
                cancel_task(rt, succ, task, err, cbs, cascade=False)
                stack.append(succ)


def undispatch(rt: RunState, task: Task) -> None:
    """Take back a chained task from its node (its producer failed or moved)."""
    node = task.node
    if node is not None and node.release(task.id) is not None:
        rt.scheduler.freed(node)
        if node.alive:
            rt.comm.cancel_on(node, task.id)
        for d in task.reads or ():   # the value it waited for will not be made there now
            if d._state is not FINISHED and d._holders:
                d._holders.discard(node.name)
    task.node = None
    task.state = T.SUBMITTED


def hand_back(rt: RunState, task: Task, node: NodeHandle, reason: str) -> None:
    """A draining node returns a task it never started: place it again (not a failure)."""
    node.release(task.id)           # (in flight there: _leaving looked it up)
    rt.scheduler.freed(node)
    if rt.scheduler.gangs:
        gang.release(rt.scheduler, task)
    for d in task.reads or ():   # a chained input will not be made there now
        if d._state is not FINISHED and d._holders:
            d._holders.discard(node.name)
    task.node = None
    take_back_chained(rt, task)
    if task.npending > 0:            # chained: its producer has not finished yet
        task.state = T.SUBMITTED
    else:
        task.state = T.READY
        rt.scheduler.push(task)
    if rt.bus.active and not rt.interrupting:
        rt.bus.emit(("retry", time.time(), task.id, task.spec.name, node.name,
                     f"handed back by node {node.name}, which is leaving ({reason})"))


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
        cname = cause.spec.name if hasattr(cause, "spec") else str(cause)
        cid = cause.id if hasattr(cause, "id") else 0
        cerr = TaskCancelled(
            f"task {task.spec.name} (id {task.id}) was cancelled because task {cname} "
            f"(id {cid}) failed:\n{err}", task_name=task.spec.name, task_id=task.id,
            remote_traceback=getattr(err, "remote_traceback", ""), kind="cancelled")
        cerr.__cause__ = err.__cause__ if err.__cause__ is not None else None
        cerr._reported = True   # the root failure is what the run reports
        task.error = cerr
    for fut in task.all_outputs():
        if err is not None:
            fut._exception = task.error
        else:
            fut._payload = NONE_PAYLOAD
            fut._result = None
            fut._cancel_successors = True
    if cascade:
        cancel_successors(rt, task, err, cbs)
    for fut in task.all_outputs():
        fut._state = FINISHED
        fut._producer = None
        notify_done(fut, cbs)
    rt.n_cancelled += 1
    _ended(rt, task)


def node_lost(rt: RunState, node: NodeHandle, reason: str, cbs: Callbacks) -> list[Task]:
    """A node is gone: hand its tasks back; return the tasks to resubmit."""
    node.alive = False
    node.lost_reason = reason
    tasks = list(node.inflight.values())
    node.inflight.clear()
    node.used = 0
    node.mem_used = 0.0
    now = time.time()
    if rt.interrupting:             # the run is being stopped: nothing is retried or failed
        for t in tasks:
            t.t_end = now
            task_interrupted(rt, t, f"its node {node.name} stopped ({reason})", node.name, cbs)
        return tasks
    for t in tasks:
        if t.node is not node:
            # taken back by an earlier one's outcome in this loop (a chained successor of
            # a task that failed or runs again): already cancelled or placed again
            continue
        t.t_end = now
        task_failed(rt, t, M.LOST, M.ErrorInfo("NodeLost", f"node {node.name} was lost: {reason}",
                                               "", None), node, cbs)
    if not rt.scheduler.fits_ever(1, 0) and not rt.nodes_coming():
        fail_everything(rt, NodeLost(f"no nodes left: node {node.name} was lost ({reason})"), cbs)
    elif rt.scheduler.ready and not rt.nodes_coming():
        _fail_unplaceable_gangs(rt, node, cbs)
    return tasks


def _fail_unplaceable_gangs(rt: RunState, lost: NodeHandle, cbs: Callbacks) -> None:
    """Multi-node tasks the remaining nodes can never hold fail instead of waiting."""
    sched = rt.scheduler
    alive = [n for n in sched.nodes if n.usable]
    keep: list[Task] = []
    doomed: list[Task] = []
    for t in sched.ready:
        req = (t.options or {}).get("gang")
        (doomed if req and gang.place(alive, req, False) is None else keep).append(t)
    if not doomed:
        return
    sched.ready.replace(keep)
    for t in doomed:
        spec = t.spec
        assert t.options is not None    # its gang request put it here
        err = TaskError(f"task {spec.name} (id {t.id}) needs {t.options['gang']['procs']} "
                        f"processes, which the remaining nodes can never give after node "
                        f"{lost.name} was lost ({lost.lost_reason})", task_name=spec.name,
                        task_id=t.id, node="-", kind="error")
        err._reported = False
        rt.failures.append(err)
        _fail_unrun(rt, t, err, cbs)


def fail_everything(rt: RunState, exc: BaseException, cbs: Callbacks) -> None:
    """No node can run anything any more: every unfinished task fails."""
    err = TaskError(str(exc), kind="lost")
    err._reported = False
    rt.failures.append(err)
    stranded = rt.scheduler.tasks()
    for w in rt.comm.drop_fetches():     # who waited for data no node can send now
        if isinstance(w, Task):
            if w.state == T.READY:
                stranded.append(w)
        else:
            w.set()
    for t in stranded:
        if t.state not in T.FINAL_STATES:
            _fail_unrun(rt, t, err, cbs)
    rt.scheduler.ready.clear()
    rt.dead = str(exc)


def _fail_unrun(rt: RunState, t: Task, err: TaskError, cbs: Callbacks) -> None:
    """Fail a task that cannot run at all; its successors are cancelled."""
    t.state = T.FAILED
    t.error = err
    for fut in t.all_outputs():
        fut._exception = err
    cancel_successors(rt, t, err, cbs)
    for fut in t.all_outputs():
        finish_future(rt, fut, cbs)
    rt.n_failed += 1
    _ended(rt, t)


def _exit_code(task: Task) -> int | None:
    """The exit code an external program's task returned (its result), for the journal."""
    spec = task.spec
    if spec.invoker not in ("binary", "ompss", "mpi") or not task.outputs or (
            spec.invoker == "mpi" and not (spec.invoker_cfg or {}).get("binary")):
        return None
    payload = task.outputs[0]._payload
    try:
        value = pickle.loads(payload) if type(payload) is bytes else None
    except Exception:  # noqa: BLE001 - the journal does without
        return None
    return value if type(value) is int else None


def _ended(rt: RunState, task: Task) -> None:
    """The task is over: counters, its journal rows, and what it no longer holds.

    An ended task keeps no value left on a node alive: such inputs are
    dropped here (the journal's rows need only their data ids), and such
    outputs in :func:`task_done`, so they are freed on their node the moment
    the caller lets go of them, not when the bus has delivered the task's
    rows. (Values that live only in the master, small by the inline limit,
    stay until then: no work per task for them.)
    """
    rt.n_active -= 1
    task.reads = None       # free what the graph no longer needs (1M-task runs)
    bus = rt.bus
    if bus.active:
        # The bus makes the rows later, in its thread (events.py): the task goes as it
        # is, with its arguments, which its submitted row may still need.
        refs = task.refs
        if refs is not None and _holds_node_values(refs):
            task.refs = _row_refs(refs)
        if task.state == T.DONE:
            bus.done_rows.append(task)
        else:
            bus.emit((task.state.lower(), task.t_end or time.time(), task.id, task.spec.name,
                      task.node.name if task.node is not None else "",
                      (task.t_start, task.t_end, task.error and str(task.error).split("\n")[0],
                       task.error, task.attempts, task.t_dispatch)))
    else:
        task.argv = None
        task.kwargs = None
        task.refs = None
    if rt.n_active == 0 and rt.idle_waiters:
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
            obj = (None, [_as_row(f) for f in futs])    # (the snapshot: not shown)
        elif type(obj) is tuple:
            obj = tuple(_as_row(f) for f in obj)
        else:
            obj = _as_row(obj)
        out.append((path, kind, obj))
    return out
