"""Tasks that running tasks call (nested submission): the master's side.

A Python task's call of a task arrives in a ``NEST`` frame (its executor
numbered it: :mod:`taskflow.agent.executor.nested`). The loop thread must not
block, and :meth:`Runtime.submit` may (the submit lock, the journal's backlog),
so the calls and waits go, in their order, to one thread of this module, which
makes each call as the program would (the decorated object's own ``__call__``,
found by its ``module:qualname`` in :data:`taskflow.api.task.DECLARED`): the
same directions, files, PyCOMPSs variants and resume keys. The call's parent is
this thread's :func:`calling` while it runs: the runtime records the edge
(journal ``children``), gives the child its parent's task groups and a higher
rank than its parent (deeper calls first: the waiting parents stay about
slots x depth), and :func:`ended` cancels a failed or cancelled parent's
unfinished children.

A wait lends the parent's units to its node until the parent runs again
(``NestWait`` ... ``NestResumed``); when every awaited future ended the answer
is made with the values or the children's errors, pickled, and sent by the loop
as ``NESTED``: by the loop thread itself when every value is at the master and
none failed, else by this thread (a value left on a node is fetched: it moves
on demand).
"""
from __future__ import annotations

import io
import logging
import os
import pickle
import queue
import threading
import time
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

import cloudpickle

from ..errors import UsageError
from ..events import Nested, Running
from ..future import _NOVALUE, Count, Future
from ..graph import task as T
from ..graph.nestrecord import NestRecord
from ..graph.spec import DECLARED
from ..providers.handle import placed_on
from ..wire import messages as M
from ..wire import values as V
from ..wire.writes import Written, written_values

if TYPE_CHECKING:
    from ..graph.registry import DataItem, Registry
    from ..graph.task import Task
    from ..providers.handle import NodeHandle
    from .state import RunState

log = logging.getLogger(__name__)

DEPTH_RANK = 4          # a child's rank above its parent's (ranks step by 2: readyqueue.py)
_HERE = threading.local()


class _Refused:
    """A call the master could not make (an unknown function, bad arguments): its
    error reaches the parent at its wait."""

    __slots__ = ("error",)

    def __init__(self, error: BaseException) -> None:
        self.error = error


def calling() -> Task | None:
    """The task whose call this thread is making (None: the program's own call)."""
    return getattr(_HERE, "parent", None)


