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
        self.oldest = 0.0               # when the oldest frame kept was sent

    def sent(self, results: list[M.ResultWire], size: int) -> None:
        """A RESULTS frame of ``size`` bytes went to the master (0: it did not; once per
        frame: the agent's hot path, so the old ones go only when one is due)."""
        if not size or not self.window:     # (no master, or not an adoptable run)
            return
        now = time.time()
        self.frames.append((now, size, results))
        self.n += len(results)
        self.bytes += size
        if now - self.oldest > self.window or self.n > RECENT_MAX or \
                self.bytes > RECENT_BYTES:
            self._trim(now - self.window)

    def _trim(self, old: float) -> None:
        """The frames older than ``old`` go, and the oldest down to half the bounds (so
        that a busy agent trims once per thousands of results, not per frame)."""
        frames = self.frames
        while frames:
            first = frames.popleft()
            t, nbytes, sent = first
            if t >= old and self.n <= RECENT_MAX // 2 and self.bytes <= RECENT_BYTES // 2:
                frames.appendleft(first)
                self.oldest = t
                return
            self.n -= len(sent)
            self.bytes -= nbytes
        self.oldest = 0.0

    def take(self) -> list[M.ResultWire]:
        """The master is lost: the results sent within the window (then forgotten)."""
        old = time.time() - self.window
        out = [r for t, _, results in self.frames if t >= old for r in results]
        self.frames.clear()
        self.n = self.bytes = 0
        self.oldest = 0.0
        return out


def reported(result: M.ResultWire) -> M.TaskMsg:
    """What an agent keeps of a task whose result it sent (to offer it again): its id."""
    return M.TaskMsg(M.ResultMsg(*result).task_id, b"", None, None, None, 0, None, None, 0, 0,
                     False, [])
