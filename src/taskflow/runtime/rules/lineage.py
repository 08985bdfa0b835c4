"""Recompute values that were lost with a node, from the calls that made them.

A result larger than the inline limit stays on the node that produced it
(``fut._holders``). When that node is lost, the value is gone; the call that
produced it is remembered in a :class:`Record` (``fut._lineage``), so whoever
needs the value next — a task about to be dispatched, or ``wait_on`` in the
main program — makes the runtime run that call again. Its own inputs follow
the same rule, recursively. Called with the runtime lock held.

A record keeps the call, never the values: it holds its outputs and its
inputs *weakly*. An input that nobody else refers to any more is dropped on
its node like any other value (``remote_values``); the record keeps what is
needed to make it again instead: the small value itself when it lived in the
master (at most the inline limit), or the record of the call that made it.
So a chain of large values is freed step by step as it runs, and a lost link
is made again from the start of the chain. A record, its outputs and its
inputs form no reference cycle: nothing here waits for the cyclic garbage
collector.
"""
from __future__ import annotations

import threading
import time
import weakref
from typing import TYPE_CHECKING, Any, Union

from ...future import Future
from ...graph import task as T
from ...graph.recorded import same_kind
from ...graph.task import Inout, Task
from ...wire import messages as M
from ...events import Retry
from .ending import Callbacks, cancel_task

if TYPE_CHECKING:
    from ..state import RunState, Waiter


class _Input:
    """One input of a remembered call: the future while it lives, else how to make it."""

    __slots__ = ("ref", "payload", "record", "index", "fut")

    def __init__(self, fut: Future) -> None:
        self.ref = weakref.ref(fut)
        self.fut: Future | None = None     # file versions: kept (they hold no node memory)
        self.record: Record | None = fut._lineage
        self.index = 0
        self.payload = None
        if fut._path is not None:
            self.fut = fut
        elif self.record is not None:
            self.index = self.record.index_of(fut)
        else:
            self.payload = fut._payload    # a value the master held (inline: small)

    def get(self, rt: RunState) -> Future:
        """The input's future: the live one, or a new one that stands for the same value."""
        if self.fut is not None:
            return self.fut
        fut = self.ref()
        if fut is not None:
            return fut
        new = Future(None, None, rt.new_did())   # internal: nobody waits on it
        if self.record is not None:     # made again on demand (ensure -> fetch -> recompute)
            new.stand_in(self.record)
            self.record.adopt(self.index, new)
        else:
            new.finish(self.payload, [])     # (new: nobody waits on it)
        self.ref = weakref.ref(new)
        return new