class Nesting:
    """The run's nested calls: one thread making them, the answers for the loop."""

    calling = staticmethod(calling)     # (Runtime._record's, through the run's Nesting)

    def adopt(self, task: Task) -> None:
        """Runtime._record: ``task`` is a child of the task this thread calls for (adopt)."""
        adopt(self.rt, task)

    def __init__(self, rt: RunState) -> None:
        self.rt = rt
        self.q: queue.SimpleQueue[Any] = queue.SimpleQueue()
        self.out: dict[NodeHandle, list[M.Answer]] = {}     # answers for the loop to send
        self.doomed: list[tuple[list[Task], str]] = []    # children to cancel, and why
        # ends of calls run in their parent's executor, and parents' ends, for the loop
        self.here_out: deque[tuple[NestRecord, Any]] = deque()
        # calls arrived (counted by the loop thread) and made (by this module's thread):
        # while they differ the run is not idle (each count has one writer: no lock)
        self.n_in = self.n_made = 0
        self.thread = threading.Thread(target=self._run, name="taskflow-nested", daemon=True)
        self.thread.start()

    # -- the loop thread, the run's lock held -----------------------------------------------
    def arrived(self, node: NodeHandle, entries: list[M.Nest]) -> None:
        """A node's NEST frame: calls and waits to the thread, streams' messages to the
        run's streams; a wait lends the parent's units to its node (a poll of a stream:
        once it waited a while, :meth:`lend`), a return from one takes them back."""
        inflight = node.inflight
        for e in entries:
            task = inflight.get(e.parent)
            if task is None:            # ended or taken back already: nothing to do for it
                continue
            rec = task.nest
            if rec is None:
                rec = task.nest = NestRecord(task, node)
            kind = type(e)
            if kind is M.NestResumed:
                if rec.waiting:
                    rec.waiting = False
                    rec.waited += time.time() - rec.since
                    node.used += task.cus
                continue
            if kind is M.NestCall or kind is M.NestHere or (
                    type(e) is M.NestHereEnd and e.call is not None):
                self.n_in += 1
                rec.calls_in += 1
            elif (kind is M.NestWait or kind is M.NestWaitFile) and not rec.waiting:
                self._lend(node, task, rec)
            if kind is M.StreamPublish or kind is M.StreamClose or kind is M.StreamPoll:
                self.rt.stream_registry().from_task(node, task, e)    # (runtime.streams)
                continue
            self.q.put((rec, e))

    def lend(self, node: NodeHandle, parent: int) -> None:
        """A task's poll of a stream waits (runtime.streams): its units are lent to its
        node until it runs again (the run's lock held)."""
        task = node.inflight.get(parent)
        if task is not None and task.nest is not None and not task.nest.waiting:
            self._lend(node, task, task.nest)
            self.rt.comm.wake()

    def _lend(self, node: NodeHandle, task: Task, rec: NestRecord) -> None:
        rec.waiting = True
        rec.since = time.time()
        node.used -= task.cus
        self.rt.scheduler.freed(node)

    def take(self) -> dict[NodeHandle, list[M.Answer]]:
        out, self.out = self.out, {}
        return out

    def take_doomed(self) -> list[tuple[list[Task], str]]:
        """(children, why) of the parents that failed, were cancelled or run again since
        last time: the loop cancels them (rules.cancel)."""
        doomed, self.doomed = self.doomed, []
        return doomed

    def ended(self, task: Task) -> None:
        """``task``, which called tasks, ended (any way): units it lent come back (its
        node gave them back once more when it ended), and a failed or cancelled one's
        unfinished children are cancelled at the loop's next round."""
        rec = task.nest
        if rec is None:
            return
        self._lent_back(task, rec, placed_on(task))
        if task.state is not T.DONE:
            how = "was cancelled" if task.state is T.CANCELLED else "failed"
            self._doom(rec, f"its parent task {task.spec.name} (id {task.id}) {how}")

    def again(self, task: Task, node: NodeHandle | None, why: str) -> None:
        """``task``, which called tasks, runs again (its node lost, its executor dead, a
        retry): the children of this attempt are cancelled, the next one calls its own."""
        rec = task.nest
        if rec is None:
            return
        task.nest = None
        self._lent_back(task, rec, node)
        self._doom(rec, f"its parent task {task.spec.name} (id {task.id}) runs again: {why}")

    def _lent_back(self, task: Task, rec: NestRecord, node: NodeHandle | None) -> None:
        """Units a waiting task lent come back: its node gave them back once more when the
        task left it (a lost node holds none any more)."""
        if rec.waiting:
            rec.waiting = False
            if node is not None and node.alive:
                node.used += task.cus

    def _doom(self, rec: NestRecord, why: str) -> None:
        if any(c.state not in T.FINAL_STATES for c in rec.children):
            self.doomed.append((rec.children, why))
            self.rt.comm.wake()
        if rec.here:    # after the ends its executor sent before (in this thread's queue)
            self.q.put((rec, why))

    # -- the thread ----------------------------------------------------------------------
    def _run(self) -> None:
        while True:
            item = self.q.get()
            if item is None:
                return
            try:
                rec, e = item
                kind = type(e)
                if kind is M.NestCall or kind is M.NestHere:
                    try:
                        self._call(rec, e)
                    finally:
                        rec.calls_made += 1
                        self._called()
                elif kind is M.NestHereEnd or kind is str:     # (its end, or its parent's)
                    if kind is M.NestHereEnd and e.call is not None:     # (and the call)
                        try:
                            self._call(rec, e.call)
                        finally:
                            rec.calls_made += 1
                            self._called()
                    self.here_out.append((rec, e))      # the loop's (rules/herecalls.py)
                    self.rt.comm.wake()
                elif kind is M.NestWait:
                    self._wait(rec, e)
                elif kind is M.NestRelease:
                    self._release(rec, e.seqs)
                elif kind is M.NestWaitFile:
                    self._wait_files(rec, e)
                elif e[0] == "files":
                    self._put_files(rec, e[1], e[2])
                else:
                    self._answer(rec, *e)
            except Exception:  # noqa: BLE001 - one bad call must not end the thread
                log.exception("taskflow: a nested call could not be handled")

    @property
    def calls(self) -> bool:
        """Some call arrived that is not made yet."""
        return self.n_made != self.n_in

    def _called(self) -> None:
        self.n_made += 1
        rt = self.rt
        if self.n_made == self.n_in and rt.tally.active == 0 and rt.idle_waiters:
            with rt.lock:
                if rt.tally.active == 0 and not self.calls:
                    for w in rt.idle_waiters:       # (as rules.ending.task_ended does)
                        w.set()
                    rt.idle_waiters.clear()

    def stop(self) -> None:
        self.q.put(None)

    def runs_here(self, task: Task) -> bool:
        """Runtime._record (the lock held): whether ``task`` is a call its parent's
        executor runs itself (rules/herecalls.py)."""
        here = getattr(_HERE, "here", None)
        if here is None:
            return False
        node, t = here
        task.state = T.RUNNING          # (with no unit of its node: its parent's slot)
        task.node = node
        task.t_start = t                # (its executor's clock: submitted when it started)
        task.t_submit = min(task.t_submit, t)
        bus = self.rt.bus
        if bus.active:
            bus.emit(Running("running", task.t_start, task.id, task.spec.name, node.name, None))
        return True

    def _call(self, rec: NestRecord, c: M.NestCall | M.NestHere) -> None:
        parent = rec.task
        if parent.nest is not rec or (parent.state in T.FINAL_STATES
                                      and parent.state is not T.DONE):
            return          # its parent failed or runs again meanwhile: no child of this one
        tf = DECLARED.get(c.key)
        if tf is None:
            rec.calls[c.seq] = _Refused(UsageError(
                f"task {parent.spec.name} (id {parent.id}) called {c.key.split(':', 1)[-1]}, "
                f"which the main program does not declare as a task ({c.key}); import its "
                f"module in the main program (a task defined inside a function cannot be "
                f"called from a task)"))
            return
        here = type(c) is M.NestHere
        try:
            args, kwargs = _Unpickler(c.payload, rec.calls).load()
            by = rec.here.get(c.by) if c.by else None     # (made by a call run here)
            _HERE.parent = by or parent
            _HERE.here = (rec.node, c.t) if type(c) is M.NestHere else None
            try:
                value = rec.calls[c.seq] = tf(*args, **(kwargs or {}))
                made = value._producer if type(value) is Future else None
                if here and made is not None and made.state is T.RUNNING:
                    rec.here[c.seq] = made
                elif by is not None and made is not None:
                    rec.under.setdefault(c.by, []).append(made)
                    rec.children.append(made)       # (its parent's end cancels it too)
                writes = tf.nested_writes() if hasattr(tf, "nested_writes") else ()
                if writes:      # the new versions of the parent's objects, after the outputs
                    news = self._new_versions(writes, args, kwargs)
                    if news:
                        rec.calls[c.seq] = _outputs(value) + news
            finally:
                _HERE.parent = _HERE.here = None
        except Exception as exc:  # noqa: BLE001 - the call's own error, for the parent
            rec.calls[c.seq] = _Refused(exc)
        if len(rec.calls) >= rec.calls_at:
            self._prune(rec)

    def _new_versions(self, writes: Written, args: Any, kwargs: Any) -> list[Any]:
        """The versions a call wrote of the objects it was given at ``writes`` (copies of
        the parent's, or its earlier versions), in :func:`written_values`' order; the
        registry forgets them (the parent's executor follows them by their handles)."""
        registry, lock = self._registry()
        news: list[Any] = []
        with lock:
            for obj in written_values(writes, args, kwargs):
                item = registry.object_item(obj)
                news.append(item.latest if item is not None and item.obj is obj else obj)
                if item is not None and item.obj is obj:
                    registry.forget_object(obj)
        return news

    @staticmethod
    def _release(rec: NestRecord, seqs: list[int]) -> None:
        """The parent holds no handle of calls ``seqs`` any more: those that ended well go;
        the others are kept until they did (:meth:`_prune`)."""
        calls = rec.calls
        for seq in seqs:
            if seq in calls:
                if _ended_well(calls[seq]):
                    del calls[seq]
                else:
                    rec.released.add(seq)

    @staticmethod
    def _prune(rec: NestRecord) -> None:
        """The calls kept doubled: the released ones that ended well since go."""
        calls, released = rec.calls, rec.released
        if released:
            gone = [seq for seq in released if _ended_well(calls.get(seq))]
            for seq in gone:
                released.discard(seq)
                calls.pop(seq, None)
        rec.calls_at = max(64, 2 * len(calls))

    def _wait(self, rec: NestRecord, w: M.NestWait) -> None:
        seqs = w.seqs if w.seqs is not None else sorted(rec.calls)
        futs: list[tuple[int, int, Any]] = []
        for seq in seqs:
            for i, f in enumerate(_outputs(rec.calls.get(seq))):
                futs.append((seq, i, f))
        self.when_done([f for _, _, f in futs if type(f) is Future],
                       lambda: self._answered(rec, w, futs))

    def _answered(self, rec: NestRecord, w: M.NestWait, futs: list[tuple[int, int, Any]]
                  ) -> None:
        """Every awaited future ended (in the loop thread, as its done callback, or in this
        module's thread): the answer goes to the loop at once when every value is at hand
        and nothing failed (no hop to this module's thread: one round less for each waiting
        parent); otherwise this module's thread makes it (a value to fetch from a node, an
        error to pickle)."""
        values = self._values(w, futs, None)
        if values is None:
            self.q.put((rec, ("answer", w, futs)))
        else:
            self.send(rec, M.NestAnswer(rec.task.id, w.wait, values))

    def when_done(self, futs: list[Future], fire: Callable[[], None]) -> None:
        """``fire()`` once every future of ``futs`` finished (at once if they all had)."""
        pending = [f for f in futs if f._state != "FINISHED"]
        count = Count(len(pending), fire)
        if not pending:
            count.fire()
            return
        done = []
        with self.rt.lock:                  # (one acquisition for them all)
            for f in pending:
                if f._state != "FINISHED":
                    f._done_callbacks.append(count.one)
                else:
                    done.append(f)
        for f in done:                      # (ended meanwhile: counted here, unlocked)
            count.one(f)

    def _answer(self, rec: NestRecord, _: str, w: M.NestWait,
                futs: list[tuple[int, int, Any]]) -> None:
        # (the Runtime's, which fetches a value left on a node; rules' tests have none)
        fetch: Callable[[Future], M.Payload] | None = getattr(self.rt, "fetch_payload", None)
        values = self._values(w, futs, fetch or _stopped)
        assert values is not None
        self.send(rec, M.NestAnswer(rec.task.id, w.wait, values))

    @staticmethod
    def _values(w: M.NestWait, futs: list[tuple[int, int, Any]],
                fetch: Callable[[Future], M.Payload] | None
                ) -> list[tuple[int, int, M.Payload | None, bytes | None]] | None:
        """The answer's values; None if one needs ``fetch`` (or an error pickled) and it
        is None (the loop thread: the thread of this module makes that answer)."""
        values: list[tuple[int, int, M.Payload | None, bytes | None]] = []
        barrier = w.seqs is None        # (a barrier needs no values)
        for seq, i, f in futs:
            kind = type(f)
            if kind is Future and f._exception is None:
                if barrier:
                    continue
                payload = f._payload
                if payload is None:
                    if fetch is None:
                        return None
                    payload = V.dump(f._result) if f._result is not _NOVALUE else fetch(f)
                values.append((seq, i, payload, None))
            elif fetch is None:
                return None
            elif kind is _Refused:
                values.append((seq, i, None, dump_error(f.error)))
            elif kind is not Future:
                values.append((seq, i, V.dump(f), None))     # a plain value (a stand-in)
            else:
                f._exception.seen()     # the parent sees it: no failure of the run by itself
                values.append((seq, i, None, dump_error(f._exception)))
        return values

    # -- wait_on_file (and taskflow.open) in a task ----------------------------------------
    def _wait_files(self, rec: NestRecord, w: M.NestWaitFile) -> None:
        """Wait (by callbacks) for the writers of ``w.paths`` (and the tasks still reading
        a file as it was), then :meth:`_put_files`. The task reads the files at their
        paths: a node whose files are staged (no shared filesystem) gets an error."""
        registry, lock = self._registry()
        task = rec.task
        if rec.node.stager is not None:
            self._files_answer(rec, w, [UsageError(
                f"task {task.spec.name} (id {task.id}) called wait_on_file on node "
                f"{rec.node.name}, which does not share the master's filesystem (its files "
                f"are staged): the file would be put where the task cannot read it; have the "
                f"task that writes it return what the parent needs, or use a shared "
                f"filesystem")] * len(w.paths))
            return
        items: list[tuple[str, DataItem | None]] = []
        futs: list[Future] = []
        with lock:                      # (the registry is the callers')
            for p in w.paths:
                item = registry.file_item(p)
                items.append((p, item))
                if item is not None:
                    futs.append(item.latest)
                    for t in item.readers_v0:
                        if t.state not in T.FINAL_STATES:
                            futs.extend(t.all_outputs())
        self.when_done(futs, lambda: self.q.put((rec, ("files", w, items))))

    def _put_files(self, rec: NestRecord, w: M.NestWaitFile,
                   items: list[tuple[str, DataItem | None]]) -> None:
        """The writers ended: each last version at its path, as the program's
        ``wait_on_file`` puts it (the file is the program's again: later calls read it as
        it is then)."""
        task = rec.task
        registry, lock = self._registry()
        errors: list[BaseException | None] = []
        with lock:
            for p, item in items:
                err: BaseException | None = None
                if item is None:
                    if not os.path.exists(p):
                        err = UsageError(
                            f"task {task.spec.name} (id {task.id}): wait_on_file({p!r}): no "
                            f"task reads or writes {p} and it does not exist; pass the path "
                            f"the tasks use")
                elif item.latest._exception is not None:
                    failed = item.latest._exception
                    failed.seen()       # (the parent sees it: no failure of the run by itself)
                    err = failed
                else:
                    err = _put(registry, p, item, task)
                errors.append(err)
        self._files_answer(rec, w, errors)

    def _registry(self) -> tuple[Registry, threading.Lock]:
        """The Runtime's data registry and the lock its callers hold (rules' tests, which
        drive a RunState, have none: no file waits there)."""
        registry: Registry | None = getattr(self.rt, "registry", None)
        lock: threading.Lock | None = getattr(self.rt, "submit_lock", None)
        if registry is None or lock is None:
            raise RuntimeError("wait_on_file in a task needs the Runtime's registry")
        return registry, lock

    def _files_answer(self, rec: NestRecord, w: M.NestWaitFile,
                      errors: list[BaseException | None]) -> None:
        self.send(rec, M.NestAnswer(rec.task.id, w.wait, [
            (i, 0, None, dump_error(e) if e is not None else None)
            for i, e in enumerate(errors)]))

    def send(self, rec: NestRecord, answer: M.Answer) -> None:
        """An answer for the loop to send to the parent's node."""
        with self.rt.lock:
            self.out.setdefault(rec.node, []).append(answer)
            self.rt.comm.wake()


