"""Values brought from a node to the master (a ``wait_on`` of a value left on its node, a
nested call's argument): who waits for each, the FETCH frames to send, and what the
move cost.

A value over the inline limit stays on the node that made it and moves only when
asked for (docs/guide/memory.md). Moving a large one can take longer than the task
that made it, so each fetch is timed from the request to the value's arrival and
said on the bus (a ``moved`` event: the journal's ``moves`` table, ``taskflow
status``, the report), beside the node-to-node copies of :mod:`.relay`.
"""
from __future__ import annotations

import threading
import time
from typing import TYPE_CHECKING, Callable

from ...events import Moved
from ...graph import task as T
from ...wire import messages as M
from ..rules import lineage
from ..recovery.recordfail import from_thread
from .keepfetched import APART, KeepLater


if TYPE_CHECKING:
    from ...future import Future
    from ...providers.handle import NodeHandle
    from ..state import RunState, Waiter
    from ..recovery.log import ResumeLog

MASTER = "master"       # the destination's name in a move to the master


class _Fetch:
    """A value being brought from a node to the master, and who waits for it."""

    __slots__ = ("fut", "waiters", "src", "t0", "payload")

    def __init__(self, fut: Future, waiter: Waiter, src: str) -> None:
        self.fut = fut
        self.waiters: list[Waiter] = [waiter]
        self.src = src
        self.t0 = time.time()
        self.payload: M.Payload | None = None   # came, being written to the resume log


def size_of(payload: M.Payload) -> int:
    """Bytes of a pickled value as it travels."""
    if isinstance(payload, (bytes, bytearray, memoryview)):
        return len(payload)
    return int(getattr(payload, "size", 0) or 0)


class Fetches:
    """The values on their way to the master (the loop thread's; requests under the lock)."""

    def __init__(self, rt: RunState, wake: Callable[[], None]) -> None:
        self.rt = rt
        self.wake = wake
        self.pending: dict[int, _Fetch] = {}        # data id -> value being fetched
        self.queue: list[tuple[NodeHandle, Future]] = []   # FETCH frames to send
        # large values kept in the resume log by a thread of their own (resumable runs:
        # keepfetched.py), which lets their waiters go on once written
        self.later: KeepLater | None = None

    def keep_in(self, log: ResumeLog | None) -> None:
        """Large values that come are kept in ``log`` by :attr:`later`'s thread."""
        if log is not None and self.later is None:
            self.later = KeepLater(log, self.written)

    def close(self) -> None:
        """The loop ends: :attr:`later` writes what it was given, then its thread ends."""
        if self.later is not None:
            self.later.close()

    def request(self, fut: Future, waiter: Waiter) -> None:
        """Get ``fut``'s value from a node holding it (or make it again: lineage)."""
        did = fut._did
        fetch = self.pending.get(did)
        if fetch is None:
            node = self.rt.scheduler.holder(fut)
            if node is None:
                if lineage.recompute(self.rt, fut, waiter):   # lost with its node: rerun
                    self.wake()
                    return
                if isinstance(waiter, threading.Event):
                    waiter.set()
                return
            self.pending[did] = _Fetch(fut, waiter, node.name)
            self.queue.append((node, fut))
        else:
            fetch.waiters.append(waiter)
        self.wake()

    def ahead(self, futs: list[Future]) -> None:
        """Ask now for the values of ``futs`` that stayed on their nodes, not waiting for
        them (a ``wait_on`` of a list reads one value while the next ones come:
        ``api/sync.py``). One whose nodes were all lost is made again (lineage) as
        the read would have it; the read says why when it cannot be."""
        nobody = threading.Event()      # (the reader waits on a fetch of its own)
        pending = self.pending
        for fut in futs:
            if fut._payload is None and fut._holders and fut._did not in pending:
                self.request(fut, nobody)

    def take_queue(self) -> list[tuple[NodeHandle, Future]]:
        out, self.queue = self.queue, []
        return out

    def drop(self) -> list[Waiter]:
        """Nothing will come any more: the waiters, to release (those of values that came
        are :attr:`later`'s, which lets them go on once their value is written)."""
        came = {did: f for did, f in self.pending.items() if f.payload is not None}
        waiters = [w for did, f in self.pending.items() if did not in came for w in f.waiters]
        self.pending = came
        return waiters

    def arrived(self, did: int, payload: M.Payload | None,
                keep: Callable[[int, M.Payload], None] | None = None) -> None:
        """The value of ``did`` came (None: its node had it no more): ``keep`` records it
        (the resume log) before its waiters go on; a large one is recorded by
        :attr:`later`'s thread, and :meth:`settle` lets them go on once it is."""
        fetch = self.pending.get(did)
        if fetch is None or fetch.payload is not None:
            return
        if payload is not None:
            bus = self.rt.bus
            if bus.active:
                bus.emit(Moved("moved", time.time(), 0, "", MASTER,
                               (fetch.t0, size_of(payload), fetch.src, fetch.fut.producer_id())))
            later = self.later
            if keep is not None and later is not None and size_of(payload) >= APART:
                fetch.payload = payload
                later.keep(did, payload)
                return
            if keep is not None:
                keep(did, payload)
        del self.pending[did]
        self._release(fetch, payload)

    def _release(self, fetch: _Fetch, payload: M.Payload | None) -> None:
        """The value is the master's (None: not there): its waiters go on."""
        if payload is not None:
            fetch.fut.fetched(payload)
        sched = self.rt.scheduler
        for w in fetch.waiters:
            if isinstance(w, threading.Event):
                w.set()
            elif w.state == T.READY:
                sched.push(w)

    def written(self, did: int, why: str | None) -> None:
        """:attr:`later`'s thread: the value of ``did`` is in the resume log (``why``: the
        write failed; the value stands, the run fails): its waiters go on."""
        rt = self.rt
        with rt.lock:
            fetch = self.pending.pop(did, None)
            if fetch is not None:
                self._release(fetch, fetch.payload)
                self.wake()         # (tasks that waited for it: the loop's round sends them)
        if why is not None:
            from_thread(rt, why)

    def node_lost(self, node: NodeHandle) -> None:
        """Fetches from a lost node ask another holder, or make the value again."""
        for did, fetch in list(self.pending.items()):
            fut = fetch.fut
            if fetch.payload is not None:
                continue                # (it came: being written to the resume log)
            if fut._holders and node.name in fut._holders:
                fut._holders.discard(node.name)
                del self.pending[did]
                for w in fetch.waiters:
                    self.request(fut, w)
