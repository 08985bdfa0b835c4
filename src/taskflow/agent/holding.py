"""What a node does with the values it holds (the agent's part of :mod:`.store`).

Values come to the store from three places: results too large to travel
inline (and every value with out-of-band buffers) stay here and the master
gets a :class:`~taskflow.wire.messages.Held` marker; the master pushes values
for tasks (DATA); values copied from another node arrive in parts (PART,
:mod:`taskflow.runtime.relay`). They leave it when the master drops them
(DROP), are sent whole to the master (FETCH) or in parts to another node
(PULL), and go back to an executor that lacked one (an input taken or
trimmed there: the task is resent with it).
"""
from __future__ import annotations

import pickle
from typing import Any, Callable

from ..wire import messages as M
from .chained import Chaining
from .executor import sharedfiles
from .state import NodeState
from .store import Incoming, unflat
from .workqueue import WorkQueue

INLINE_MAX = 256 * 1024   # larger results stay on the node until fetched


class Holding:
    def __init__(self, state: NodeState, queue: WorkQueue, chaining: Chaining,
                 send_parts: Callable[[int, Any], None]) -> None:
        self.state = state
        self.queue = queue
        self.chaining = chaining
        self.send_parts = send_parts       # a frame that may carry values (agent._send_parts)
        self.incoming: dict[int, Incoming] = {}   # values being copied here in parts
        self.name = ""

    # -- frames from the master -----------------------------------------------------------
    def data(self, items: list[M.DataItem]) -> None:
        """Values pushed for tasks (DATA)."""
        store = self.state.store
        waiting_on = self.chaining.waiting_on
        for did, payload in items:
            if payload is None:
                continue
            store[did] = payload
            if did in waiting_on:
                self.chaining.unblock(did)

    def fetch(self, dids: list[int]) -> None:
        """The master wants these values whole (FETCH)."""
        store = self.state.store
        self.send_parts(M.DATA, [(d, store.get(d)) for d in dids])

    def pull(self, wanted: list[tuple[int, int, int]]) -> None:
        """Slices of values for copies to other nodes (PULL): answered with PART frames
        (total -1: the value is not here)."""
        store = self.state.store
        out: list[M.PartWire] = []
        for did, off, n in wanted:
            got = store.read_range(did, off, n)
            if got is None:
                out.append((did, off, -1, None))
            else:
                total, data = got
                out.append((did, off, total, pickle.PickleBuffer(data)))
        self.send_parts(M.PART, out)

    def parts(self, parts: list[M.PartWire]) -> None:
        """Parts of values copied here: each put in place; a whole value is held."""
        for did, off, total, data in parts:
            inc = self.incoming.get(did)
            if inc is None or len(inc.buf) != total:
                inc = self.incoming[did] = Incoming(total)
            if inc.add(off, data):
                del self.incoming[did]
                self.state.store[did] = unflat(inc.buf)
                if did in self.chaining.waiting_on:
                    self.chaining.unblock(did)

    def drop(self, dids: list[int]) -> None:
        """The master has no use for these values any more (DROP)."""
        store = self.state.store
        incoming = self.incoming
        for d in dids:
            store.pop(d, None)
            incoming.pop(d, None)

    # -- results of executors -------------------------------------------------------------
    def keep_large(self, res: M.ResultWire, tmsg: M.TaskMsg) -> M.ResultWire:
        """Results above INLINE_MAX (and every value with out-of-band buffers) stay here;
        the master gets a :class:`Held` marker."""
        tid, status, outputs, error, timing = res
        if status != M.OK or not outputs:
            return res
        outs: list[Any] = list(outputs)
        for i, payload in enumerate(outs):      # an executor's in a file (sharedfiles): held
            if type(payload) is M.Shared:       # over that file, all of them or none
                try:
                    outs[i] = sharedfiles.adopt(payload)
                except (OSError, ValueError) as exc:
                    self.discard(outs)
                    return (tid, M.ERROR, None, M.ErrorInfo(
                        "OSError", f"task {tmsg.task_id}: its output #{i + 1} could not be "
                        f"read from the node's shared directory on {self.name} ({exc}); "
                        f"check that directory ({sharedfiles.ENV})", "", None), timing)
        for i, payload in enumerate(outs):
            if (type(payload) is bytes and len(payload) > INLINE_MAX) or \
                    type(payload) is M.Packed:
                assert payload is not None
                key = tmsg.outputs[i]
                self.state.store[key] = payload
                outs[i] = M.Held(key, len(payload))
                if key in self.chaining.waiting_on:     # (outputs_made releases them
                    self.chaining.unblock(key)          # first: this is the rule's net)
        return (tid, status, outs, error, timing)

    @staticmethod
    def discard(outputs: list[Any] | None) -> None:
        """A result nobody wants (its task was cancelled): its shared files go."""
        for payload in outputs or ():
            if type(payload) is M.Shared:
                try:
                    sharedfiles.adopt(payload)      # (owned, then dropped: unlinked)
                except (OSError, ValueError):
                    pass

    def resend(self, res: M.ResultWire, tmsg: M.TaskMsg) -> M.ResultWire | None:
        """An executor lacked an input of ``tmsg`` (taken by another reader, or trimmed):
        the task goes again with the value held here, or is held until the values it
        lacks are made here (its producer went again, on another executor: a task queued
        behind it was left without its input); else it goes back to the master as
        MISSING, which places it again, inputs and all: it did not run, so this is no
        attempt of its own (None: resent)."""
        store = self.state.store
        lacking: list[int] = []
        for _, kind, payload in tmsg.refs or ():
            dids = [payload] if kind == M.REF_VALUE else payload[1] if kind == M.REF_PICKLED \
                else []
            lacking.extend(d for d in dids if d not in store)
            for d in dids:          # a shared file gone (removed from outside): the pipe
                v = store.mem.get(d)
                if type(v) is M.Packed and v.file is not None and not v.file.exists():
                    store.pop(d)
                    v.file = None
                    store[d] = v
        if lacking:
            if self.chaining.made_here(lacking) and self.chaining.hold(tmsg):
                return None
            tid, _, _, error, timing = res
            msg = error.message if error is not None else "an input is missing"
            return (tid, M.MISSING, None, M.ErrorInfo(
                "InputMissing", f"{msg} on node {self.name} (its producer failed or was "
                f"moved); the task is placed again", "", None), timing)
        self.queue.push(tmsg)
        return None
