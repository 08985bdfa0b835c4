"""Values copied from node to node through the master, streamed in parts.

A value left on node A that a task placed on node B reads must reach B.
The master does not fetch it whole and send it on: it asks A for the value
in parts of :data:`PART` bytes (PULL) and forwards each part to B as it comes
(PART frames; the bytes are out of band, so forwarding copies nothing), and
asks for more only while B's connection has taken what it was sent (less
than :data:`BACKLOG` waiting) and at most :data:`WINDOW` parts of the copy are
on their way. So the master holds a few parts of a value, never the whole:
with SSH nodes in two places, twenty 100 MB values cross the master in a
few tens of MB of its memory (``benchmarks/memory_bench.py``). Node B puts
the parts together in place and holds the value from then on.

The copy's waiters (tasks that wait for the value to be on B) go back to the
ready queue when its last part has gone to B: frames to a node keep their
order, so the task's own frame comes after. A source that no longer holds
the value, or is lost, hands the copy to another holder (or to lineage,
which makes the value again); a lost destination ends the copy and its
waiters are placed again.
"""
from __future__ import annotations

import pickle
import threading
import time
from typing import TYPE_CHECKING

from ...events import Moved
from ...future import FINISHED
from ...graph import task as T
from ...wire import messages as M
from ...wire import protocol as P
from ..rules import lineage

if TYPE_CHECKING:
    from ...future import Future
    from ...providers.handle import NodeHandle
    from ..state import RunState
    from ..state import Waiter

PART = 4 * 2**20           # bytes a part carries
WINDOW = 4                 # parts of one copy asked for and not yet forwarded
BACKLOG = 16 * 2**20       # bytes waiting to go to a destination before more are asked for
IN_FLIGHT = 64 * 2**20     # bytes asked for and not yet forwarded, all copies together


class Copy:
    """One value on its way from ``src`` to ``dst``."""

    __slots__ = ("fut", "src", "dst", "total", "asked", "sent", "waiters", "t0")

    def __init__(self, fut: Future, src: NodeHandle, dst: NodeHandle, waiter: Waiter) -> None:
        self.fut = fut
        self.src = src
        self.dst = dst
        self.total = -1          # bytes of the value's flat layout (agent.store.flat): from
        self.asked = 0           # the first part; bytes asked for so far
        self.sent = 0            # bytes forwarded to dst
        self.waiters: list[Waiter] = [waiter]
        self.t0 = time.time()


class Relay:
    def __init__(self, rt: RunState) -> None:
        self.rt = rt
        self.copies: dict[tuple[int, str], Copy] = {}      # (data id, dst name) -> copy
        self.forward: list[tuple[NodeHandle, list[P.Part]]] = []   # parts to queue (no lock)

    def __bool__(self) -> bool:
        return bool(self.copies)

    # -- under the runtime lock ---------------------------------------------------------
    def request(self, fut: Future, dst: NodeHandle, waiter: Waiter) -> bool:
        """Start copying ``fut``'s value to ``dst`` (or join the copy under way); False
        when no node holds it and it cannot be made again (the waiter is released)."""
        key = (fut._did, dst.name)
        copy = self.copies.get(key)
        if copy is not None:
            copy.waiters.append(waiter)
            return True
        src = self._source(fut, dst)
        if src is None:
            return self._lost(fut, waiter)
        self.copies[key] = Copy(fut, src, dst, waiter)
        return True

    def _source(self, fut: Future, dst: NodeHandle) -> NodeHandle | None:
        return self.rt.scheduler.holder(fut, dst)

    def _lost(self, fut: Future, waiter: Waiter) -> bool:
        """No node holds the value: lineage makes it again, the waiter resumes after."""
        if lineage.recompute(self.rt, fut, waiter):
            self.rt.comm.wake()
            return True
        if isinstance(waiter, threading.Event):
            waiter.set()
        return False

    def pulls(self) -> dict[NodeHandle, list[tuple[int, int, int]]]:
        """The parts to ask for this round, per source node (flow control: module doc)."""
        out: dict[NodeHandle, list[tuple[int, int, int]]] = {}
        flying = sum(c.asked - c.sent for c in self.copies.values())
        for c in self.copies.values():
            if c.total < 0 and c.asked:
                continue                # the first part tells the size: wait for it
            backlog = c.dst.pending_out()
            while (c.total < 0 or c.asked < c.total) and c.asked - c.sent < WINDOW * PART \
                    and backlog < BACKLOG and flying < IN_FLIGHT:
                n = PART if c.total < 0 else min(PART, c.total - c.asked)
                out.setdefault(c.src, []).append((c.fut._did, c.asked, n))
                c.asked += n
                flying += n
                backlog += n
                if c.total < 0:
                    break
        return out

    def parts(self, src: NodeHandle, body: list[M.PartWire]) -> None:
        """Parts arrived from ``src``: on to their destinations."""
        for did, off, total, data in body:
            for c in [c for (d, _), c in self.copies.items() if d == did and c.src is src]:
                if total < 0:           # src does not hold it (dropped there, or lost)
                    self._restart(c)
                    continue
                if c.total < 0:
                    c.total = total
                    c.asked = max(c.asked, len(data))
                dst = c.dst
                if not dst.alive:
                    continue
                self.forward.append((dst, P.encode_parts(
                    M.PART, [(did, off, total, pickle.PickleBuffer(data))])))
                c.sent += len(data)
                if c.sent >= c.total:
                    self._done(c)

    def _done(self, c: Copy) -> None:
        """The last part went to ``dst``: it holds the value from now on."""
        del self.copies[(c.fut._did, c.dst.name)]
        fut = c.fut
        fut.held_by(c.dst.name)
        self.rt.comm.watch_remote(fut)
        bus = self.rt.bus
        if bus.active:      # for the first task that waited (a move serves them all)
            tid = next((w.id for w in c.waiters if not isinstance(w, threading.Event)), 0)
            bus.emit(Moved("moved", time.time(), tid, "", c.dst.name,
                           (c.t0, c.total, c.src.name, fut.producer_id())))
        self._release(c.waiters)

    def _release(self, waiters: list[Waiter]) -> None:
        sched = self.rt.scheduler
        for w in waiters:
            if isinstance(w, threading.Event):
                w.set()
            elif w.state == T.READY:
                sched.push(w)

    def _restart(self, c: Copy) -> None:
        """The source cannot send the value: another holder, or lineage."""
        fut = c.fut
        fut.not_held_by(c.src.name)
        del self.copies[(fut._did, c.dst.name)]
        if fut._state is not FINISHED or fut._exception is not None:
            self._release(c.waiters)
            return
        first, *rest = c.waiters
        if self.request(fut, c.dst, first):
            for w in rest:
                self.request(fut, c.dst, w)
        else:
            self._release(rest)

    def node_lost(self, node: NodeHandle) -> None:
        """Copies from a lost node start again elsewhere; copies to it end."""
        for c in list(self.copies.values()):
            if c.dst is node:
                del self.copies[(c.fut._did, node.name)]
                self._release(c.waiters)
            elif c.src is node:
                self._restart(c)

    def take_forward(self) -> list[tuple[NodeHandle, list[P.Part]]]:
        out, self.forward = self.forward, []
        return out
