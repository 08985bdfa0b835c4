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

What every end shares (finishing futures, cancelling successors, the
counters and journal rows) is in :mod:`.ending`, below this module and
:mod:`.cancel` and :mod:`.lineage`, which use it too.
"""
from __future__ import annotations

import logging
import pickle
import time
from typing import TYPE_CHECKING, Any

from ...errors import NodeLost, TaskError, TaskMemoryExceeded, TaskTimeout, with_cause
from ...future import FINISHED, Future
from ...graph import task as T
from ...graph.task import Task
from ...providers.handle import placed_on
from ...wire import messages as M
from . import cancel, filehints, lineage
from ..scheduling import gang, resources
from ...events import Retry
from .ending import Callbacks as Callbacks     # (named here by the dispatcher's annotations)
from .ending import cancel_successors, finish_future, release, take_back_chained, task_ended

if TYPE_CHECKING:
    from ...providers.handle import NodeHandle
    from ..state import RunState

log = logging.getLogger("taskflow")
LARGE_VALUE = 256 * 2**20   # bytes of values one call makes above which it is said (_said_large)


def task_done(rt: RunState, task: Task, outputs: list[M.Output], node: NodeHandle,
              cbs: Callbacks) -> None:
    task.state = T.DONE
    if rt.scheduler.gangs:
        gang.release(rt.scheduler, task)
    outs = task.outputs
    if len(outs) == 1 and not task.inouts and type(outputs[0]) is bytes:
        # the common end: one value that came back (no lineage, no INOUT versions)
        out = outs[0]
        consumers = out.finish(outputs[0], cbs)
        if consumers is not None:
            release(rt, out, consumers, cbs)
        rt.spec_runs[task.spec].ran(task.t_end - task.t_start if task.nest is None
                                     else task.nest.held(task))
        task_ended(rt, task)
        return
    name = node.name
    i = 0
    for fut in outs:
        _finish_output(rt, fut, outputs[i], name, cbs)
        i += 1
    if task.inouts:
        for entry in task.inouts:
            fut = entry.version
            if entry.kind == M.OUT_OBJECT:
                _finish_output(rt, fut, outputs[i], name, cbs)
            else:
                fut.file_made()
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
    run = rt.spec_runs[spec]
    if held:        # values left on the node: keep lineage; how deep to prefetch (scheduler)
        lineage.remember(task)
        run.left(held)
        if held >= LARGE_VALUE:
            _said_large(rt, task, held, name)
    if spec.invoker == "python" and (task.key is not None or not task.ordinal):
        # (programs keep theirs: the journal's exit code; a plain call whose key waited
        # keeps its one until the resume log has it: runtime/recovery/log.py ResumeLog.ended)
        task.outputs = ()           # the task's rows and groups no longer pin its values
        task.inouts = None
    run.ran(task.t_end - task.t_start if task.nest is None else task.nest.held(task))
    task_ended(rt, task)


def _said_large(rt: RunState, task: Task, size: int, node: str) -> None:
    """A value this large moves slowly and costs the memory of whoever reads it: said
    once per function (Dask warns likewise), with the file-based way."""
    said = rt.said_large
    name = task.spec.name
    if name in said or len(said) >= 1000:
        return
    said.add(name)
    amount = f"{size / 2**30:.1f} GiB" if size >= 2**30 else f"{size / 2**20:.0f} MiB"
    log.warning("task %s (id %d) made %s of values, kept on node %s: each read elsewhere "
                "moves them (wait_on brings them into this process's memory); for values this "
                "large, write a file (FILE_OUT) and pass its path", name, task.id, amount, node)


def _finish_output(rt: RunState, fut: Future, out: M.Output, node_name: str,
                   cbs: Callbacks) -> None:
    """One value of a task that ended well: it came back, or it stayed on the node."""
    if type(out) is M.Held:
        fut.left_on(node_name)
        rt.comm.watch_remote(fut)
        finish_future(rt, fut, cbs)
        return
    consumers = fut.finish(out, cbs)
    if consumers is not None:
        release(rt, fut, consumers, cbs)


def task_failed(rt: RunState, task: Task, status: int, error: M.ErrorInfo | None,
                node: NodeHandle | None, cbs: Callbacks) -> None:
    spec = task.spec
    if status == M.ERROR and error is not None:
        # a GroupAbort (COMPSsException) is no failure to retry
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
    if status == M.NOT_STARTED:     # the interrupt came first: nothing ran, nothing stopped
        task.t_start = 0.0
        cancel.cancel_tasks(rt, [task], "never started: the run was interrupted", cbs)
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
            crash = (" (it was running there; no node left that could run it again)"
                     if status == M.LOST else " (no node left that could run it again)")
        else:
            crash = (f" (its worker died {task.crashes} times, the crash limit is "
                     f"{rt.crash_limit}: if the task kills its worker, e.g. by its memory use "
                     f"or a crash in native code, fix that; else raise --crash-limit)")
    elif status == M.LOST:              # sent there, not started: placed again elsewhere
        if (rt.scheduler.fits_ever(task.cus, task.mem) or rt.nodes_coming()) \
                and task.attempts < 100:
            _retry(rt, task, node_name, f"node {node_name} lost", rerun=False)
            return
        crash = " (sent there, it had not started; no node left that could run it)"
    elif status == M.MISSING:           # its node lacked an input: not started, goes again
        _retry(rt, task, node_name, f"{etype}: {emsg}", rerun=False)
        return
    else:
        task.attempts += 1
        retries = spec.retries if spec.retries is not None else rt.retries
        if spec.on_failure == "RETRY" and task.attempts <= retries \
                and status != M.OVER_MEMORY:       # (the same limit would stop it again)
            _retry(rt, task, node_name, f"{etype}: {emsg}")
            return
    if task.inouts:                     # the user's paths, not the run's file versions
        emsg, tb = filehints.in_user_paths(task, etype, emsg, tb)
    if status == M.TIMEOUT:             # one name for it, what ran and what to do
        etype, emsg = "TaskTimeout", _timed_out(task, emsg)
    cls = TaskTimeout if status == M.TIMEOUT else TaskMemoryExceeded \
        if status == M.OVER_MEMORY else TaskError
    runs = task.attempts + task.crashes
    # (none: it never started, lost with its node before; the reason says so, not "0 attempts")
    tries = f" after {runs} attempt{'s' if runs != 1 else ''}" if runs else ""
    msg = (f"task {spec.name} (id {task.id}) failed on node {node_name}{tries}: {etype}: "
           f"{emsg}{crash}")
    logs = rt.logs_command(task.id)
    if logs:
        msg += f"\nlogs: {logs}"
    if tb:
        msg += f"\n\nRemote traceback (task {spec.name} on {node_name}):\n{tb.rstrip()}"
    cause = None
    if blob is not None:
        try:
            import cloudpickle
            cause = cloudpickle.loads(blob)
        except Exception:
            cause = None
    kind = "timeout" if status == M.TIMEOUT else "memory" if status == M.OVER_MEMORY \
        else "error"
    if cls is TaskError and cause is not None:      # TaskError(ZeroDivisionError)
        err = with_cause(cls, msg, cause, task_name=spec.name, task_id=task.id, node=node_name,
                         remote_traceback=tb, kind=kind)
    else:
        err = cls(msg, task_name=spec.name, task_id=task.id, node=node_name,
                  remote_traceback=tb, kind=kind)
        if isinstance(cause, TaskMemoryExceeded) and isinstance(err, TaskMemoryExceeded):
            err.limit, err.peak = cause.limit, cause.peak
        elif cause is not None:
            err.__cause__ = cause
    task.error = err
    task.state = T.FAILED
    policy = spec.on_failure
    if policy in ("RETRY", "FAIL"):
        rt.add_failure(err)
        for fut in task.all_outputs():
            fut.fail(err)
        cancel_successors(rt, task, err, cbs)
        for fut in task.all_outputs():
            finish_future(rt, fut, cbs)
    else:
        cancels = policy == "CANCEL_SUCCESSORS"
        for fut in task.all_outputs():
            fut.void(cancel_readers=cancels)
        if spec.failure_defaults:       # @on_failure(..., name=value): outputs get defaults
            from .defaults import apply_defaults
            apply_defaults(task, spec.failure_defaults)
        if policy == "CANCEL_SUCCESSORS":
            cancel_successors(rt, task, None, cbs)
        for fut in task.all_outputs():
            finish_future(rt, fut, cbs)
        rt.tally.ignored_one()
    task_ended(rt, task)


def _timed_out(task: Task, emsg: str) -> str:
    """``ran longer than time_out=5 s``, with the program it ran and the fix."""
    spec = task.spec
    program = getattr(spec.program, "binary", None) or getattr(spec.program, "kind", None)
    what = f" (the program {program})" if program else ""
    return (f"{emsg}{what} and was stopped; if it needs longer, raise its time_out "
            f"(@task(time_out=...) on {spec.name}), else find why it hangs (taskflow logs "
            f"shows its output)")


def _retry(rt: RunState, task: Task, node_name: str, why: str, rerun: bool = True) -> None:
    """``task`` goes back to the ready queue; ``rerun``: it had started, so it runs again
    (the summary's "retried" counts those: the journal's attempts beyond the first)."""
    task.excluded = (task.excluded or set()) | {node_name}
    if task.nest is not None and rt.nesting is not None:    # its children of this attempt
        rt.nesting.again(task, placed_on(task), why)
    if rt.streams is not None and task.id in rt.streams.by_task:     # streams it produced
        rt.streams.again(task, why, why.startswith("NodeLost"))
    task.node = None
    take_back_chained(rt, task)
    if task.npending > 0:            # a chained task whose producer is not done yet
        task.state = T.SUBMITTED
    else:
        task.state = T.READY
        rt.scheduler.push(task)
    if rerun:
        rt.tally.retried()
    if rt.bus.active:
        rt.bus.emit(Retry("retry", time.time(), task.id, task.spec.name, node_name, why))


def task_restored(rt: RunState, task: Task, outputs: tuple[tuple[Any, ...], ...],
                  values: list[bytes | None], cbs: Callbacks) -> None:
    """A resumed run: the earlier run finished this very call; its outputs come back."""
    task.state = T.DONE
    task.t_start = task.t_end = time.time()
    for fut, out, value in zip(task.all_outputs(), outputs, values):
        if out[0] == "v":
            consumers = fut.finish(value, cbs)
        elif out[0] == "V":             # large buffers: the Packed, pickled in-band
            consumers = fut.finish(pickle.loads(value), cbs)  # type: ignore[arg-type]  # bytes for "V"
        else:                           # a file version, kept in the earlier run's directory
            fut.file_made(out[1])
            item = fut._item
            if item is not None:
                item.last_done = fut
            consumers = fut.settle(cbs)
        if consumers is not None:
            release(rt, fut, consumers, cbs)
    task_ended(rt, task)


def task_interrupted(rt: RunState, task: Task, why: str, node_name: str,
                     cbs: Callbacks) -> None:
    """The run's interrupt stopped the task (or kept it from starting on its node)."""
    err = TaskError(f"task {task.spec.name} (id {task.id}) on node {node_name} was "
                    f"interrupted: {why}", task_name=task.spec.name, task_id=task.id,
                    node=node_name, kind="interrupted")
    task.error = err
    task.state = T.INTERRUPTED
    for fut in task.all_outputs():
        fut.fail(err)
        finish_future(rt, fut, cbs)
    task_ended(rt, task)


