"""Futures: the value a task call returns, and every data version in the graph.

A :class:`Future` is a :class:`concurrent.futures.Future` (``result()``,
``done()``, ``exception()``, ``add_done_callback`` and ``concurrent.futures.wait``
all work) but is cheap to create: the condition variable and waiter lists
that the standard class builds in ``__init__`` are made only when somebody
waits through the standard machinery. The runtime itself waits through
``_wev`` (see :meth:`taskflow.runtime.runtime.Runtime.wait_futures`).

The same class carries the graph's bookkeeping for one data version: who
produces it (``_producer``), which tasks wait for it (``_consumers``), where
its bytes are (``_payload`` at the master, ``_holders`` on nodes). Others
read these fields; they change them only through the methods below, one per
transition (``finish``, ``fail``, ``held_by``, ``made_by``, ...): the
runtime calls them per task, so the per-task path makes one call per
transition, never one per field.
"""
from __future__ import annotations

import concurrent.futures as _cf
import os
import pickle
import threading
from typing import TYPE_CHECKING, Any, Callable, Iterable, NoReturn, Protocol

from .wire import values
from .wire.protocol import PROTOCOL

if TYPE_CHECKING:
    from concurrent.futures._base import _Waiter

    from .errors import TaskError
    from .wire.messages import Payload
    from .graph.registry import DataItem
    from .graph.task import Task

PENDING = "PENDING"
RUNNING = "RUNNING"
FINISHED = "FINISHED"
CANCELLED = "CANCELLED"
CANCELLED_AND_NOTIFIED = "CANCELLED_AND_NOTIFIED"

_make_lock = threading.Lock()
_NOVALUE = object()
NONE_PAYLOAD = pickle.dumps(None, PROTOCOL)     # the value of a failed task's ignored outputs


class FutureHost(Protocol):
    """The runtime, as a future sees it (for ``result()`` and callbacks)."""

    def wait_futures(self, futs: Iterable[Future], timeout: float | None = None) -> bool:
        """Block until every future is finished (False on timeout)."""

    def fetch_payload(self, fut: Future) -> Payload:
        """Bring a value that stayed on a node to the master."""

    def take_payload(self, fut: Future) -> tuple[Payload, bool]:
        """The value's payload for the program, and whether the master let go of it (the
        value also lives on a node, which serves it from now on)."""

    def prefetch(self, futs: list[Future]) -> None:
        """Ask for the values of ``futs`` that stayed on their nodes, not waiting for them."""

    def add_done_callback(self, fut: Future, fn: Callable[[Future], Any]) -> bool:
        """Register ``fn`` unless ``fut`` is finished already (then False)."""


class Waiter(Protocol):
    """Somebody waiting through ``_wev`` (the runtime's waits, lineage)."""

    def one_done(self) -> None:
        """One of the futures waited for is finished."""


class AllDone:
    """A :class:`Waiter` whose ``event`` is set once ``n`` futures have finished (the
    runtime's ``wait_futures``, an inline run's waits)."""

    __slots__ = ("n", "event")

    def __init__(self, n: int) -> None:
        self.n = n
        self.event = threading.Event()

    def one_done(self) -> None:
        self.n -= 1
        if self.n <= 0:
            self.event.set()


DoneCallback = Callable[["Future"], Any]


