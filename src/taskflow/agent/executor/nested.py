"""Tasks a running task calls (nested submission): the executor's side.

A decorated call made by a Python task in this executor records a child task
with the master at once and gives the task a :class:`Child` per output,
numbered by the executor (the task's id, the call's number): no round trip per
call. Its arguments are pickled with a persistent id for the task's own
handles, so a handle given to a later call is a dependency, as futures are in
the main program. The call travels as a ``NestCall`` in a ``NEST`` frame to the
agent, which forwards it to the master (:mod:`taskflow.runtime.nesting` makes
the call there, with the rules of a call in the program). Calls are held and
go with the task's next frame (its wait, results: :data:`CALL_HOLD`).

``wait_on`` and ``barrier`` in the task send ``NestWait`` and then *help*:
the work the agent queues on this executor (the rest of the running frame,
later frames, new ones) runs on top of the waiting task, in the order it was
sent, until the master's ``NESTED`` answer comes; then ``NestResumed`` (held,
as calls are; none when the agent took the task back itself: ``NESTED_RUN``)
and the task goes on. The agent counts the executor as idle meanwhile and the master
lends the task's slot (Parsl's join semantics: a waiting parent holds no
core), without a process more. A task only waits for calls it made after it
started, and a frame on this stack sits under frames that started later, so
no chain of waits can close into a cycle: no deadlock, whatever the depth.
"""
from __future__ import annotations

import functools
import io
import os
import pickle
import select
import sys
import threading
import time
from collections import deque
from typing import Any, Callable, Iterator

from ...context import calls_inline, set_nest, set_streams
from ...errors import UsageError
from ...wire import messages as M
from ...wire import protocol as P
from ...wire.writes import update_in_place, written_values
from .capture import WRITING, Capture, Current
from .inputs import AHEAD
from . import waitvalues
from .runhere import RunHere
from .waitvalues import collect as _collect
from .waitvalues import latest as _latest
from .waitvalues import resolve as _resolve

# An executor that helps while a task waits grows its stack by a few frames per waiting
# task (about 3 KiB of C stack, 10 Python frames): room for tens of thousands of them.
RECURSION = 400_000      # the interpreter's frame limit there
STACK = 512 * 2**20      # bytes the main thread's stack may grow to (RLIMIT_STACK), if allowed
_PLAIN = frozenset({int, float, str, bool, type(None), bytes})
_NONE = (None, None)     # (no object, no handle): what versions.get gives for others
RELEASE_BATCH = 64       # dropped calls told to the master with a call (all of them at a wait)
# A task's calls are held and sent together, in one frame with its wait (or at its end, or
# CALL_BATCH of them, or CALL_HOLD after the first one held: a thread sends them then if the
# task went on computing): a parent that calls a few tasks and waits for them costs its node
# and the master one frame, not one a call
CALL_HOLD = 0.005        # seconds (the holding thread looks this often: a few wake-ups a second)
CALL_BATCH = 64
HOLDER_IDLE = 200        # the holding thread ends after this many CALL_HOLDs with none held


class Child:
    """A value a task called by the running task will make: that task's own future.

    ``wait_on(child)`` (or ``child.result()``) in the task gives the value,
    or raises the called task's error; passed to another call of the same
    task, it makes that call wait for it.
    """

    __slots__ = ("parent", "seq", "index", "name")

    def __init__(self, parent: int, seq: int, index: int, name: str) -> None:
        self.parent = parent
        self.seq = seq
        self.index = index
        self.name = name

    def result(self, timeout: float | None = None) -> Any:
        return wait_on(self)

    def __reduce__(self) -> Any:
        raise UsageError(
            f"the future of {self.name} (called by task {self.parent}) cannot leave the task "
            f"that called it: pass it to a task this task calls, or wait_on it here and use "
            f"its value")

    def __repr__(self) -> str:
        return f"<taskflow future of {self.name}, called in task {self.parent}>"

    def __del__(self) -> None:
        try:
            NEST.dropped(self.parent, self.seq)
        except Exception:  # noqa: BLE001 - (the interpreter's exit: nothing to tell)
            pass


