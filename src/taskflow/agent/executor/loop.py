"""The executor: one process per slot that runs Python tasks.

It is forked by the node agent and talks to it with the same frames as the
rest of the system, over a pair of pipes. It reads every task already in its
pipe, runs them in order and answers with one RESULTS frame per burst, so a
stream of short tasks costs one wake-up per burst, not per task.

Agent -> executor: FUNC (messages.Func), TASKS (messages.ExecBatch: the
master's task tuples as the agent got them, and the stored values their refs
name), PRELOAD (messages.Preload: modules to import before tasks, .preload),
SHUTDOWN. Executor -> agent: RESULTS (messages.ExecResults: result
tuples and the output lines of the tasks).
"""
from __future__ import annotations

from collections import deque
import os
import pickle
import select
import signal
import sys
import time
from typing import Any, Callable, Iterator

from ...context import enter_worker, keep_nested_here
from ...errors import TaskMemoryExceeded
from ...wire import messages as M
from ...wire import protocol as P
from ...wire import values as V
from ...wire.argpath import get_path
from ...wire.invocation import Invocation
from ...wire.thresholds import EXEC_HOLD, EXEC_SHORT, USAGE_MIN
from . import diskroom, keepinputs, preload, programs, sharedfiles, taskenv, usage
from .pickling import dumps as _dumps
from .capture import Capture, Current, send_lines
from .inputs import AHEAD, PRODUCED, Missing, resolve_refs
from .nested import NEST
from .limits import MemoryLimit

SHORT = EXEC_SHORT         # s; results of faster tasks wait to travel in one frame
HOLD = EXEC_HOLD           # s; ... and before a task this short, for at most this long


class _Interrupt:
    """Set when the agent sent SIGINT (the run is interrupted): start no further task."""

    __slots__ = ("set",)

    def __init__(self) -> None:
        self.set = False


INTERRUPT = _Interrupt()


def _on_sigint(signum: int, frame: Any) -> None:
    """The agent interrupts the run: stop the running task (not the executor's own loop,
    which then reports what it ran and starts nothing more)."""
    INTERRUPT.set = True
    if frame is not None and frame.f_code.co_filename != __file__:
        raise KeyboardInterrupt


def _interrupted(tid: int, t0: float, exc: BaseException | None) -> M.ResultWire:
    """The result of a task the interrupt stopped (``exc``) or kept from starting."""
    now = time.time()
    if exc is None:
        return (tid, M.NOT_STARTED, None, M.ErrorInfo(
            "Interrupted", "not started: the run was interrupted", "", None), (now, now))
    import traceback          # (not at the top: start-up time of every agent)
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    return (tid, M.INTERRUPTED, None, M.ErrorInfo(
        "Interrupted", "stopped by the run's interrupt while it ran", tb, None), (t0, now))


def _error_info(exc: BaseException, written: Callable[[], list[str]] | None = None
                ) -> M.ErrorInfo:
    """What a task raised, for the master: its type, text, traceback and pickle. An
    exception whose ``__str__`` (or pickling) raises is still the task's own failure,
    under its own type: nothing here may raise, or the executor would die with it.
    ``written``: the files the task writes (where a full disk is looked for)."""
    import traceback
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    blob: bytes | None
    try:
        import cloudpickle      # (here: the agent, which imports this module, never needs it)
        blob = cloudpickle.dumps(exc)
        pickle.loads(blob)
    except BaseException:  # noqa: BLE001 - a user's __reduce__ / __init__ may raise anything
        blob = None
    return M.ErrorInfo(type(exc).__name__, _text(exc, written), tb, blob)


def _text(exc: BaseException, written: Callable[[], list[str]] | None = None) -> str:
    """``str(exc)``, or what went wrong making it (a user's ``__str__`` that raises); a full
    disk says which disk and how much room is left on it (:mod:`.diskroom`)."""
    try:
        text = str(exc)
        if isinstance(exc, OSError) and diskroom.is_full(exc):
            text += f" ({diskroom.full_disk(exc, written)})"
        return text
    except BaseException as inner:  # noqa: BLE001 - a user's __str__ may raise anything
        try:
            why = f"{type(inner).__name__}: {inner}"
        except BaseException:  # noqa: BLE001 - and so may that exception's
            why = type(inner).__name__
        return f"<its __str__ raised {why}>"


