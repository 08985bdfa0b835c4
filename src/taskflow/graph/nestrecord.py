"""What the master keeps of a task that called tasks (``Task.nest``): its calls, its
children, the units it lent while it waited, and whether a task under it runs on.

Made and changed by :mod:`taskflow.runtime.nesting` (the calls, the waits) and read by
the resume log (:meth:`NestRecord.left_open`)."""
from __future__ import annotations

from typing import TYPE_CHECKING, Any

from . import task as T

if TYPE_CHECKING:
    from ..providers.handle import NodeHandle
    from .task import Task


class NestRecord:
    """What the master keeps of a task that called tasks (``Task.nest``)."""

    __slots__ = ("task", "node", "calls", "children", "prune_at", "waiting", "since",
                 "waited", "released", "calls_at", "here", "under", "calls_in", "calls_made",
                 "closed")

    def __init__(self, task: Task, node: NodeHandle) -> None:
        self.task = task
        self.node = node
        self.calls: dict[int, Any] = {}      # call number -> the call's value (or _Refused)
        self.children: list[Task] = []      # those that may not have ended (to cancel)
        self.prune_at = 64                   # ... the ended ones go when it doubled
        self.waiting = False                 # its units are lent to its node
        self.since = 0.0                     # ... since then
        self.waited = 0.0                    # seconds it waited in all
        # calls whose handles the parent dropped (NestRelease) that had not ended well then:
        # kept (a barrier waits for them, sees their errors) and dropped once they did, when
        # the calls kept doubled (calls_at): the master keeps what the parent can still ask
        self.released: set[int] = set()
        self.calls_at = 64
        # its calls running in its executor (runhere), by number, until their end comes;
        # the dispatched calls those made (cancelled if the one that made it fails)
        self.here: dict[int, Task] = {}
        self.under: dict[int, list[Task]] = {}
        # its calls arrived (the loop thread counts) and made (the nesting thread): while
        # they differ, a call may still add a child; closed: it ended and every task under
        # it had ended when last looked (nothing can be added under it any more)
        self.calls_in = self.calls_made = 0
        self.closed = False

    def held(self, task: Task) -> float:
        """Seconds it held its slot (the scheduler's mean duration: waits left out)."""
        return max(0.0, task.t_end - task.t_start - self.waited)

    def left_open(self) -> bool:
        """Whether its task, which ended well, left a task under it that has not ended (a
        child or a child's child it did not wait for, or a call not made yet). Such a
        task's record is not kept for a resume (runtime/recovery/log.py): restored whole,
        it would not call them again, and a master killed before they ended would lose
        them; it runs again instead, and the children that had ended well are restored by
        their keys. Any thread: the states read only move towards an end (a stale one
        says open); a subtree found all ended is closed, and not walked again."""
        if self.closed:
            return False
        todo = [self]
        while todo:
            r = todo.pop()
            if r.calls_made != r.calls_in:
                return True
            for c in list(r.children):
                if c.state not in T.FINAL_STATES:
                    return True
                n = c.nest
                if n is not None and not n.closed:
                    todo.append(n)
        self.closed = True
        return False