waitvalues.Child = Child


@functools.cache
def _pickler() -> Any:
    """The class that pickles a call's arguments: made at the first call of a task from a
    task (cloudpickle is imported then: the agent, which imports this module, never needs it)."""
    import cloudpickle

    class _Pickler(cloudpickle.Pickler):      # type: ignore[misc]
        """A call's arguments: the calling task's handles as persistent ids."""

        def __init__(self, file: Any, parent: int,
                     versions: dict[int, tuple[Any, Child]] | None = None) -> None:
            super().__init__(file, protocol=P.PROTOCOL)
            self.parent = parent
            self.versions = versions

        def persistent_id(self, obj: Any) -> Any:
            if self.versions:           # an object a call wrote: its latest version
                held, latest = self.versions.get(id(obj), _NONE)
                if held is obj and latest is not None:
                    return ("c", latest.seq, latest.index)
            if type(obj) is Child:
                if obj.parent != self.parent:
                    raise UsageError(f"a future of {obj.name} made by task {obj.parent} was "
                                     f"passed to a call in task {self.parent}: a task's futures "
                                     f"are its own")
                return ("c", obj.seq, obj.index)
            return None

    return _Pickler


class _Nest:
    """This executor's nested calls and waits (one per executor process)."""

    Handle = Child          # what a call returns (api.sync.wait_on: no mistake to refuse)

    def __init__(self) -> None:
        self.rfd = self.wfd = -1
        self.reader: P.FrameReader | None = None
        self.frames: deque[tuple[int, Any]] = deque()  # received, not run yet
        self.tasks: Iterator[M.TaskWire] = iter(())     # the running frame's tasks not started
        self.data: dict[int, M.Payload] = {}            # the stored values that frame brought
        self.results: list[M.ResultWire] = []           # results of this burst not sent yet
        self.logs: list[M.TaskLines] = []
        self.cur = Current()
        self.out: Capture | None = None
        self.err: Capture | None = None
        # runs what is queued until the wait is answered (loop.py)
        self.help: Callable[[Callable[[], bool]], None] = _no_help
        self.ident = 0                  # the executor's thread: tasks run there
        self.parent = 0                 # the task whose calls are numbered now ...
        self.seq = 0                    # ... and its last call's number
        self.waits = 0
        self.answers: dict[int, M.Answer] = {}
        self.told: set[int] = set()     # waits whose task's return the agent told (NESTED_RUN)
        # calls whose every handle the task dropped, told to the master with a later call
        # (RELEASE_BATCH at a time) or wait (NestRelease: it keeps no value for them); live
        # handles of calls with more than one output
        self.released: list[tuple[int, int]] = []
        self.live: dict[tuple[int, int], int] = {}
        self.stack: list[int] = []      # the tasks waiting here (under the running one)
        # the running task's objects that calls wrote (INOUT, OUT ... objects): id ->
        # (the object, the handle of its latest version, which later calls and wait_on use)
        self.versions: dict[int, tuple[Any, Child]] = {}
        # calls made and not sent yet (CALL_HOLD), since when
        self.pending: list[M.Nest] = []
        self.since = 0.0
        self.holder: threading.Thread | None = None     # the thread sending them (_holding)
        # the running task called or waited (ended() is due at its end), and the seconds it
        # waited so far: its duration here leaves them out (the executor's mean duration of
        # a function decides how its results travel; a waiting task runs others meanwhile)
        self.busy = False
        self.waited = 0.0
        self.here = RunHere(self)       # short calls run in this executor (runhere.py)

    def attach(self, rfd: int, wfd: int, reader: P.FrameReader, cur: Current, out: Capture,
               err: Capture, help_: Callable[[Callable[[], bool]], None]) -> None:
        self.rfd, self.wfd, self.reader = rfd, wfd, reader
        self.cur, self.out, self.err, self.help = cur, out, err, help_
        self.ident = threading.get_ident()
        _deep_stack()
        from .streams import TaskStreams
        set_streams(TaskStreams(self))    # (streams work under --compat pycompss too)
        if not calls_inline():          # (PyCOMPSs's apps: a call in a task runs inline)
            set_nest(self)

    def answered(self, body: list[M.Answer], run: bool = False) -> None:
        """Answers to waits; ``run``: their tasks run again as the agent knows (NESTED_RUN:
        no ``NestResumed`` from here)."""
        for a in body:
            self.answers[a.wait] = a
            if run:
                self.told.add(a.wait)

    # -- calls ----------------------------------------------------------------------
    def call(self, key: str, nout: int | None, shape: str, name: str, args: tuple[Any, ...],
             kwargs: dict[str, Any], writes: tuple[Any, ...] = (), func: Any = None) -> Any:
        """Record a call of ``key`` made by the running task; its handles, shaped as the
        program's call's value is (``shape``: "one", "tuple", "list" or "none").

        ``writes``: the parameters the called task writes in place (api.task.Written);
        the task's objects given there get a handle each, after the outputs (the master
        answers their new versions with those indexes): the task's later calls read the
        new version and its ``wait_on(obj)`` gives it. ``func``: the function, if a call
        of it may run here (runhere.py)."""
        self._here(name)
        if nout is None:
            raise UsageError(
                f"task {name} was called inside a running task, but how many values it "
                f"returns is decided per call: declare a fixed count (returns=N) to call it "
                f"from a task, or call it from the main program")
        parent = self.cur.tid
        if self.parent != parent:
            self.parent, self.seq, self.versions = parent, 0, {}
        seq = self.seq = self.seq + 1
        versions = self.versions
        written = written_values(writes, args, kwargs) if writes else ()
        if not kwargs and not versions and all(type(a) in _PLAIN for a in args):
            payload = pickle.dumps((args, None), P.PROTOCOL)
        else:
            buf = io.BytesIO()
            _pickler()(buf, parent, versions).dump((args, kwargs or None))
            payload = buf.getvalue()
        self.busy = True
        here = self.here
        may = func is not None and here.may(key, func, shape, args, kwargs, written)
        if may and here.stack:          # (inside a call run here: this one too, now)
            here.call(parent, seq, key, payload, func, args)
            return Child(parent, seq, 0, name)
        if here.stack:                  # (made by a call run here: dispatched under it)
            here.sent.append(seq)
        entry = M.NestCall(parent, seq, key, payload, here.stack[-1] if here.stack else 0)
        if len(self.released) >= RELEASE_BATCH:
            self.send([entry, *self._releases()])
        else:
            self._held(entry)
            if may:                     # (it may run here at the parent's wait)
                here.last = (parent, seq, entry, func, args)
            if len(self.pending) >= CALL_BATCH:
                self.flush()
        n = 0 if shape == "none" else 1 if shape == "one" else max(nout, 1)
        if written:
            if n + len(written) > 1:
                self.live[(parent, seq)] = n + len(written)
            for k, obj in enumerate(written):
                versions[id(obj)] = (obj, Child(parent, seq, n + k, name))
        elif shape == "none":
            self.released.append((parent, seq))
        if shape == "none":
            return None
        if shape == "one":
            return Child(parent, seq, 0, name)
        if n > 1 and not written:
            self.live[(parent, seq)] = n
        handles = [Child(parent, seq, i, name) for i in range(n)]
        return tuple(handles) if shape == "tuple" else handles

    def flush(self) -> None:
        """Send the calls held (:data:`CALL_HOLD`)."""
        if self.pending:
            self.send([])

    def send(self, entries: list[M.Nest], frame: bytes = b"", keep: Any = None) -> None:
        """Write what is held (a NEST frame), then ``frame`` (results), then ``entries`` in a
        NEST frame: in one write, in this order (the agent's record of each executor's
        queue follows it: a task runs again before its result, results owed go before the
        wait of the task behind them). ``keep``: an entry left held if it is the last."""
        pending = self.pending
        with WRITING:
            n = len(pending)        # (the holding thread's: the task may add one meanwhile)
            if keep is not None and n and pending[n - 1] is keep:
                n -= 1
            if not frame:           # (one NEST frame: the agent reads one)
                body = pending[:n] + entries if n else entries
                data = P.encode(M.NEST, body) if body else b""
            else:
                data = frame
                if n:
                    data = P.encode(M.NEST, pending[:n]) + data
                if entries:
                    data += P.encode(M.NEST, entries)
            del pending[:n]
            if data:
                P.write_all(self.wfd, data)

    def send_parts(self, parts: list[P.Part]) -> None:
        """What is held, then a frame carrying large values (``P.encode_parts``)."""
        with WRITING:
            if self.pending:
                n = len(self.pending)
                P.write_all(self.wfd, P.encode(M.NEST, self.pending[:n]))
                del self.pending[:n]
            P.write_parts(self.wfd, parts)

    def _held(self, entry: M.Nest) -> None:
        """Hold ``entry`` to go with the next frame (the holding thread sends it after
        CALL_HOLD if none went)."""
        pending = self.pending
        if not pending:
            self.since = time.monotonic()
            if self.holder is None:
                self._hold()
        pending.append(entry)

    def _hold(self) -> None:
        """Start the thread that sends calls held for CALL_HOLD (the task went on computing
        after them): the parent's children start while it computes."""
        self.holder = t = threading.Thread(target=self._holding, name="taskflow-held-calls",
                                           daemon=True)
        t.start()

    def _holding(self) -> None:
        idle = 0
        me = threading.current_thread()
        while True:
            time.sleep(CALL_HOLD)
            if self.pending:
                idle = 0
                if time.monotonic() - self.since >= CALL_HOLD:
                    keep = None                 # (a call that may run at the parent's
                    if self.here.last is not None:      # wait stays: its next frame's)
                        _, _, keep, _, _ = self.here.last
                    try:
                        self.send([], keep=keep)
                    except OSError:
                        return          # the agent is gone (the task's thread says so)
            else:
                idle += 1
                if idle >= HOLDER_IDLE:
                    self.holder = None
                    if not self.pending:    # (else a call came meanwhile: go on)
                        return
                    self.holder = me

    def ended(self) -> float:
        """The running task, which called or waited (``busy``), ended: the seconds it
        waited, to leave out of its duration (what it left held goes before its result:
        every write of results sends it first)."""
        waited, self.waited, self.busy = self.waited, 0.0, False
        return waited

    def dropped(self, parent: int, seq: int) -> None:
        """A handle of call ``seq`` of task ``parent`` is gone (Child.__del__): once every
        one is, the master is told (:meth:`_releases`)."""
        key = (parent, seq)
        if self.here.values:
            self.here.values.pop(key, None)
        n = self.live.get(key)
        if n is not None:
            if n > 1:
                self.live[key] = n - 1
                return
            del self.live[key]
        self.released.append(key)

    def _releases(self) -> list[M.Nest]:
        """The releases to send: those of tasks still running here (the master forgets an
        ended task's calls with it: most handles die as their task returns)."""
        by: dict[int, list[int]] = {}
        released, self.released = self.released, []
        stack = self.stack
        tid = self.cur.tid
        for parent, seq in released:
            if parent == tid or parent in stack:
                by.setdefault(parent, []).append(seq)
        return [M.NestRelease(parent, seqs) for parent, seqs in by.items()]

    def _here(self, name: str) -> None:
        if threading.get_ident() != self.ident:
            raise UsageError(
                f"task {name} was called from a thread that task {self.cur.tid} started: "
                f"a running task calls tasks from its own thread only; make the call there, "
                f"or call the plain function ({name.rsplit('.', 1)[-1]}.__wrapped__) in the "
                f"thread")

    # -- waits ----------------------------------------------------------------------
    def wait_on(self, *objs: Any, in_place: bool = True) -> Any:
        """``wait_on`` in a task: its handles' values (the first failed call raises). An
        object a call wrote is brought up to date as in the program: in place when its type
        allows (``in_place``), else its new version is returned."""
        handles: list[Child] = []
        given = objs
        if self.versions and self.parent == self.cur.tid:   # objects that calls wrote
            objs = tuple(_latest(o, self.versions, 0) for o in objs)
        for o in objs:
            _collect(o, handles, 0)
        if not handles:
            return _one_or_all(objs)
        self._here(next(iter(handles)).name)
        parent = self.cur.tid
        seqs = sorted({h.seq for h in handles})
        here = self.here
        if here.last is not None:       # its last call may run here now (runhere.py)
            here.at_wait(parent, seqs)
        got: dict[tuple[int, int], tuple[Any, Any]] = {}
        if here.values:                 # values of calls run here (a failed one: asked)
            for h in handles:
                v = here.values.get((h.parent, h.seq))
                if v is not None:
                    got[(h.seq, h.index)] = (v, None)
            if got:
                seqs = sorted({h.seq for h in handles if (h.seq, h.index) not in got})
        if seqs:
            answer = self.ask(lambda wid: M.NestWait(parent, wid, seqs))
            assert type(answer) is M.NestAnswer
            got.update(((seq, i), (v, e)) for seq, i, v, e in answer.values)
        for h in handles:
            entry = got.get((h.seq, h.index))
            if entry is None:   # a call the master refused answers its error once, for all
                _, err = got.get((h.seq, 0), _NONE)
                if err is None:
                    raise RuntimeError(f"{h.name}: the master sent no value for its output "
                                       f"{h.index} (a taskflow bug: please report it)")
            else:
                _, err = entry
            if err is not None:
                raise _error(err, h.name)
        loaded: dict[tuple[int, int], Any] = {}
        out = [_resolve(o, got, loaded, 0) for o in objs]
        if in_place and objs is not given:
            for i, (mine, o) in enumerate(zip(given, objs)):
                if o is not mine and type(o) is Child and update_in_place(mine, out[i]):
                    out[i] = mine
        return _one_or_all(tuple(out))

    def wait_on_file(self, *paths: Any) -> Any:
        """``wait_on_file`` in a task: each file's last version (written by a task it called,
        or any task of the run) is at its path once this returns (the master puts it there:
        :mod:`taskflow.runtime.nestfiles`)."""
        self._here("wait_on_file")
        for p in paths:
            if not isinstance(p, (str, os.PathLike)):
                raise UsageError(f"wait_on_file: expected a path, got {p!r}")
        parent = self.cur.tid
        full = [os.path.abspath(os.fspath(p)) for p in paths]
        answer = self.ask(lambda wid: M.NestWaitFile(parent, wid, full))
        assert type(answer) is M.NestAnswer
        for _, _, _, err in answer.values:
            if err is not None:
                raise _error(err, "wait_on_file")
        return _one_or_all(tuple(os.fspath(p) for p in paths))

    def barrier(self) -> None:
        """``barrier`` in a task: every call it made ended (the first failed one raises)."""
        if self.parent != self.cur.tid or not self.seq:
            return                      # it called nothing
        self._here("barrier")
        parent = self.cur.tid
        here = self.here
        seqs = here.sent[here.marks[-1]:] if here.stack else None   # (in a call run here:
        if seqs == []:                                              # the calls it sent)
            return
        answer = self.ask(lambda wid: M.NestWait(parent, wid, seqs))
        assert type(answer) is M.NestAnswer
        for _, _, _, err in answer.values:
            if err is not None:
                raise _error(err, "a task it called")

    def ask(self, wait: Callable[[int], M.Nest]) -> M.Answer:
        """Send the wait ``wait(number)`` makes (a ``NestWait``, a ``StreamPoll``) and run
        what the agent queues here until its answer comes."""
        cur = self.cur
        parent = cur.tid
        results, logs = self.results, self.logs
        owed = b""
        if results or logs:         # what is owed first: the agent then sees the task at the
            owed = P.encode(M.RESULTS, (results, logs))     # head of its queue
            results.clear()
            logs.clear()
        self.waits += 1
        wid = self.waits
        if self.released:           # (with what is held: before the results owed)
            self.pending += self._releases()
        self.send([wait(wid)], owed)    # what is held, the results owed, the wait: one write
        here = self.here                # (tasks run on top run their calls' own way)
        here_stack, here.stack, here.last = here.stack, [], None
        here_inner, here.inner = here.inner, []
        saved = self._save()
        t0 = time.monotonic()
        answers = self.answers

        def answered() -> bool:
            if wid not in answers and select.select([self.rfd], [], [], 0)[0]:
                self._read()            # (answers come in between the tasks it runs)
            return wid in answers

        self.stack.append(parent)
        try:
            while wid not in answers:
                self.help(answered)     # what the agent queued here runs meanwhile
                if wid not in answers and not self.frames:
                    self._read()        # nothing to run: wait for the answer or work
        finally:
            self.stack.pop()
            self._restore(saved)
            here.stack, here.inner = here_stack, here_inner
            self.waited += time.monotonic() - t0
            self.busy = True
            # (also when something raised here: the agent's record of the stack stays true)
            if wid in self.told:
                self.told.discard(wid)
            else:       # (with its next frame: its next wait, or the results with its own)
                self._held(M.NestResumed(parent))
        return answers.pop(wid)

    def _read(self) -> None:
        """Read what the agent sent: answers aside, the rest queued in order."""
        assert self.reader is not None
        msgs = self.reader.feed()
        if msgs is None:
            os._exit(0)                 # the agent is gone
        for op, body in msgs:
            if op == M.NESTED or op == M.NESTED_RUN:
                self.answered(body, op == M.NESTED_RUN)
            else:
                self.frames.append((op, body))

    def _save(self) -> tuple[Any, ...]:
        """The waiting task's state: the tasks run on top of it must not change it."""
        cur = self.cur
        if cur.wrote:               # its lines so far are its own
            for cap in (self.out, self.err):
                if cap is not None:
                    cap.end_task()
            cur.wrote = False
        saved = (cur.tid, cur.t0, cur.logs, cur.held, cur.total, self.tasks, self.data,
                 self.results, self.logs, self.parent, self.seq, self.versions, AHEAD.current,
                 AHEAD.task, sys.stdout, sys.stderr, self.waited)
        self.waited, self.busy = 0.0, False
        cur.logs = None
        cur.held = cur.total = 0
        return saved

    def _restore(self, saved: tuple[Any, ...]) -> None:
        cur = self.cur
        (cur.tid, cur.t0, cur.logs, cur.held, cur.total, self.tasks, self.data, self.results,
         self.logs, self.parent, self.seq, self.versions, AHEAD.current, AHEAD.task,
         sys.stdout, sys.stderr, self.waited) = saved
        cur.wrote = False