def _file_outputs(msg: M.TaskWire) -> list[str]:
    """The paths of the files and folders the task ``msg`` writes (its file outputs)."""
    _, _, argv, _, kwargs, _, inouts, *_ = msg
    return [str(get_path(argv, dict(kwargs or {}), path))
            for path, kind, _ in inouts or () if kind != M.OUT_OBJECT]


def run_task(funcs: dict[bytes, Any], msg: M.TaskWire, cur: Current,
             data: dict[int, M.Payload]) -> M.ResultWire:
    """Run one task message; return its ResultMsg (lines of programs go to ``cur``).

    Plain calls (positional values only, one output, no options) do not come
    here: :func:`_run_tasks` runs them inline.
    """
    tid, digest, argv, refs, kwargs, nout, inouts, options, _, _, _, outdids = msg
    t0 = cur.t0
    func = None
    try:
        func = funcs[digest]
        name = getattr(func, "__qualname__", "?")
        args = list(argv) if refs else argv
        kw = dict(kwargs) if kwargs else {}
        if refs:
            resolve_refs(args, kw, refs, data)
        inv = options.invocation if options is not None else None
        limit = options.memory_limit if options is not None else None
        if limit:
            return _limited(limit, name, func, args, kw, inv, cur, msg)
        if inv is None:
            programs.python_ran()
            result = func(*args, **kw)
        else:
            result = _invoke(inv, func, args, kw, cur.lines(), tid)
        return _finish(name, result, args, kw, msg, t0)
    except Missing as exc:      # not the task's fault: the agent sends it again with the value
        return (tid, M.MISSING, None, M.ErrorInfo("InputMissing", str(exc), "", None),
                (t0, time.time()))
    except BaseException as exc:  # noqa: BLE001 - a task may raise anything
        if isinstance(exc, KeyboardInterrupt) and INTERRUPT.set:
            return _interrupted(tid, t0, exc)
        info = _error_info(exc, lambda: _file_outputs(msg))
        keepinputs.keep(msg, func, data, PRODUCED, info)     # (taskflow rerun)
        return (tid, M.ERROR, None, info, (t0, time.time()))


def _limited(limit: float, name: str, func: Any, args: list[Any], kw: dict[str, Any],
             inv: Invocation | None, cur: Current, msg: M.TaskWire) -> M.ResultWire:
    """Run the call with its memory limit (agent.executor.limits); past it: TaskMemoryExceeded.

    The task's log says which limit applied (the kernel's, or RLIMIT_AS). A
    program the kernel killed at the limit is that error too, whether or not
    its exit code fails the task."""
    tid, *_ = msg
    t0 = cur.t0
    guard = MemoryLimit(limit, tid, python=inv is None or inv.action is None)
    try:
        with guard:
            cur.lines().append((time.time(), "RAW", guard.describe()))
            if inv is None:
                programs.python_ran()
                result = func(*args, **kw)
            else:
                result = _invoke(inv, func, args, kw, cur.lines(), tid)
    except BaseException as exc:  # noqa: BLE001 - a task may raise anything
        if isinstance(exc, MemoryError) or guard.killed:
            return _over_memory(guard, name, tid, t0, exc)
        raise
    if guard.killed:
        return _over_memory(guard, name, tid, t0, None)
    return _finish(name, result, args, kw, msg, t0)


def _over_memory(guard: MemoryLimit, name: str, tid: int, t0: float,
                 exc: BaseException | None) -> M.ResultWire:
    import traceback
    tb = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__)) \
        if exc is not None else ""
    err = TaskMemoryExceeded(guard.message(name, exc), task_name=name, task_id=tid,
                             kind="memory")
    err.limit, err.peak = guard.limit, guard.peak
    info = _error_info(err)
    return (tid, M.OVER_MEMORY, None, M.ErrorInfo(info.type_name, info.message, tb,
                                                  info.pickled), (t0, time.time()))