def adopt(rt: RunState, task: Task) -> None:
    """The program-side half of a nested call (Runtime._record): the task being recorded
    is a child of the task this thread calls for, if any."""
    parent = calling()
    if parent is None:
        return
    task.prio += (parent.prio & ~1) + DEPTH_RANK
    if parent.group:
        task.group = parent.group
    rec = parent.nest
    if rec is not None:
        kids = rec.children
        kids.append(task)
        if len(kids) >= rec.prune_at:       # (amortized: a parent's 100,000 children)
            kids[:] = [c for c in kids if c.state not in T.FINAL_STATES]
            rec.prune_at = max(64, 2 * len(kids))
    bus = rt.bus
    if bus.active:
        bus.emit(Nested("nested", time.time(), task.id, task.spec.name, "", parent.id))


def _put(registry: Registry, path: str, item: DataItem, task: Task) -> OSError | None:
    """``item``'s last version at ``path`` (unless it was put there meanwhile: the item is
    no longer the registry's), the file the program's again; the error, if it could not."""
    from ..graph.registry import materialize
    if registry.file_item(path) is not item:
        return None
    try:
        materialize(item)
        registry.forget_file(path)
    except OSError as exc:
        return OSError(f"task {task.spec.name} (id {task.id}): wait_on_file could not put "
                       f"{path} in place: {exc}")
    return None


