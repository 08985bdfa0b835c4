"""Results an agent sent that a cut link may have kept from its master.

A link cut does not close the agent's stream: what it writes in the
meantime (and what was on the way when the link went) goes into a connection
that will never deliver it, until the agent takes its master for lost (its
silence limit). In an adoptable run the agent keeps the RESULTS it sent
within that window (:class:`Recent`, one entry per frame, bounded); when it
takes its master for lost they are offered again with the tasks it kept
(agent/orphan.py). A master that already has one says so (it cancels it:
nothing is used twice); one that does not (its own master back after the cut,
runtime/rejoin.py) uses it instead of running the task again.
"""
from __future__ import annotations

import collections
import time

from ..wire import messages as M

RECENT_MAX = 4096       # results kept at most (the oldest go first)


class Recent:
    def __init__(self, window: float) -> None:
        self.window = window
        self.frames: collections.deque[tuple[float, list[M.ResultWire]]] = collections.deque()
        self.n = 0

    def sent(self, results: list[M.ResultWire]) -> None:
        """A RESULTS frame went to the master (once per frame: the agent's hot path)."""
        if not self.window:         # (not an adoptable run)
            return
        now = time.time()
        frames = self.frames
        frames.append((now, results))
        self.n += len(results)
        old = now - self.window
        while frames:
            first = frames.popleft()
            t, sent = first
            if t >= old and self.n <= RECENT_MAX:
                frames.appendleft(first)
                break
            self.n -= len(sent)

    def take(self) -> list[M.ResultWire]:
        """The master is lost: the results sent within the window (then forgotten)."""
        old = time.time() - self.window
        out = [r for t, results in self.frames if t >= old for r in results]
        self.frames.clear()
        self.n = 0
        return out


def reported(result: M.ResultWire) -> M.TaskMsg:
    """What an agent keeps of a task whose result it sent (to offer it again): its id."""
    return M.TaskMsg(M.ResultMsg(*result).task_id, b"", None, None, None, 0, None, None, 0, 0,
                     False, [])