def _finish(name: str, result: Any, args: list[Any], kw: dict[str, Any], msg: M.TaskWire,
            t0: float) -> M.ResultWire:
    """A call returned: its outputs, pickled (and kept for tasks chained behind it)."""
    tid, _, _, _, _, nout, inouts, _, _, _, _, outdids = msg
    try:
        t1 = time.time()
        outputs: list[M.Output]
        if nout > 1:
            if not isinstance(result, (tuple, list)) or len(result) != nout:
                got = f"a value of type {type(result).__name__}" \
                    if not isinstance(result, (tuple, list)) else f"{len(result)} values"
                raise TypeError(
                    f"task {name} declared returns={nout} but returned {got}; return a tuple "
                    f"of {nout} values or change returns=")
            outputs = [_dumps(r, name, f"its return value #{i + 1}")
                       for i, r in enumerate(result)]
        elif type(result) in _SMALL_TYPES:     # (a program's exit code)
            outputs = [pickle.dumps(result, P.PROTOCOL)]
        else:
            outputs = [_dumps(result, name)]
        if inouts:
            for path, kind, pname in inouts:
                if kind == M.OUT_OBJECT:
                    outputs.append(_dumps(get_path(args, kw, path), name,
                                          f"parameter '{pname}'"))
                else:
                    p = get_path(args, kw, path)
                    if not os.path.exists(p):
                        raise FileNotFoundError(
                            f"task {name}: {'directory' if kind == M.OUT_DIR else 'file'} parameter "
                            f"'{pname}' was declared as an output but the task did not write it "
                            f"(expected at {p})")
                    outputs.append(None)
        keep = PRODUCED.keep
        big = False
        for did, payload in zip(outdids, outputs):
            if payload is not None:
                keep(did, payload)  # type: ignore[arg-type]  # made here (Held: by the agent)
                if type(payload) is M.Packed:
                    big = True
        if big:                         # (to the agent: files, not the pipe)
            outputs = [sharedfiles.put(o) if type(o) is M.Packed else o  # type: ignore[misc]
                       for o in outputs]
        return (tid, M.OK, outputs, None, (t0, t1))
    except BaseException as exc:  # noqa: BLE001 - a task may raise anything
        if isinstance(exc, KeyboardInterrupt) and INTERRUPT.set:
            return _interrupted(tid, t0, exc)
        return (tid, M.ERROR, None, _error_info(exc), (t0, time.time()))


def _invoke(inv: Invocation, func: Any, args: list[Any], kw: dict[str, Any],
            logs: list[M.LineWire], tid: int) -> Any:
    """External programs, multi-node and GPU tasks (agent.executor.invokers, imported at
    the first such task: an executor of Python tasks never loads them)."""
    run = _INVOKERS[0]
    if run is None:
        from . import invokers
        run = _INVOKERS[0] = invokers.run
    return run(inv, func, args, kw, logs, tid)


_INVOKERS: list[Any] = [None]       # invokers.run, once imported


