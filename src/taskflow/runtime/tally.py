"""How many tasks a run has, and how they ended: one record that owns its counts.

The run's rules change the counts only through its methods, one per transition
(a task submitted, ended in a state, retried, reopened to make a lost value
again); screens, the journal's last row and tests read its fields. It is
changed under the run's lock; readers without the lock (the progress lines) see
counts at most one transition old.
"""
from __future__ import annotations

from ..graph import task as T


class Tally:
    """The run's task counts (``submitted``, ``active``: not ended yet, ``done``,
    ``failed``, ``ignored``: failed with IGNORE / CANCEL_SUCCESSORS, ``cancelled``,
    ``interrupted``, ``retries``: runs again beyond the first)."""

    __slots__ = ("submitted", "active", "done", "failed", "ignored", "cancelled", "interrupted",
                 "retries")

    def __init__(self) -> None:
        self.submitted = self.active = self.done = self.failed = self.ignored = 0
        self.cancelled = self.interrupted = self.retries = 0

    def submitted_one(self) -> None:
        """A call was recorded: one task more, not ended."""
        self.submitted += 1
        self.active += 1

    def ended(self, state: str) -> int:
        """A task ended in ``state`` (DONE, FAILED, CANCELLED or INTERRUPTED); the tasks
        still active."""
        if state == T.DONE:
            self.done += 1
        elif state == T.FAILED:
            self.failed += 1
        elif state == T.CANCELLED:
            self.cancelled += 1
        else:
            self.interrupted += 1
        self.active -= 1
        return self.active

    def ignored_one(self) -> None:
        """A failed task's policy (IGNORE, CANCEL_SUCCESSORS) lets the run go on."""
        self.ignored += 1

    def retried(self) -> None:
        """A task that had started runs again."""
        self.retries += 1

    def retry_undone(self) -> None:
        """A retry counted for a task whose node was only away: it did not run again."""
        self.retries = max(0, self.retries - 1)

    def reopened(self) -> None:
        """A task that ended well runs again to make a value lost with its node."""
        self.active += 1
        self.done -= 1
        self.retries += 1

    def counts(self, running: int) -> dict[str, int]:
        """The counts by name (``running``: tasks in flight on nodes, which the nodes know)."""
        return {"submitted": self.submitted, "done": self.done, "failed": self.failed,
                "cancelled": self.cancelled, "active": self.active,
                "interrupted": self.interrupted, "retries": self.retries, "running": running}