class Record:
    """The call that made one or more values left on nodes (outputs held weakly)."""

    __slots__ = ("spec", "tid", "argv", "kwargs", "refs", "inouts", "outs", "cus", "mem",
                 "options", "prio", "__weakref__")

    def __init__(self, task: Task) -> None:
        self.spec = task.spec
        self.tid = task.id
        self.argv = task.argv
        self.kwargs = task.kwargs
        self.cus, self.mem, self.options, self.prio = task.cus, task.mem, task.options, task.prio
        inputs: dict[int, _Input] = {}      # one per input future (a value read twice)
        refs: list[tuple[Any, Any, Any]] = []
        for path, kind, obj in task.refs or ():
            if kind == M.REF_VALUE:
                refs.append((path, kind, _input(inputs, obj)))
            elif kind == M.REF_PICKLED:
                refs.append((path, kind, same_kind(obj, [_input(inputs, f) for f in obj[1]])))
            else:                       # files and directories: their version futures
                refs.append((path, kind, obj))
        self.refs = refs
        self.inouts = [(e.path, e.kind, e.pname) for e in task.inouts] if task.inouts else None
        self.outs = [weakref.ref(f) for f in task.all_outputs()]

    def index_of(self, fut: Future) -> int:
        for i, r in enumerate(self.outs):
            if r() is fut:
                return i
        raise ValueError("not an output of this call")

    def adopt(self, index: int, fut: Future) -> None:
        """``fut`` now stands for output ``index`` (its first future is gone)."""
        self.outs[index] = weakref.ref(fut)

    def rerunning(self) -> Task | None:
        """The task making these values again, if one is under way."""
        for r in self.outs:
            f = r()
            if f is not None and f._producer is not None:
                return f._producer
        return None

    def task(self, rt: RunState) -> Task:
        """A new task for the same call, reading the inputs as they are now."""
        reads: list[Future] = []
        refs: list[Any] = []
        for path, kind, obj in self.refs:
            if kind == M.REF_VALUE:
                f = obj.get(rt)
                reads.append(f)
                refs.append((path, kind, f))
            elif kind == M.REF_PICKLED:
                futs = [i.get(rt) for i in obj[1]]
                reads.extend(futs)
                refs.append((path, kind, same_kind(obj, futs)))
            else:
                refs.append((path, kind, obj))
                if kind in (M.REF_FILE_INOUT, M.REF_DIR_INOUT):
                    reads.append(obj[0])
                elif kind == M.REF_FILE:
                    reads.append(obj)
        outs: list[Future] = []
        for i, r in enumerate(self.outs):
            f = r()
            if f is None:                # nobody wants this one: a stand-in takes the result
                f = Future(None, None, rt.new_did())
                self.outs[i] = weakref.ref(f)
            outs.append(f)
        n = len(outs) - (len(self.inouts) if self.inouts else 0)
        inouts = [Inout(p, k, name, v) for (p, k, name), v in zip(self.inouts, outs[n:])] \
            if self.inouts else None
        task = Task(self.tid, self.spec, list(self.argv) if isinstance(self.argv, list)
                    else self.argv, dict(self.kwargs) if self.kwargs else None, refs or None,
                    outs[:n], inouts, reads or None, time.time())
        task.cus, task.mem, task.options, task.prio = self.cus, self.mem, self.options, self.prio
        for f in outs:
            f.made_by(task)
        return task


def _input(inputs: dict[int, _Input], fut: Future) -> _Input:
    i = inputs.get(id(fut))
    if i is None:
        i = inputs[id(fut)] = _Input(fut)
    return i


def remember(task: Task) -> None:
    """``task`` left a value on a node: keep what is needed to run it again."""
    rec = Record(task)
    for fut in task.all_outputs():
        if fut._payload is None and fut._holders:
            fut.remembered(rec)


class _EventWaiter:
    __slots__ = ("event",)

    def __init__(self, event: threading.Event) -> None:
        self.event = event

    def one_done(self) -> None:
        self.event.set()


class _TaskWaiter:
    """A task that was about to be dispatched: back to the ready queue once recomputed."""
    __slots__ = ("rt", "task", "fut", "producer")

    def __init__(self, rt: RunState, task: Task, fut: Future, producer: Task) -> None:
        self.rt, self.task, self.fut, self.producer = rt, task, fut, producer

    def one_done(self) -> None:
        if self.task.state != T.READY:
            return
        if self.fut._exception is not None:
            cbs: Callbacks = []
            cancel_task(self.rt, self.task, self.producer, self.fut._exception, cbs)
            for fn, f in cbs:
                try:
                    fn(f)
                except Exception:  # noqa: BLE001
                    pass
            return
        self.rt.scheduler.push(self.task)


def recompute(rt: RunState, fut: Future, waiter: Waiter) -> bool:
    """No live node holds ``fut``: rerun the call that made it; ``waiter`` resumes after."""
    rec: Record | None = fut._lineage
    if rec is None:
        return False
    task = rec.rerunning()
    if task is None:
        task = rec.task(rt)
        task.state = T.READY
        rt.tally.reopened()
        rt.scheduler.push(task)
        if rt.bus.active:
            rt.bus.emit(Retry("retry", time.time(), task.id, task.spec.name, "",
                              "recomputing a value lost with its node"))
    elif task.state in (T.FAILED, T.CANCELLED):
        return False
    w: Union[_EventWaiter, _TaskWaiter] = _EventWaiter(waiter) \
        if isinstance(waiter, threading.Event) else _TaskWaiter(rt, waiter, fut, task)
    fut.reopen(w)
    return True