def executor_main(rfd: int, wfd: int, slot: programs.PidSlot | None = None) -> None:
    """Loop of a forked executor; never returns."""
    enter_worker()
    taskenv.one_thread_each()               # numeric libraries: a thread each (taskenv.py)
    # Its own process group: the agent can kill it with the programs it started.
    os.setpgid(0, 0)
    signal.signal(signal.SIGINT, _on_sigint)
    programs.attach(slot)
    usage.install()                         # the peak of the children a task reaps
    funcs: dict[bytes, Any] = {}
    cur = Current()
    programs.STATE.live = lambda logs: send_lines(wfd, cur, logs)
    reader = P.FrameReader(rfd)
    means: dict[bytes, float] = {}          # function digest -> mean duration here
    NEST.here.attach(means, funcs, _error_info)     # (calls run in their parent's executor)
    out, err = Capture("STDOUT", cur, wfd), Capture("STDERR", cur, wfd)
    nest = NEST
    frames = nest.frames                    # received, not run yet (nested waits run them too)
    AHEAD.frames = frames
    real_out, real_err = sys.stdout, sys.stderr

    def help_(answered: Callable[[], bool]) -> None:
        """A task waits for the tasks it called: the rest of its frame, then the frames
        received, run on top of it (:mod:`.nested`) one task at a time until the wait is
        ``answered`` (or nothing is left). Their results go together, as a frame's do (at
        most HOLD after the first one, before a task not known to be short, with a wait
        of a task run here), and at the latest when this returns: before the executor
        waits for anything. A frame begun here and not finished goes back to the front
        (the waiting frame's rest is its loop's)."""
        outer = it = nest.tasks
        data = nest.data
        results: list[M.ResultWire] = []
        logs_out: list[M.TaskLines] = []
        nest.results, nest.logs = results, logs_out     # (what a task waiting here owes)
        first = 0.0
        try:
            while not answered():
                t = next(it, None)
                if t is None:
                    if not frames:
                        return
                    op, body = frames.popleft()
                    if op != M.TASKS:
                        _control(op, body, funcs)
                        continue
                    preload.settled()
                    tasks, data = body
                    AHEAD.current = tasks
                    it = iter(tasks)
                    continue
                nest.tasks, nest.data = it, data     # (a task waiting in it helps from its rest)
                _run_tasks(data, funcs, means, cur, out, err, wfd, results, logs_out,
                           iter((t,)))
                if not results:
                    first = 0.0
                elif not first:
                    first = time.time()         # (about when the first one held ended)
                elif time.time() - first > HOLD:
                    nest.send([], P.encode(M.RESULTS, (results, logs_out)))
                    results.clear()
                    logs_out.clear()
                    first = 0.0
        finally:
            if results or logs_out:
                nest.send([], P.encode(M.RESULTS, (results, logs_out)))
                results.clear()
                logs_out.clear()
            if it is not outer:
                rest = list(it)
                if rest:
                    frames.appendleft((M.TASKS, (rest, data)))

    nest.attach(rfd, wfd, reader, cur, out, err, help_)
    while True:
        if not frames:
            msgs = reader.feed()
            if msgs is None:
                os._exit(0)
            frames.extend(msgs)
            continue
        # Take whatever else is already in the pipe without blocking.
        while select.select([rfd], [], [], 0)[0]:
            more = reader.feed()
            if more is None:
                os._exit(0)
            frames.extend(more)
            if len(frames) > 4096:
                break
        results, logs_out = _drain(frames, funcs, means, cur, out, err, wfd, real_out, real_err)
        if results or logs_out:
            nest.send([], P.encode(M.RESULTS, (results, logs_out)))


def _drain(frames: deque[tuple[int, Any]], funcs: dict[bytes, Any], means: dict[bytes, float],
           cur: Current, out: Capture, err: Capture, wfd: int, real_out: Any,
           real_err: Any) -> tuple[list[M.ResultWire], list[M.TaskLines]]:
    """Run the frames received (in order, until none is left); return what is not sent.

    A task that waits for the tasks it called runs the rest of its frame and the
    frames after it meanwhile (:mod:`.nested`): the iterator of the running
    frame's tasks (``NEST.tasks``) and ``frames`` are shared with it.
    """
    results: list[M.ResultWire] = []
    logs_out: list[M.TaskLines] = []
    nest = NEST
    nest.results, nest.logs = results, logs_out     # (the same lists to the end: in place)
    while frames:
        op, body = frames.popleft()
        if op == M.TASKS:
            preload.settled()           # (the script's modules imported ahead: preload.py)
            tasks, data = body
            AHEAD.current = tasks
            nest.tasks = it = iter(tasks)
            nest.data = data
            sys.stdout, sys.stderr = out, err
            try:
                results, logs_out = _run_tasks(data, funcs, means, cur, out, err,
                                               wfd, results, logs_out, it)
            finally:
                sys.stdout, sys.stderr = real_out, real_err
        else:
            _control(op, body, funcs)
    AHEAD.current = None
    return results, logs_out


