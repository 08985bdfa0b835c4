"""Chained tasks on the node agent: tasks sent before their inputs exist.

A mixin of :class:`taskflow.nodes.agent.Agent`. The master sends a
consumer to its producer's node before the producer has finished (see
``runtime.dispatch.Dispatcher._chain``); the agent holds it until its inputs
are made here, or queues it right behind its producer on the same executor,
which keeps its recent outputs, so a dependent chain runs without a round
trip through the master.

State (on the agent): ``blocked`` (task id -> [missing count, task message,
missing data ids]), ``waiting_on`` (data id -> held task ids) and
``producing`` (data id -> executor whose queue makes it).
"""
from __future__ import annotations

import heapq
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .agent import _Exec


class Chaining:
    def _blocked_on_inputs(self, t: tuple, chain: bool = False) -> bool:
        """Hold a task whose inputs are still being made on this node.

        When every missing input is made by tasks queued on one executor, the
        task goes right behind them on that executor, which keeps its recent
        outputs: a dependent chain then runs with no round trip at all.
        """
        store = self.store
        missing = []
        for _, kind, payload in t[3]:
            if kind == "r":
                if payload not in store:
                    missing.append(payload)
            elif kind == "p":
                missing.extend(d for d in payload[1] if d not in store)
        if not missing:
            return False
        if chain:
            ex = self.producing.get(missing[0])
            if ex is not None and ex in self.execs and not ex.reserved and \
                    all(self.producing.get(d) is ex for d in missing):
                self._start(ex, t)
                return True
        self.blocked[t[0]] = [len(missing), t, missing]
        for d in missing:
            self.waiting_on.setdefault(d, []).append(t[0])
        return True

    def _pull_chained(self, ex: _Exec, dids: list) -> None:
        """Queue, right behind a task, the held tasks that wait only for its executor."""
        work = list(dids)
        producing, store, waiting_on, blocked = self.producing, self.store, self.waiting_on, \
            self.blocked
        while work:
            d = work.pop()
            cands = [blocked[tid] for tid in waiting_on.get(d, ()) if tid in blocked]
            cands.sort(key=lambda e: -e[1][8])          # priority first, then arrival
            for entry in cands:
                tid = entry[1][0]
                if tid not in blocked:
                    continue
                if not all(producing.get(m) is ex or m in store for m in entry[2]):
                    continue
                del blocked[tid]
                for m in entry[2]:
                    lst = waiting_on.get(m)
                    if lst is not None:
                        if tid in lst:
                            lst.remove(tid)
                        if not lst:
                            del waiting_on[m]
                t = entry[1]
                self._queue_on(ex, t)
                work.extend(t[11])

    def _outputs_made(self, dids: list, outputs: list) -> None:
        for did, payload in zip(dids, outputs):
            if did in self.waiting_on and type(payload) is bytes:
                self.store[did] = payload
                self._unblock(did)

    def _unblock(self, did: int) -> None:
        for tid in self.waiting_on.pop(did, ()):
            entry = self.blocked.get(tid)
            if entry is None:
                continue
            entry[0] -= 1
            if entry[0] <= 0:
                del self.blocked[tid]
                t = entry[1]
                self.seq += 1
                heapq.heappush(self.queue, (-t[8], self.seq, t))