def _ended_well(value: Any) -> bool:
    """A call's value (its futures) all ended without an error (a refused call did not)."""
    for f in _outputs(value):
        if type(f) is _Refused or (type(f) is Future and (f._state != "FINISHED" or
                                                          f._exception is not None)):
            return False
    return True


def _outputs(value: Any) -> list[Any]:
    if type(value) is Future or type(value) is _Refused:
        return [value]
    if type(value) in (tuple, list):
        return list(value)
    if value is None:
        return []
    return [value]


def _stopped(f: Future) -> M.Payload:
    raise RuntimeError("the run stopped")


def dump_error(exc: BaseException) -> bytes:
    try:
        blob: bytes = cloudpickle.dumps(exc)
        pickle.loads(blob)
        return blob
    except Exception:  # noqa: BLE001 - an exception that does not pickle: its text
        text: bytes = cloudpickle.dumps(RuntimeError(f"{type(exc).__name__}: {exc}"))
        return text


class _Unpickler(pickle.Unpickler):
    """A call's arguments: the parent's handles become its calls' futures."""

    def __init__(self, data: bytes, calls: dict[int, Any]) -> None:
        super().__init__(io.BytesIO(data))
        self.calls = calls

    def persistent_load(self, pid: Any) -> Any:
        _, seq, index = pid
        outs = _outputs(self.calls.get(seq))
        if index >= len(outs):
            raise UsageError(f"a future of call {seq} of the calling task is not known here")
        f = outs[index]
        if type(f) is _Refused:
            raise f.error
        return f