def _control(op: int, body: Any, funcs: dict[bytes, Any]) -> None:
    """A frame other than TASKS: a function, an answer to a wait, modules to import
    ahead, the end."""
    if op == M.FUNC:
        programs.python_ran()      # unpickling a function may import its module
        preload.settled()          # (not while the same modules import in the background)
        try:
            funcs[body.digest] = _load_function(body.payload)
        except BaseException as exc:  # noqa: BLE001
            funcs[body.digest] = _Unloadable(exc)
    elif op == M.NESTED or op == M.NESTED_RUN:
        NEST.answered(body, op == M.NESTED_RUN)
    elif op == M.PRELOAD:
        preload.start(body.modules)
    elif op == M.NESTED_HERE:           # (a resumed master's: off, runhere.py)
        keep_nested_here(body)
    elif op == M.SHUTDOWN:
        os._exit(0)


_SMALL_TYPES = frozenset({int, float, bool, type(None), str})


def _run_tasks(data: dict[int, M.Payload], funcs: dict[bytes, Any],
               means: dict[bytes, float], cur: Current,
               out: Capture, err: Capture, wfd: int, results: list[M.ResultWire],
               logs_out: list[M.TaskLines], tasks: Iterator[M.TaskWire]
               ) -> tuple[list[M.ResultWire], list[M.TaskLines]]:
    """Run ``tasks`` (a TASKS frame's) in order; return (results, logs) not
    yet sent. A task that waits for the tasks it called runs the rest of them meanwhile
    (:mod:`.nested`: the iterator is shared), and the frames after them.

    The plain call (positional values, one output, no options: most calls)
    runs here without a call to :func:`run_task`; its output goes into the
    recent-output cache directly, trimmed once per frame. A result with large
    buffers (:class:`~taskflow.wire.messages.Packed`) is written at once,
    before the next task may take those buffers (:mod:`.inputs`).
    """
    produced = PRODUCED
    small = produced.small
    small_types = _SMALL_TYPES
    dumps = pickle.dumps
    dump = V.dump
    packed = M.Packed
    share = sharedfiles.put
    proto = P.PROTOCOL
    now = time.time
    ok = M.OK
    stop = INTERRUPT
    res: M.ResultWire
    big = False
    plain = False           # a plain Python call ran (programs started later must know)
    task_env = taskenv.ON   # PyCOMPSs: COMPSS_NUM_THREADS & co. per task (taskenv.py)
    nest = NEST
    for tmsg in tasks:          # (the frame's: NEST.tasks, or one task a waiting task runs)
        tid, digest, argv, refs, kwargs, nout, inouts, options, _, units, _, outdids = tmsg
        if task_env:
            taskenv.units(units)
        if stop.set:                     # the run is interrupted: start nothing more
            results.append(_interrupted(tid, 0.0, None))
            continue
        m = means.get(digest)
        if results and (m is None or m > SHORT):
            # Answer now: this task may take a while, the ones done must not wait (a few
            # ms tasks, e.g. programs, let results gather for up to HOLD first).
            _, _, _, _, (_, first_end, *_) = results[0]
            if m is None or m > HOLD or now() - first_end > HOLD:
                nest.send([], P.encode(M.RESULTS, (results, logs_out)))
                results.clear()         # (in place: the caller's lists must not keep them)
                logs_out.clear()
        # not known to be short: its CPU time, peak memory and I/O are measured (agent.executor.usage)
        before = usage.start() if m is None or m >= USAGE_MIN else None
        cur.tid = tid
        func = funcs.get(digest)
        if func is not None and not refs and not kwargs and not options and nout == 1 \
                and not inouts:
            plain = True
            t0 = cur.t0 = now()
            try:
                r = func(*argv)
                t1 = now()
                try:
                    o = dumps(r, proto) if type(r) in small_types else dump(r)
                except Exception:
                    o = _dumps(r, getattr(func, "__qualname__", "?"))
            except BaseException as exc:  # noqa: BLE001 - a task may raise anything
                t1 = now()
                if isinstance(exc, KeyboardInterrupt) and INTERRUPT.set:
                    res = _interrupted(tid, t0, exc)
                else:
                    info = _error_info(exc)
                    keepinputs.keep(tmsg, func, data, produced, info)    # (taskflow rerun)
                    res = (tid, M.ERROR, None, info, (t0, t1))
            else:
                (did,) = outdids
                if len(o) > small:
                    produced.keep(did, o)
                    if type(o) is packed:       # (to the agent: a file, not the pipe)
                        o = share(o)  # type: ignore[assignment]
                else:           # (read again: a nested wait's tasks may have trimmed it)
                    produced.values[did] = o
                res = (tid, ok, [o], None, (t0, t1))
                big = type(o) is packed
        else:
            cur.t0 = now()
            AHEAD.task = tmsg
            res = run_task(funcs, tmsg, cur, data)
            _, _, outs, _, timing = res
            t0, t1 = timing         # type: ignore[misc]  # run_task's own: (start, end)
            if outs is not None:
                for x in outs:
                    if type(x) is packed:
                        big = True
        if before is not None:
            cpu, peak, rd, wr, how = usage.stop(before)
            rtid, status, routs, rerr, _ = res
            res = (rtid, status, routs, rerr, (t0, t1, cpu, peak, rd, wr, how))
        results.append(res)
        d = t1 - t0
        if nest.busy:       # it called tasks or waited (.nested): its calls held go before its
            d -= nest.ended()       # result; its duration here leaves its waits out
        means[digest] = d if m is None else 0.8 * m + 0.2 * d
        if cur.wrote:
            cur.wrote = False
            if out.kept or out.buf.parts or out.dropped or out.spill is not None:
                out.end_task()
            if err.kept or err.buf.parts or err.dropped or err.spill is not None:
                err.end_task()
            cur.held = cur.total = 0
        if cur.logs is not None:
            if cur.logs:
                logs_out.append((tid, cur.logs))
            cur.logs = None
        if big:
            big = False
            nest.send_parts(P.encode_parts(M.RESULTS, (results, logs_out)))
            results.clear()
            logs_out.clear()
            r = o = res = None  # type: ignore[assignment]   # (a reader may take the value:
            #                     these names must not keep it, nor its buffers, alive)
    if len(produced.values) > produced.limit:
        produced._trim()
    if plain:
        programs.python_ran()
    return results, logs_out