def _deep_stack() -> None:
    """Let this process's main thread recurse deep (tasks waiting under tasks)."""
    try:
        import resource
        soft, hard = resource.getrlimit(resource.RLIMIT_STACK)
        want = STACK if hard == resource.RLIM_INFINITY else min(STACK, hard)
        if soft != resource.RLIM_INFINITY and soft < want:
            resource.setrlimit(resource.RLIMIT_STACK, (want, hard))
    except (ImportError, ValueError, OSError):
        return                  # (the default stack: fewer levels before RecursionError)
    sys.setrecursionlimit(max(sys.getrecursionlimit(), RECURSION))


def _one_or_all(values: tuple[Any, ...]) -> Any:
    """``wait_on``'s shape: one value for one object, else the tuple."""
    if len(values) == 1:
        (one,) = values
        return one
    return values


def _no_help(answered: Callable[[], bool]) -> None:
    pass


NEST = _Nest()


def wait_on(*objs: Any) -> Any:
    return NEST.wait_on(*objs)


def _error(blob: bytes, name: str) -> BaseException:
    """A called task's error as the master sent it (its TaskError, pickled)."""
    try:
        exc = pickle.loads(blob)
    except Exception as why:  # noqa: BLE001 - an exception class the task cannot import
        return RuntimeError(f"{name} failed, and its error could not be read here: {why}")
    return exc if isinstance(exc, BaseException) else RuntimeError(str(exc))
