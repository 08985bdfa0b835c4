"""The node's memory budget: spill held values above it, pause producers above a higher mark.

What is measured is the resident memory of the agent and its executors (the
values the node holds, the tasks' own memory, the interpreters), read from
``/proc`` (psutil elsewhere) at most every :data:`EVERY` seconds, and at once
after the store grew by :data:`STEP` bytes (1/16 of the budget when less). Two marks, both per node
(``memory_budget`` and ``memory_pause``; :mod:`taskflow.wire.budget`):

- above the **budget**, the oldest held values of 64 KiB or more go to the
  node's disk (:class:`~.store.ValueStore`) until the estimate is under 90 %
  of it; they are read back when needed;
- above the **pause mark**, the node says it is paused: the master sends it
  no new task that only makes values (one that reads none), only tasks that
  read values, which may free them, until the memory is under 90 % of the
  mark. A paused node with nothing running still gets one such task at a
  time (the master's side): a pause never stops a run.

Each change (values spilled or read back, paused or not) goes to the master
in a MEMORY frame, which the journal and the run report keep.
"""
from __future__ import annotations

import os
import time
from typing import TYPE_CHECKING, Callable

from ..wire import messages as M
from .store import ValueStore

if TYPE_CHECKING:
    from .pool import Pool

EVERY = 0.1            # s between two measures of the node's memory
STEP = 8 * 2**20       # bytes the store may grow by before the next measure (or 1/16 of
#                        the budget, when that is less)
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096


def rss(pid: int) -> int:
    """Resident bytes of process ``pid`` (0 when it is gone)."""
    try:
        with open(f"/proc/{pid}/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        try:
            import psutil
            return int(psutil.Process(pid).memory_info().rss)
        except Exception:  # noqa: BLE001 - no measure: count nothing
            return 0


class NodeMemory:
    def __init__(self, store: ValueStore, pool: Pool, budget: int, pause: int,
                 send: Callable[[M.MemoryReport], object]) -> None:
        self.store = store
        self.pool = pool
        self.budget = budget
        self.pause = pause
        self.send = send
        self.paused = False
        self.step = max(64 * 1024, min(STEP, budget // 16))
        self.last_rss = 0
        self._next = 0.0            # when to measure again
        self._held_then = 0         # store bytes at the last measure
        self._reads_then = 0

    def measure(self) -> int:
        """The node's resident memory now: the agent and its executors."""
        total = rss(os.getpid()) + self.store.shared     # (values in shared files: RAM too)
        for ex in self.pool.execs:
            total += rss(ex.pid)
        self.last_rss = total
        return total

    def check(self, now: float) -> None:
        """Once per agent round: spill and pause as the marks say (cheap when idle)."""
        store = self.store
        if now < self._next and store.nbytes - self._held_then < self.step:
            if store.nreads != self._reads_then:        # values read back: say so now
                self._reads_then, n = store.nreads, store.nreads - self._reads_then
                self.send(M.MemoryReport(time.time(), self.last_rss, store.nbytes,
                                         store.spilled, self.paused, [("read", 0, n)]))
            return
        self._next = now + EVERY
        self._held_then = store.nbytes
        used = self.measure()
        events: list[tuple[str, int, int]] = []
        if used > self.budget and store.large:
            for did, n in store.spill(used - int(0.9 * self.budget)):
                events.append(("spill", did, n))
                used -= n
            self._held_then = store.nbytes
            if store.failed is not None:        # (the disk is full: the master says so)
                events.append(("full", *store.failed))
                store.failed = None
        if store.nreads > self._reads_then:
            events.append(("read", 0, store.nreads - self._reads_then))
            self._reads_then = store.nreads
        paused = used > self.pause if not self.paused else used > 0.9 * self.pause
        if paused != self.paused:
            self.paused = paused
            events.append(("pause" if paused else "resume", 0, used))
        if events:
            self.send(M.MemoryReport(time.time(), used, store.nbytes, store.spilled,
                                     self.paused, events))
