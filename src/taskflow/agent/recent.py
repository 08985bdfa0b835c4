"""Results an agent sent that a cut link may have kept from its master.

A link cut does not close the agent's stream: what it writes in the
meantime (and what was on the way when the link went) goes into a connection
that will never deliver it, until the agent takes its master for lost (its
silence limit). In an adoptable run the agent keeps the RESULTS it sent
within that window (:class:`Recent`, one entry per frame, at most
:data:`RECENT_MAX` results and :data:`RECENT_BYTES` of frames); when it
takes its master for lost they are offered again with the tasks it kept
(agent/orphan.py). A master that already has one says so (it cancels it:
nothing is used twice); one that does not (its own master back after the cut,
runtime/rejoin.py) uses it instead of running the task again.
"""
from __future__ import annotations

import collections
import time

from ..wire import messages as M

RECENT_MAX = 4096       # results kept at most (the oldest go first) ...
RECENT_BYTES = 64 << 20  # ... and bytes of their frames


class Recent:
    def __init__(self, window: float) -> None:
        self.window = window
        self.frames: collections.deque[tuple[float, int, list[M.ResultWire]]] = \
            collections.deque()
        self.n = 0
        self.bytes = 0

    def sent(self, results: list[M.ResultWire], size: int) -> None:
        """A RESULTS frame of ``size`` bytes went to the master (0: it did not; once per
        frame: the agent's hot path)."""
        if not self.window or not size:     # (not an adoptable run, or no master)
            return
        now = time.time()
        frames = self.frames
        frames.append((now, size, results))
        self.n += len(results)
        self.bytes += size
        old = now - self.window
        while frames:
            first = frames.popleft()
            t, nbytes, sent = first
            if t >= old and self.n <= RECENT_MAX and self.bytes <= RECENT_BYTES:
                frames.appendleft(first)
                break
            self.n -= len(sent)
            self.bytes -= nbytes

    def take(self) -> list[M.ResultWire]:
        """The master is lost: the results sent within the window (then forgotten)."""
        old = time.time() - self.window
        out = [r for t, _, results in self.frames if t >= old for r in results]
        self.frames.clear()
        self.n = self.bytes = 0
        return out


def reported(result: M.ResultWire) -> M.TaskMsg:
    """What an agent keeps of a task whose result it sent (to offer it again): its id."""
    return M.TaskMsg(M.ResultMsg(*result).task_id, b"", None, None, None, 0, None, None, 0, 0,
                     False, [])
