"""Building blocks for unit tests of the master's rules and the agent's placement.

No pipes and no processes: nodes are :class:`NodeHandle` objects that are
never connected, the node I/O is a :class:`FakeComm` that records what the
rules asked of it, and tasks are built directly from their specs.
"""
from __future__ import annotations

import itertools
import pickle
import threading
import time
from typing import Any

from taskflow.future import Future
from taskflow.graph.spec import TaskSpec
from taskflow.graph.task import Task
from taskflow.providers.handle import NodeHandle
from taskflow.runtime.state import RunState

_ids = itertools.count(1)


class FakeComm:
    """A :class:`~taskflow.runtime.state.Comm` that records every request."""

    def __init__(self) -> None:
        self.pushed: list[tuple[str, int]] = []        # (node name, data id)
        self.cancelled: list[tuple[str, int]] = []     # (node name, task id)
        self.watched: list[int] = []                   # data ids
        self.fetches: list[tuple[int, Any]] = []       # (data id, waiter)
        self.wakes = 0

    def push_data(self, node: NodeHandle, fut: Future) -> None:
        self.pushed.append((node.name, fut._did))

    def cancel_on(self, node: NodeHandle, task_id: int) -> None:
        self.cancelled.append((node.name, task_id))

    def watch_remote(self, fut: Future, node: str | None = None) -> None:
        self.watched.append(fut._did)

    def request_fetch(self, fut: Future, waiter: Any) -> None:
        self.fetches.append((fut._did, waiter))

    def drop_fetches(self) -> list:
        waiters = [w for _, w in self.fetches]
        self.fetches = []
        return waiters

    def wake(self) -> None:
        self.wakes += 1


def node(name: str, slots: int = 2, memory_gb: float = 8.0) -> NodeHandle:
    """A node the scheduler can place on (never connected: no descriptors)."""
    return NodeHandle(name, -1, -1, slots=slots, memory_gb=memory_gb)


class Looks:
    """How often the scheduler looked at whether a :func:`counted_node` is usable."""

    n = 0


def counted_node(name: str, slots: int = 1, memory_gb: float = 8.0) -> NodeHandle:
    """A :func:`node` that counts the scheduler's looks at it (in :class:`Looks`)."""
    n = node(name, slots=slots, memory_gb=memory_gb)
    cls = type(n)

    class Counted(cls):  # type: ignore[misc, valid-type]
        @property
        def usable(self) -> bool:
            Looks.n += 1
            return bool(cls.usable.fget(self))  # type: ignore[attr-defined]
    n.__class__ = Counted
    return n


def state(*nodes: NodeHandle, retries: int = 1) -> tuple[RunState, FakeComm]:
    comm = FakeComm()
    st = RunState(retries=retries, comm=comm)
    st.scheduler.nodes = list(nodes)
    return st, comm


def spec(fn: Any = None, **kw: Any) -> TaskSpec:
    """The spec of a plain function (``on_failure``, ``priority``, ``retries`` as @task)."""
    if fn is None:
        def fn(x=None):  # noqa: ANN001, ANN202 - a stand-in task function
            return x
    return TaskSpec(fn, {}, kw.pop("returns", None), kw.pop("priority", False), None,
                    kw.pop("on_failure", "RETRY"), kw.pop("retries", None))


def task(sp: TaskSpec, *inputs: Future, st: RunState | None = None, nout: int = 1) -> Task:
    """A task of ``sp`` reading ``inputs``; recorded in ``st`` as the runtime would."""
    outs = [Future(None, None, next(_ids)) for _ in range(nout)]
    refs = [((i,), "r", f) for i, f in enumerate(inputs)] or None
    t = Task(next(_ids), sp, tuple(None for _ in inputs), None, refs, outs, None,
             list(inputs) or None, time.time())
    for f in outs:
        f._producer = t
    if st is not None:
        st.tally.submitted_one()
        for d in inputs:
            if d._state != "FINISHED":
                d._consumers = (d._consumers or []) + [t]
                t.npending += 1
        if t.npending == 0:
            t.state = "READY"
            st.scheduler.push(t)
    return t


def dispatch(t: Task, n: NodeHandle) -> None:
    """What the dispatcher records when it sends ``t`` to ``n``."""
    t.state = "DISPATCHED"
    t.node = n
    n.inflight[t.id] = t
    n.used += t.cus
    n.mem_used += t.mem


def value(v: Any) -> bytes:
    return pickle.dumps(v)


def event_waiter() -> threading.Event:
    return threading.Event()