def hand_back(rt: RunState, task: Task, node: NodeHandle, reason: str) -> None:
    """A draining node returns a task it never started: place it again (not a failure)."""
    node.release(task.id)           # (in flight there: _leaving looked it up)
    rt.scheduler.freed(node)
    if rt.scheduler.gangs:
        gang.release(rt.scheduler, task)
    for d in task.reads or ():   # a chained input will not be made there now
        if d._state is not FINISHED:
            d.not_held_by(node.name)
    task.node = None
    take_back_chained(rt, task)
    if task.npending > 0:            # chained: its producer has not finished yet
        task.state = T.SUBMITTED
    else:
        task.state = T.READY
        rt.scheduler.push(task)
    if rt.bus.active and not rt.interrupting:
        rt.bus.emit(Retry("retry", time.time(), task.id, task.spec.name, node.name,
                          f"handed back by node {node.name}, which is leaving ({reason})"))


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
        _fail_unplaceable_gangs(rt, f"after node {node.name} was lost ({reason})", cbs)
    return tasks


def no_more_nodes(rt: RunState, reason: str, cbs: Callbacks) -> None:
    """No node is coming any more (``reason``: the lost ones given up): every task fails if
    no node is left, else the ready tasks no node left can ever hold (several nodes, named
    resources), instead of waiting for ever."""
    if not rt.scheduler.fits_ever(1, 0):
        fail_everything(rt, NodeLost(reason), cbs)
    elif rt.scheduler.ready:
        _fail_unplaceable_gangs(rt, f"({reason})", cbs)