class Future(_cf.Future):  # type: ignore[type-arg]
    """What a task call returns: a :class:`concurrent.futures.Future` of one of its values.

    ``result()``, ``done()``, ``exception()``, ``add_done_callback()`` and
    ``concurrent.futures.wait()`` work as for any future; pass it to another task
    to make that task depend on it, or to ``wait_on`` for its value. The runtime
    makes futures; programs do not construct them.

    Example::

        import concurrent.futures
        from taskflow import task

        @task(returns=int)
        def square(x: int) -> int:
            return x * x

        futures = [square(i) for i in range(4)]
        total = square(futures[3])                        # waits for futures[3] on its own
        done, _ = concurrent.futures.wait(futures)
        print(sorted(f.result() for f in done), total.result())   # [0, 1, 4, 9] 81
    """

    # What every future sets in its life is in slots: set in a varying order as
    # instance attributes they made CPython build a dict per future (one more
    # object for the cyclic GC to scan, for every task). The rest are
    # class-level defaults: an instance only stores what differs from them.
    __slots__ = ("_state", "_rt", "_producer", "_did", "_result", "_exception", "_payload",
                 "_holders", "_consumers", "_wev", "_key", "_tid")
    _cond: threading.Condition | None = None
    _cf_waiters: list[_Waiter] | None = None
    _done_callbacks_: list[DoneCallback] | None = None
    _item: DataItem | None = None      # the DataItem this is a version of (INOUT objects, files)
    _path: str | None = None           # file versions: where this version lives
    _label = ""                        # repr only
    _upath: str | None = None          # a file version untied from its item: the user's path
    _lineage: Any = None               # what recomputes a value lost with its node (lineage)
    _cancel_successors = False         # its task was CANCEL_SUCCESSORS: readers are cancelled

    def __init__(self, rt: FutureHost | None = None, producer: Task | None = None,
                 did: int = 0) -> None:
        # Deliberately not calling super().__init__: see the module docstring.
        self._state = PENDING
        self._rt = rt
        self._producer = producer
        self._did = did
        self._result = _NOVALUE
        self._exception: TaskError | None = None   # the runtime's errors only
        self._payload: Payload | None = None       # pickled value held by the master
        self._holders: set[str] | None = None      # node names that hold the value
        self._consumers: list[Task] | None = None  # tasks waiting for this version
        self._wev: list[Waiter] | None = None      # runtime waiters
        # what can change this value (graph.keys; resumable runs): its key, or the record of
        # the plain call that made it, whose key is computed when asked (runtime.recovery.log),
        # or the task that made it, ended, whose key waited (graph.keys.waiting_key)
        self._key: bytes | tuple[Any, ...] | Task | None = None

    # -- the concurrent.futures internals, made lazily -------------------
    @property
    def _condition(self) -> threading.Condition:
        c = self._cond
        if c is None:
            with _make_lock:
                c = self._cond
                if c is None:
                    c = self._cond = threading.Condition()
        return c

    @_condition.setter
    def _condition(self, c: threading.Condition) -> None:
        # Never used here; the base class declares a writable attribute (typing).
        self._cond = c

    @property
    def _waiters(self) -> list[_Waiter]:
        w = self._cf_waiters
        if w is None:
            with _make_lock:
                w = self._cf_waiters
                if w is None:
                    w = self._cf_waiters = []
        return w

    @_waiters.setter
    def _waiters(self, w: list[_Waiter]) -> None:
        # Never used here; the base class declares a writable attribute (typing).
        self._cf_waiters = w

    @property
    def _done_callbacks(self) -> list[DoneCallback]:
        cb = self._done_callbacks_
        if cb is None:
            cb = self._done_callbacks_ = []
        return cb

    # -- public API --------------------------------------------------------
    def done(self) -> bool:
        return self._state in (FINISHED, CANCELLED, CANCELLED_AND_NOTIFIED)

    def running(self) -> bool:
        return self._state == RUNNING

    def cancelled(self) -> bool:
        return self._state in (CANCELLED, CANCELLED_AND_NOTIFIED)

    def cancel(self) -> bool:
        """Tasks already recorded in the graph are not withdrawn; returns False."""
        return False

    def result(self, timeout: float | None = None) -> Any:
        if self._state != FINISHED:
            self._wait(timeout)
        exc = self._exception
        if exc is not None:
            exc.met()           # the program's to handle now (errors.TaskError.met)
            raise exc
        return self._value()

    def exception(self, timeout: float | None = None) -> BaseException | None:
        if self._state != FINISHED:
            self._wait(timeout)
        exc = self._exception
        if exc is not None:
            exc.met()
        return exc

    def add_done_callback(self, fn: Callable[[Future], object]) -> None:
        rt = self._rt
        if rt is not None and rt.add_done_callback(self, fn):
            return
        fn(self)

    def set_running_or_notify_cancel(self) -> bool:  # pragma: no cover - executor API
        raise RuntimeError("taskflow futures are completed by the runtime")

    def set_result(self, result: Any) -> None:  # pragma: no cover - executor API
        raise RuntimeError("taskflow futures are completed by the runtime")

    def set_exception(self, exception: BaseException | None) -> None:  # pragma: no cover
        raise RuntimeError("taskflow futures are completed by the runtime")

    # -- helpers -------------------------------------------------------------
    def _wait(self, timeout: float | None) -> None:
        rt = self._rt
        if rt is None:
            raise RuntimeError("this future belongs to no runtime")
        if not rt.wait_futures([self], timeout):
            raise _cf.TimeoutError()

    def _value(self) -> Any:
        v = self._result
        if v is _NOVALUE:
            payload = self._payload
            if type(payload) is bytes and not self._holders:     # the common case: inline
                v = self._result = pickle.loads(payload)
                return v
            rt = self._rt
            if rt is None:
                payload, own = self._payload, False
                assert payload is not None      # (a future of no runtime holds its value)
            else:
                payload, own = rt.take_payload(self)
            # own: the value also lives on a node, which serves whoever needs it next, so
            # the program's object is built on the bytes that came; else a copy (the
            # payload may still go to a node)
            v = self._result = values.load(payload, take=own)
        return v

    # -- transitions: the runtime and the graph change a future only through these,
    # under the run's lock (finish and add_consumer are per task: each does its whole
    # change in one call) ----------------------------------------------------------
    def finish(self, payload: Payload | None,
               callbacks_out: list[tuple[DoneCallback, Future]]) -> list[Task] | None:
        """Its task's value came to the master (``payload``: its bytes): finished, with no
        producer any more.

        Returns the tasks that waited for it, if any: the caller releases them, then
        wakes whoever waits on this future (:meth:`notify_done`; ``runtime.rules.ending.release``
        does both), in that order. With none, those are woken here.
        """
        self._payload = payload
        self._now_finished()
        self._forget_producer()
        consumers = self._consumers
        if consumers is not None:
            self._consumers = None
            return consumers
        if self._wev is not None or self._done_callbacks_:
            self.notify_done(callbacks_out)     # (most futures: nobody waits on them yet)
        return None

    def settle(self, callbacks_out: list[tuple[DoneCallback, Future]]) -> list[Task] | None:
        """:meth:`finish` for a future whose value, error or holders are set already."""
        self._now_finished()
        self._forget_producer()
        consumers = self._consumers
        if consumers is not None:
            self._consumers = None
            return consumers
        if self._wev is not None or self._done_callbacks_:
            self.notify_done(callbacks_out)
        return None

    def add_consumer(self, task: Task) -> None:
        """``task`` waits for this version (released when it finishes)."""
        consumers = self._consumers
        if consumers is None:
            self._consumers = [task]
        else:
            consumers.append(task)

    def take_consumers(self) -> list[Task] | None:
        """The tasks that wait for this version, which no longer do (they are cancelled)."""
        consumers = self._consumers
        if consumers is not None:
            self._consumers = None
        return consumers

    def finish_cancelled(self, callbacks_out: list[tuple[DoneCallback, Future]]) -> None:
        """Its task was cancelled (its error or value is set already): finished, and who
        waits on it wakes. Its consumers stay: the cancellation walks them itself."""
        self._now_finished()
        self._forget_producer()
        self.notify_done(callbacks_out)

    def _now_finished(self) -> None:
        """FINISHED, and ``concurrent.futures``' waiters told in the same step, under the
        future's condition, as ``concurrent.futures.Future.set_result`` does: ``wait`` and
        ``as_completed`` take a future's state and install their waiter under it, so they
        see it pending (and are told) or finished (and are not). Told later, a waiter that
        had found it finished got it a second time (``as_completed``: KeyError)."""
        cond = self._cond
        if cond is None:
            with _make_lock:        # (no condition made meanwhile: nobody waits that way)
                cond = self._cond
                if cond is None:
                    self._state = FINISHED
                    return
        with cond:
            self._state = FINISHED
            waiters = self._cf_waiters
            if waiters:
                for cw in waiters:
                    if self._exception is not None:
                        cw.add_exception(self)
                    else:
                        cw.add_result(self)
            cond.notify_all()

    def _forget_producer(self) -> None:
        """Let go of the task that made it (the master keeps no ended task), keeping its
        id: a task that reads this later still has its edge in the journal's graph."""
        p = self._producer
        if p is not None:
            self._tid = p.id
            self._producer = None

    def producer_id(self) -> int:
        """The id of the task that makes or made this version (0: none, a plain value)."""
        p = self._producer
        if p is not None:
            return p.id
        try:
            return self._tid
        except AttributeError:      # (never made by a task)
            return 0

    def fail(self, err: TaskError) -> None:
        """Its value is ``err``: whoever asks for it gets the error raised."""
        self._exception = err

    def give_default(self, payload: Payload, value: Any) -> None:
        """Its value is ``value`` (pickled as ``payload``), not one a task made (a failed
        task's default output)."""
        self._payload = payload
        self._result = value

    def void(self, cancel_readers: bool) -> None:
        """Its failed or cancelled task gives None instead; with ``cancel_readers`` the
        tasks that read it are cancelled (CANCEL_SUCCESSORS)."""
        self._payload = NONE_PAYLOAD
        self._result = None
        if cancel_readers:
            self._cancel_successors = True

    def file_made(self, path: str | None = None) -> None:
        """A file or directory version is written (at ``path``, when it is not where this
        version was planned: a resumed run's earlier directory); its value is its path."""
        if path is not None:
            self._path = path
        self._result = self._path

    def written_at(self, path: str) -> None:
        """This file or directory version is (being) written at ``path``, not where it was
        planned: an adopted task's, in the earlier run's directory (runtime/recovery/adopt.py)."""
        self._path = path

    def held_by(self, node: str) -> bool:
        """``node`` holds the value too from now on; True when it is the first node that
        does (the caller then watches the future: runtime.loop.remote_values)."""
        holders = self._holders
        if holders is None:
            self._holders = {node}
            return True
        holders.add(node)
        return False

    def left_on(self, node: str) -> bool:
        """Its task left the value on ``node``, which alone holds it; True when no node
        held it before (the caller then watches the future: runtime.loop.remote_values)."""
        first = self._holders is None
        self._holders = {node}
        return first

    def not_held_by(self, node: str) -> None:
        """``node`` does not hold the value (any more, or will not make it after all)."""
        holders = self._holders
        if holders:
            holders.discard(node)

    def fetched(self, payload: Payload) -> None:
        """The value came from a node to the master, which holds its bytes now."""
        self._payload = payload

    def drop_payload(self) -> None:
        """The master lets go of the value's bytes (a node holds the value too)."""
        self._payload = None

    def made_by(self, task: Task) -> None:
        """``task`` makes this version (a new write, or again: lineage): pending, on no
        node yet."""
        self._producer = task
        self._state = PENDING
        self._holders = None

    def remembered(self, record: Any) -> None:
        """``record`` can make the value again if its node is lost (runtime.rules.lineage)."""
        self._lineage = record

    def stand_in(self, record: Any) -> None:
        """This new future stands for a value that no node holds any more: finished, and
        made again from ``record`` when somebody needs it (runtime.rules.lineage)."""
        self._state = FINISHED
        self._holders = set()
        self._lineage = record

    def reopen(self, waiter: Waiter) -> None:
        """The lost value is being made again (lineage): pending until then, and
        ``waiter`` is told when it is finished."""
        self.add_waiter(waiter)
        self._state = PENDING

    def add_waiter(self, waiter: Waiter) -> None:
        """``waiter`` is told when this future is finished (:meth:`notify_done`)."""
        wev = self._wev
        if wev is None:
            self._wev = [waiter]
        else:
            wev.append(waiter)

    def version_of(self, item: DataItem, path: str | None = None) -> None:
        """This is a version of ``item`` (an object written in place, a file); a file's
        version lives at ``path``."""
        self._item = item
        if path is not None:
            self._path = path
            self._label = os.path.basename(item.path or "")

    def user_version(self, item: DataItem) -> None:
        """Version 0 of a file or directory: the user's own, as it is now (finished)."""
        assert item.path is not None        # a file's or directory's item
        self.version_of(item, item.path)
        self._state = FINISHED
        self._result = item.path

    def untie(self) -> None:
        """Its item is forgotten (the item and its versions refer to each other); a file
        version keeps the user's path (the journal names files by it, maybe later)."""
        item = self._item
        if item is not None and item.path:
            self._upath = item.path
        self._item = None

    def moved_to(self, path: str) -> None:
        """The file version was renamed to ``path`` (the user's: materialized)."""
        self._path = path

    def set_key(self, key: bytes | tuple[Any, ...] | Task) -> None:
        """What can change this value, as one key (graph.keys; resumable runs), or what the
        key of the plain call that made it is made of, (function number, argv), once the
        resume log kept the call (its key when asked), or the ended task that made it, whose
        key waited (its key when asked)."""
        self._key = key

    def notify_done(self, callbacks_out: list[tuple[DoneCallback, Future]]) -> None:
        """Wake everybody waiting on this future; called by the runtime under its lock.

        Done callbacks are collected into ``callbacks_out`` so the runtime can run
        them after it has released its lock.
        """
        wev = self._wev
        if wev is not None:
            self._wev = None
            for w in wev:
                w.one_done()
        cbs = self._done_callbacks_
        if cbs:
            self._done_callbacks_ = None
            callbacks_out.extend((cb, self) for cb in cbs)

    def __repr__(self) -> str:
        return f"<taskflow.Future d{self._did} {self._name()} {self._state.lower()}>"

    def _name(self) -> str:
        return self._label or (self._producer.spec.name if self._producer is not None else
                               self._exception.task_name if self._exception is not None else "")

    # A future used as if it were its value (``square(3) + 1``, ``if f > 5``, ``a, b =
    # pair(x)`` without returns=2) is a mistake Python alone answers with "unsupported
    # operand type(s) for +: 'Future' and 'int'": say whose future it is and the fix.
    def _not_a_value(self, use: str) -> NoReturn:
        raise TypeError(
            f"{use} on the future of task {self._name() or '?'} (d{self._did}): a task call "
            f"returns a future at once, not its value; wait_on(future) gives the value, or "
            f"pass the future to another task (that task waits for it)")

    def __iter__(self) -> NoReturn:
        raise TypeError(
            f"iterating or unpacking the future of task {self._name() or '?'} (d{self._did}): a "
            f"call gives one future per value; for several values declare @task(returns=N) "
            f"(then `a, b = f(x)` unpacks N futures), else wait_on(future) and iterate the "
            f"value")

    def _repr_html_(self) -> str:
        """Jupyter's view: task name, state, node, duration, the error with the user's frames
        (:mod:`taskflow.notebook.html`); reading it waits for nothing."""
        from .notebook.html import future_html
        return future_html(self)

    def __reduce__(self) -> NoReturn:
        raise TypeError(
            "a taskflow Future cannot be pickled; pass it directly as a task argument "
            "(it becomes a dependency) or call wait_on() first")

    def __getstate__(self) -> NoReturn:  # pragma: no cover - guarded by __reduce__
        raise TypeError("a taskflow Future cannot be pickled")


def _refuse(use: str) -> Callable[..., NoReturn]:
    def refuse(self: Future, *_: object) -> NoReturn:
        self._not_a_value(use)
    return refuse


for _op, _use in (("add", "+"), ("sub", "-"), ("mul", "*"), ("truediv", "/"),
                  ("floordiv", "//"), ("mod", "%"), ("pow", "**"), ("matmul", "@")):
    setattr(Future, f"__{_op}__", _refuse(f"'{_use}'"))
    setattr(Future, f"__r{_op}__", _refuse(f"'{_use}'"))
for _op, _use in (("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">=")):
    setattr(Future, f"__{_op}__", _refuse(f"'{_use}'"))
for _op, _use in (("neg", "unary '-'"), ("abs", "abs()"), ("round", "round()")):
    setattr(Future, f"__{_op}__", _refuse(_use))


class Count:
    """Fires once ``n`` futures finished (done callbacks run in the loop thread; a nested
    wait's answer: runtime/nesting.py)."""

    def __init__(self, n: int, fire: Any) -> None:
        self.n = n
        self.fire = fire
        self.lock = threading.Lock()

    def one(self, _: Any) -> None:
        with self.lock:
            self.n -= 1
            last = self.n == 0
        if last:
            self.fire()