def _load_function(payload: bytes) -> Any:
    """Unpickle a task function; give by-value code its file name back for tracebacks."""
    func, filename = pickle.loads(payload)      # (cloudpickle.loads: what by value needs, it imports)
    # a task function that came by value is its plain function here (api.task.WorkerTask:
    # calling that one from a task records a child; running the task itself must not)
    func = getattr(func, "__taskflow_body__", func)
    code = getattr(func, "__code__", None)
    if filename and code is not None and code.co_filename != filename:
        func.__code__ = _rename_code(code, filename)
        # helpers of the same script that came along by value: cloudpickle names their
        # file "<dynamic-code>", so a traceback through them could not show their lines
        module = getattr(func, "__module__", None)
        for g in list(getattr(func, "__globals__", {}).values()):
            gc = getattr(g, "__code__", None)
            if gc is not None and gc.co_filename == "<dynamic-code>" \
                    and getattr(g, "__module__", None) == module:
                g.__code__ = _rename_code(gc, filename)
    return func


def _rename_code(code: Any, filename: str) -> Any:
    consts = tuple(_rename_code(c, filename) if hasattr(c, "co_filename") else c
                   for c in code.co_consts)
    return code.replace(co_filename=filename, co_consts=consts)


class _Unloadable:
    """Stands in for a function that could not be unpickled on this node."""

    def __init__(self, exc: BaseException) -> None:
        self.exc = exc
        self.__qualname__ = "<unloadable>"

    def __call__(self, *a: Any, **k: Any) -> Any:
        raise RuntimeError(f"the task's function could not be loaded on this node: "
                           f"{type(self.exc).__name__}: {self.exc}. Is its module importable "
                           f"there (same sys.path / installed packages)?") from self.exc