def _fail_unplaceable_gangs(rt: RunState, why: str, cbs: Callbacks) -> None:
    """Multi-node tasks and tasks asking for named resources that the remaining nodes can
    never hold fail instead of waiting (``why``: what took the others away)."""
    sched = rt.scheduler
    alive = [n for n in sched.nodes if n.usable]
    keep: list[Task] = []
    doomed: list[Task] = []
    for t in sched.ready:
        inv = t.options.invocation if t.options is not None else None
        req = inv.gang if inv is not None else None
        if req and t.spec.need is not None:     # named resources: some node must have them
            never = resources.never(t.spec.need, req.unit, t.mem, alive) is not None
        else:
            never = req is not None and gang.place(alive, req, False) is None
        (doomed if never else keep).append(t)
    if not doomed:
        return
    sched.ready.replace(keep)
    for t in doomed:
        spec = t.spec
        req = t.options.invocation.gang if t.options and t.options.invocation else None
        assert req is not None          # its gang request put it here
        what = f"{req.procs} processes" if spec.need is None else \
            resources.never(spec.need, req.unit, t.mem, alive)
        err = TaskError(f"task {spec.name} (id {t.id}) needs {what}, which the remaining "
                        f"nodes can never give {why}", task_name=spec.name,
                        task_id=t.id, node="-", kind="error")
        rt.add_failure(err)
        _fail_unrun(rt, t, err, cbs)


def fail_everything(rt: RunState, exc: BaseException, cbs: Callbacks) -> None:
    """No node can run anything any more: every unfinished task fails (with the run's one
    error: the tasks called after it do not make a failure each)."""
    last = rt.failures[-1] if rt.failures else None
    if rt.dead == str(exc) and last is not None and last.kind == "lost" \
            and str(last) == rt.dead:
        err = last
    else:
        err = TaskError(str(exc), kind="lost")
        rt.add_failure(err)
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
        fut.fail(err)
    cancel_successors(rt, t, err, cbs)
    for fut in t.all_outputs():
        finish_future(rt, fut, cbs)
    task_ended(rt, t)


