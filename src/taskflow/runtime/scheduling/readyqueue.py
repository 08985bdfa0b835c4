"""The ready queue: tasks by priority, first in first out within a priority.

A binary heap of (-priority, sequence, task) cost ~2 us per pop once tens of
thousands of tasks were ready (15 levels of tuple comparisons); nearly every
workflow uses a handful of priorities, so a FIFO per priority makes push and
pop O(1) and keeps the same order: higher priority first, then submission
order (a task pushed back with :meth:`push_front` keeps its place).

The key is ``Task.prio``: twice the declared priority, plus one for a task
that reads values. So ``priority=True`` tasks go before every other ready
task (as in PyCOMPSs), and among tasks of one priority those that consume
values already made go before those that only make new ones: a
``consume(produce(i))`` pipeline submitted in one loop runs each consumer as
soon as its value exists, instead of every producer first, and the values
held on the nodes stay few (memory-aware ordering, as Dask orders its graph
depth first).
"""
from __future__ import annotations

import bisect
from collections import deque
from typing import TYPE_CHECKING, Iterable, Iterator

if TYPE_CHECKING:
    from ...graph.spec import TaskSpec
    from ...graph.task import Task


class ReadyQueue:
    __slots__ = ("_queues", "_prios", "_n")

    def __init__(self) -> None:
        self._queues: dict[int, deque[Task]] = {}
        self._prios: list[int] = []       # negated priorities, ascending: best first
        self._n = 0

    def _queue(self, prio: int) -> deque[Task]:
        q = self._queues.get(prio)
        if q is None:
            q = self._queues[prio] = deque()
            bisect.insort(self._prios, -prio)
        return q

    def push(self, task: Task) -> None:
        q = self._queues.get(task.prio)
        if q is None:
            q = self._queue(task.prio)
        q.append(task)
        self._n += 1

    def push_front(self, task: Task) -> None:
        self._queue(task.prio).appendleft(task)
        self._n += 1

    def peek(self) -> Task:
        """The next task (the queue must not be empty)."""
        return self._queues[-self._prios[0]][0]

    def pop(self) -> Task:
        prio = -self._prios[0]
        q = self._queues[prio]
        task = q.popleft()
        self._n -= 1
        if not q:
            del self._queues[prio]
            self._prios.pop(0)
        return task

    def pop_run(self, spec: TaskSpec, limit: int, plain: bool = False) -> list[Task]:
        """Pop up to ``limit`` tasks of ``spec`` from the head (the next task first).

        Stops at the first task of another function or at the end of the
        best priority: the tasks are the ones :meth:`pop` would give next;
        ``plain``: also at a task that reads other tasks' values or avoids a
        node (locality and retries place those one by one).
        """
        prio = -self._prios[0]
        q = self._queues[prio]
        out = [q.popleft()]
        popleft = q.popleft
        append = out.append
        n = 1
        if plain:
            while n < limit and q and q[0].spec is spec and not q[0].reads \
                    and not q[0].excluded:
                append(popleft())
                n += 1
        else:
            while n < limit and q and q[0].spec is spec:
                append(popleft())
                n += 1
        self._n -= n
        if not q:
            del self._queues[prio]
            self._prios.pop(0)
        return out

    def replace(self, tasks: Iterable[Task]) -> None:
        """Keep only ``tasks`` (in the order given, per priority)."""
        self.clear()
        for t in tasks:
            self.push(t)

    def clear(self) -> None:
        self._queues.clear()
        self._prios.clear()
        self._n = 0

    def __len__(self) -> int:
        return self._n

    def __bool__(self) -> bool:
        return self._n > 0

    def __iter__(self) -> Iterator[Task]:
        for p in list(self._prios):
            yield from list(self._queues.get(-p, ()))
