"""The items of a map called as tasks, a bounded number in flight, failures counted.

:meth:`MapRunner.run` runs in the program's place (the run's main thread):
it calls the map's task once per item, never with more than ``window``
items called and not yet ended (so the master holds the tasks of a window,
not of the map: 100,000 items or 10 million take the same memory), then
waits for the last ones. Each item's end is counted by a done callback on
the runtime's thread; a failure is kept (its index, task id, exit code) for
the closing list, the first :data:`LISTED` of them. ``--max-fails N``: at the
N-th failure no more items are called and :class:`MaxFails` ends the map
(the run then cancels what has not ended).
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field
from typing import Any, Callable

from ..errors import TaskCancelled
from .items import ItemPlan

WINDOW = 4096           # items called and not yet ended, at most
LISTED = 20             # failed items listed one by one at the end


class MaxFails(Exception):
    """``--max-fails N`` failures: the map stops (the message says so)."""


@dataclass
class Failed:
    index: int
    task_id: int
    code: int | None                # the exit code (None: no exit, e.g. a time-out)
    why: str


@dataclass
class Tally:
    called: int = 0
    ended: int = 0
    failed: int = 0
    cancelled: int = 0
    listed: list[Failed] = field(default_factory=list)


class MapRunner:
    """Calls ``task`` for every item of ``plan`` (see the module docstring)."""

    def __init__(self, plan: ItemPlan, task: Callable[..., Any], max_fails: int | None,
                 window: int = WINDOW) -> None:
        self.plan, self.task, self.max_fails, self.window = plan, task, max_fails, window
        self.tally = Tally()
        self.fatal: str | None = None   # a failure every item would meet: the map stops
        self._cond = threading.Condition()

    def run(self) -> None:
        """Every item called, then every one ended (raises MaxFails)."""
        plan, task, tally, cond = self.plan, self.task, self.tally, self._cond
        for index, values in plan.items():
            with cond:
                while tally.called - tally.ended >= self.window and not self._stopping():
                    cond.wait(1.0)
                self._check_stop()
                tally.called += 1
            fut = task(*plan.arguments(index, values))
            fut.add_done_callback(lambda f, i=index: self._ended(f, i))
        with cond:
            while tally.ended < tally.called and not self._stopping():
                cond.wait(1.0)
            self._check_stop()

    def _stopping(self) -> bool:
        return self.fatal is not None or (
            self.max_fails is not None and self.tally.failed >= self.max_fails)

    def _check_stop(self) -> None:
        if self.fatal is not None:
            raise MaxFails(self.fatal)
        if self._stopping():
            raise MaxFails(f"--max-fails {self.max_fails}: {self.tally.failed} item(s) failed; "
                           f"the items not ended are cancelled")

    def _ended(self, fut: Any, index: int) -> None:
        """An item's task ended (the runtime's thread: quick, no waiting)."""
        exc = fut._exception            # (read without meeting it: the run reports it)
        with self._cond:
            tally = self.tally
            tally.ended += 1
            if exc is not None:
                if isinstance(exc, TaskCancelled) or getattr(exc, "kind", "") == "interrupted" \
                        or isinstance(getattr(exc, "__cause__", None), TaskCancelled):
                    tally.cancelled += 1        # not run, or stopped by an interrupt
                else:
                    tally.failed += 1
                    cause = exc.__cause__ if exc.__cause__ is not None else exc
                    if isinstance(cause, FileNotFoundError) and self.fatal is None:
                        # the program is not on a node (one whose files are not the
                        # master's: nothing checked it before): one error, not one per item
                        self.fatal = f"{cause}: every item would fail so; the map stops"
                    if len(tally.listed) < LISTED:
                        tally.listed.append(Failed(
                            index, getattr(exc, "task_id", 0),
                            getattr(cause, "returncode", None),
                            str(exc).split("\n", 1)[0]))
            self._cond.notify_all()
