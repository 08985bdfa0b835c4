"""The agent's own queue of work not yet placed on an executor.

A heap of ``(-priority, seq, item)``: higher priority first, then arrival.
An item is one task, or a *run*: a list of consecutive plain tasks of one
function and priority, which placement splits over the executors in slices
(no heap operation per task for the bulk of short tasks).
"""
from __future__ import annotations

import heapq
from typing import Union

from ..wire import messages as M

Item = Union[M.TaskMsg, list[M.TaskMsg]]


class WorkQueue:
    __slots__ = ("heap", "seq")

    def __init__(self) -> None:
        self.heap: list[tuple[int, int, Item]] = []
        self.seq = 0

    def __len__(self) -> int:
        return len(self.heap)

    def __bool__(self) -> bool:
        return bool(self.heap)

    def push(self, t: M.TaskMsg) -> None:
        self.seq += 1
        heapq.heappush(self.heap, (-t.priority, self.seq, t))

    def push_run(self, t: M.TaskMsg) -> list[M.TaskMsg]:
        """Start a run with ``t``; the caller appends the tasks that follow it."""
        run = [t]
        self.seq += 1
        heapq.heappush(self.heap, (-t.priority, self.seq, run))
        return run

    def head(self) -> Item:
        _, _, item = self.heap[0]
        return item

    def pop(self) -> tuple[int, int, Item]:
        return heapq.heappop(self.heap)

    def put_back(self, entry: tuple[int, int, Item]) -> None:
        heapq.heappush(self.heap, entry)

    def queued(self) -> list[M.TaskMsg]:
        """Every task on the queue (runs flattened)."""
        out: list[M.TaskMsg] = []
        for _, _, x in self.heap:
            if type(x) is list:
                out.extend(x)
            else:
                out.append(x)   # type: ignore[arg-type]
        return out

    def take_all(self) -> list[M.TaskMsg]:
        """Empty the queue; return what it held."""
        out = self.queued()
        self.heap = []
        return out

    def remove(self, tids: set[int]) -> None:
        """Forget the tasks ``tids`` (cancelled)."""
        kept = []
        for entry in self.heap:
            _, _, x = entry
            if type(x) is list:
                x[:] = [t for t in x if t.task_id not in tids]
                if x:
                    kept.append(entry)
            elif x.task_id not in tids:   # type: ignore[union-attr]
                kept.append(entry)
        heapq.heapify(kept)
        self.heap = kept
