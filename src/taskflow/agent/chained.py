"""Chained tasks on the node agent: tasks sent before their inputs exist.

The master sends a consumer to its producer's node before the producer has
finished (see ``runtime.dispatch.Dispatcher._chain``); the agent holds it
until its inputs are made here, or queues it right behind its producer on
the same executor, which keeps its recent outputs, so a dependent chain runs
without a round trip through the master.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Union

from ..wire import messages as M
from .state import NodeState
from .workqueue import WorkQueue

if TYPE_CHECKING:
    from .placement import Placement
    from .pool import Executor


class _Held:
    """A task waiting for inputs made on this node."""

    __slots__ = ("lacking", "task", "missing", "since")

    def __init__(self, task: M.TaskMsg, missing: list[int]) -> None:
        self.task = task
        self.missing = missing          # the data ids it lacked when it came
        # those not here yet: a set, so a value named twice, or told twice, counts once
        self.lacking = set(missing)
        self.since = time.time()


class Chaining:
    def __init__(self, state: NodeState, queue: WorkQueue, placement: Placement) -> None:
        self.state = state
        self.queue = queue
        self.placement = placement
        self.blocked: dict[int, _Held] = {}          # task id -> held task
        self.waiting_on: dict[int, list[int]] = {}   # data id -> held task ids

    def hold(self, t: M.TaskMsg, chain: bool = False) -> bool:
        """Hold a task whose inputs are still being made on this node (True: held).

        When every missing input is made by tasks queued on one executor (and
        ``chain``), the task goes right behind them on that executor, which
        keeps its recent outputs: a dependent chain then runs with no round
        trip at all.
        """
        store = self.state.store
        missing: list[int] = []
        for _, kind, payload in t.refs or ():
            if kind == M.REF_VALUE:
                if payload not in store:
                    missing.append(payload)
            elif kind == M.REF_PICKLED:
                _, dids = payload
                missing.extend(d for d in dids if d not in store)
        if not missing:
            return False
        producing = self.state.producing
        if chain:
            ex = producing.get(missing[0])
            if ex is not None and ex in self.placement.pool and not ex.reserved and \
                    all(producing.get(d) is ex for d in missing):
                self.placement.start(ex, t)
                return True
        earlier = self.blocked.get(t.task_id)
        if earlier is not None:         # (sent again: the earlier copy was taken back)
            self._forget(t.task_id, earlier)
        self.blocked[t.task_id] = _Held(t, missing)
        for d in missing:
            self.waiting_on.setdefault(d, []).append(t.task_id)
        return True

    def pull_behind(self, ex: Executor, dids: list[int]) -> None:
        """Queue, right behind a task, the held tasks that wait only for its executor."""
        work = list(dids)
        producing, store = self.state.producing, self.state.store
        waiting_on, blocked = self.waiting_on, self.blocked
        while work:
            d = work.pop()
            cands = [blocked[tid] for tid in waiting_on.get(d, ()) if tid in blocked]
            cands.sort(key=lambda h: -h.task.priority)      # priority first, then arrival
            for held in cands:
                tid = held.task.task_id
                if tid not in blocked:
                    continue
                if not all(producing.get(m) is ex or m in store for m in held.missing):
                    continue
                self._forget(tid, held)
                self.placement.queue_on(ex, held.task)
                work.extend(held.task.outputs)

    def outputs_made(self, dids: list[int], outputs: list[M.Output]) -> None:
        """A task ended here: the held tasks waiting for its values may go."""
        for did, payload in zip(dids, outputs):
            if did in self.waiting_on and (type(payload) is bytes or type(payload) is M.Packed):
                self.state.store[did] = payload
                self.unblock(did)

    def unblock(self, did: int) -> None:
        """Value ``did`` is here now (every way a value comes into the store calls this
        when a held task waits for it: a result made here, DATA, PART, a large result
        kept here)."""
        for tid in self.waiting_on.pop(did, ()):
            held = self.blocked.get(tid)
            if held is None:
                continue
            lacking = held.lacking
            lacking.discard(did)
            if not lacking:
                del self.blocked[tid]
                self.queue.push(held.task)

    def release_arrived(self) -> list[int]:
        """Release the held tasks whose inputs are all in the store; return their ids.

        Every value that comes into the store releases the tasks waiting for it
        (:meth:`unblock`); this is the watchdog's net under that rule (run with the
        check for overdue tasks): a task whose values are here must never wait
        for ever. Any it finds is a bug, which the caller reports.
        """
        store = self.state.store
        ready = [h for h in self.blocked.values() if all(d in store for d in h.missing)]
        for h in ready:
            self._forget(h.task.task_id, h)
            self.queue.push(h.task)
        return [h.task.task_id for h in ready]

    def _forget(self, tid: int, held: _Held) -> None:
        """``tid`` (held as ``held``) leaves the held set and every list of waiters."""
        if self.blocked.get(tid) is held:
            del self.blocked[tid]
        waiting_on = self.waiting_on
        for m in held.missing:
            lst = waiting_on.get(m)
            if lst is not None:
                while tid in lst:
                    lst.remove(tid)
                if not lst:
                    del waiting_on[m]

    def overdue(self, now: float, wait: float) -> list[tuple[M.TaskMsg, list[int]]]:
        """Held tasks that waited ``wait`` seconds for inputs nothing here is making.

        An input is being made here when a task queued on an executor, on the
        agent's queue or held itself produces it; anything else was to come
        from the master, which sends it before the task. They are dropped from
        the held set; returns each with the data ids it still lacks.
        """
        old = [h for h in self.blocked.values() if now - h.since >= wait]
        if not old:
            return []
        store = self.state.store
        made = set(self.state.producing)
        for t in self.queue.queued():
            made.update(t.outputs)
        for h in self.blocked.values():
            made.update(h.task.outputs)
        out = []
        for h in old:
            lacking = [d for d in h.missing if d not in store]
            if lacking and not any(d in made for d in lacking):
                self._forget(h.task.task_id, h)
                out.append((h.task, lacking))
        return out

    def made_here(self, dids: list[int]) -> bool:
        """Every one of ``dids`` is being made on this node: by a task queued on an
        executor, on the agent's queue, or held here."""
        producing = self.state.producing
        rest = [d for d in dids if d not in producing]
        if not rest:
            return True
        made: set[int] = set()
        for t in self.queue.queued():
            made.update(t.outputs)
        for h in self.blocked.values():
            made.update(h.task.outputs)
        return all(d in made for d in rest)

    def oldest(self) -> float | None:
        """When the longest-held task was held (for the loop's wake-up)."""
        return min((h.since for h in self.blocked.values()), default=None)

    def take_all(self) -> list[int]:
        """Give up every held task (the agent leaves); return their ids."""
        tids = list(self.blocked)
        self.blocked.clear()
        self.waiting_on.clear()
        return tids

    def drop(self, tids: Union[set[int], list[int]]) -> None:
        """Forget held tasks (cancelled), from the lists of waiters too: a task sent
        again under the same id must not be counted as waiting twice."""
        for tid in tids:
            held = self.blocked.get(tid)
            if held is not None:
                self._forget(tid, held)
