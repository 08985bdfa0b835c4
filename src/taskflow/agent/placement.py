"""The node agent's own queue of work and its placement on executors.

A mixin of :class:`taskflow.nodes.agent.Agent` (it uses the agent's
``queue``, ``execs``, ``mean``, ``funcs``, ``store``, ``producing`` and
``deadlines``). Work waits in a heap of ``(-priority, seq, item)`` where an
item is one task message or a *run*: a list of consecutive plain tasks of
one function and priority, placed in slices. Each executor gets one TASKS
frame per agent round (``batch``), sealed and written by the agent loop.

Short tasks (mean duration here under ``SHORT_TASK``) are queued up to
``DEEP`` per executor, so an executor never waits for a round trip; longer
ones go to idle executors, or to an executor whose task is due to end
within ``LEAD`` (its function's mean duration here, when that is at least
``LEAD_MIN_MEAN``): the next task is then in its pipe when it finishes,
instead of one agent round trip later (~0.3-1 ms on a busy 2-core host, per
task). A task running past its mean gets no successor queued behind it.
"""
from __future__ import annotations

import heapq
import time
from typing import TYPE_CHECKING

from ..wire import protocol as P

if TYPE_CHECKING:
    from .agent import _Exec

SHORT_TASK = 0.002        # tasks faster than this are queued several deep per executor
DEEP = 32
LEAD = 0.002              # a long task's successor goes to its executor this early...
LEAD_MIN_MEAN = 0.02      # ...when its function's mean here is at least this (LEAD <= 10 %)


class Placement:
    def _enqueue(self, tasks: list) -> None:
        """Put the master's tasks on the agent's queue.

        Consecutive plain tasks (no inputs to look up, no options, not
        exclusive) of one function and priority share one queue entry, a
        *run* (a list), which :meth:`_place_run` splits over the executors in
        slices: no per-task heap operation for the bulk of short tasks.
        """
        q = self.queue
        run = None
        for t in tasks:
            if t[3]:
                run = None
                if self._blocked_on_inputs(t, chain=True):
                    continue
            elif not t[7] and not t[10]:
                if run is not None and t[1] == run[0][1] and t[8] == run[0][8]:
                    run.append(t)
                    continue
                run = [t]
                self.seq += 1
                heapq.heappush(q, (-t[8], self.seq, run))
                continue
            else:
                run = None
            self.seq += 1
            heapq.heappush(q, (-t[8], self.seq, t))

    def _queued(self) -> list:
        """Every task message on the agent's queue (runs flattened)."""
        out = []
        for item in self.queue:
            x = item[2]
            if type(x) is list:
                out.extend(x)
            else:
                out.append(x)
        return out

    def _expected_end(self, e: _Exec) -> float | None:
        """When ``e``'s only task, a long one, should end (None: no early successor)."""
        eq = e.queue
        if len(eq) != 1 or e.reserved or eq[0][10]:
            return None
        m = self.mean.get(eq[0][1])
        if m is None or m < LEAD_MIN_MEAN:
            return None
        return e.started + m

    def _ending_soon(self, e: _Exec, now: float) -> bool:
        """``e`` runs one long task, due to end within LEAD (and not overdue)."""
        end = self._expected_end(e)
        return end is not None and end - LEAD <= now <= end + LEAD

    def _next_lead(self, now: float) -> float | None:
        """When an executor's long task will be LEAD from its expected end (for the loop)."""
        due = [end - LEAD for end in map(self._expected_end, self.execs)
               if end is not None and end - LEAD > now]
        return min(due) if due else None

    def _schedule(self) -> None:
        self.lead_at = None
        q = self.queue
        if not q:
            return
        execs = self.execs
        idle = [e for e in execs if not e.queue]
        nfree = len(idle) - sum(e.reserved for e in execs)
        skipped = []
        means = self.mean
        while q:
            t = q[0][2]
            if type(t) is list:         # a run of plain tasks
                nfree = self._place_run(t, idle, nfree)
                if t:
                    break               # no room for the rest of it
                heapq.heappop(q)
                continue
            cus, exclusive = t[9], t[10]
            if nfree <= 0 and exclusive:
                break
            if exclusive:
                if nfree < cus:
                    if len(skipped) < 64:      # let smaller work pass a big task
                        skipped.append(heapq.heappop(q))
                        continue
                    break
                heapq.heappop(q)
                ex = idle.pop(0)
                ex.reserved = cus - 1
                nfree -= cus
                self._start(ex, t)
                continue
            if idle and nfree > 0:
                best = idle.pop(0)
                nfree -= 1
            else:
                mean = means.get(t[1])
                depth = DEEP if (mean is not None and mean < SHORT_TASK) else 1
                best = None
                if depth > 1:
                    for e in execs:
                        eq = e.queue
                        if e.reserved or not eq or eq[0][10] or len(eq) >= depth:
                            continue
                        if best is None or len(eq) < len(best.queue):
                            best = e
                else:
                    now = time.time()
                    best = next((e for e in execs if self._ending_soon(e, now)), None)
                if best is None:
                    break
            heapq.heappop(q)
            self._start(best, t)
        for item in skipped:
            heapq.heappush(q, item)
        if q:       # work waits: wake the loop when a long task nears its end
            self.lead_at = self._next_lead(time.time())

    def _place_run(self, run: list, idle: list, nfree: int) -> int:
        """Spread the head of ``run`` over the executors with room; return ``nfree``.

        The same policy as for single tasks (an idle slot first, then the
        shortest queue below the prefetch depth), applied as water-filling:
        the shortest queues are raised level by level, so a run lands on the
        executors in even slices. Placed tasks leave ``run``.
        """
        m = self.mean.get(run[0][1])
        depth = DEEP if (m is not None and m < SHORT_TASK) else 1
        if depth == 1:
            return self._place_run_long(run, idle, nfree)
        cands = []
        nidle = 0
        for e in self.execs:
            eq = e.queue
            if not eq:
                if e.reserved or nidle >= nfree:
                    continue
                nidle += 1
            elif e.reserved or eq[0][10] or len(eq) >= depth:
                continue
            cands.append(e)
        if not cands:
            return nfree
        if len(cands) > 1:
            cands.sort(key=lambda e: len(e.queue))
        lens = [len(e.queue) for e in cands]
        give = [0] * len(cands)
        left = len(run)
        level = lens[0]
        i = 1
        while left > 0 and level < depth:
            while i < len(cands) and lens[i] <= level:
                i += 1
            top = lens[i] if i < len(cands) and lens[i] < depth else depth
            if (top - level) * i <= left:
                for j in range(i):
                    give[j] += top - level
                left -= (top - level) * i
                level = top
            else:
                share, extra = divmod(left, i)
                for j in range(i):
                    give[j] += share + (1 if j < extra else 0)
                left = 0
        start = 0
        for e, g in zip(cands, give):
            if g:
                if not e.queue:
                    idle.remove(e)
                    nfree -= 1
                self._queue_run(e, run[start:start + g])
                start += g
        del run[:start]
        return nfree

    def _place_run_long(self, run: list, idle: list, nfree: int) -> int:
        """A run of long (or not yet timed) tasks: one each to the idle executors, then
        one each to those whose task ends within LEAD."""
        chosen = []
        for e in list(idle):
            if len(chosen) >= len(run) or nfree <= 0:
                break
            if not e.reserved:
                idle.remove(e)
                nfree -= 1
                chosen.append(e)
        if len(chosen) < len(run):
            now = time.time()
            for e in self.execs:
                if self._ending_soon(e, now):
                    chosen.append(e)
                    if len(chosen) >= len(run):
                        break
        for i, e in enumerate(chosen):
            self._queue_run(e, run[i:i + 1])
        del run[:len(chosen)]
        return nfree

    def _queue_run(self, ex: _Exec, chunk: list) -> None:
        """:meth:`_queue_on` for a slice of a run (plain tasks of one function)."""
        digest = chunk[0][1]
        batch = ex.batch
        if not batch:
            self._dirty.append(ex)
        if digest not in ex.digests:
            if batch:
                self._seal(ex)
                batch = ex.batch
            ex.out += P.encode((P.FUNC, digest, self.funcs[digest]))
            ex.digests.add(digest)
        batch.extend(chunk)
        producing = self.producing
        for t in chunk:
            for d in t[11]:
                producing[d] = ex
        queue = ex.queue
        if not queue:
            ex.started = time.time()
        queue.extend(chunk)
        if self.waiting_on:
            for t in chunk:
                self._pull_chained(ex, t[11])

    def _start(self, ex: _Exec, t: tuple) -> None:
        self._queue_on(ex, t)
        if self.waiting_on:
            self._pull_chained(ex, t[11])

    def _queue_on(self, ex: _Exec, t: tuple) -> None:
        """Queue the master's task tuple itself on ``ex`` (see executor.ExecTask)."""
        digest = t[1]
        batch = ex.batch
        if not batch:               # the first task for ex this round
            self._dirty.append(ex)
        if digest not in ex.digests:
            if batch:                   # the function goes after the tasks queued before it
                self._seal(ex)
                batch = ex.batch
            ex.out += P.encode((P.FUNC, digest, self.funcs[digest]))
            ex.digests.add(digest)
        refs = t[3]
        if refs:
            store = self.store
            data = ex.bdata
            for _, kind, payload in refs:
                if kind == "r":
                    if payload in store:
                        data[payload] = store[payload]
                elif kind == "p":
                    for d in payload[1]:
                        if d in store:
                            data[d] = store[d]
        batch.append(t)
        producing = self.producing
        for d in t[11]:
            producing[d] = ex
        if not ex.queue:
            ex.started = time.time()
        ex.queue.append(t)
        opts = t[7]
        if opts and opts.get("time_out"):
            self.deadlines[t[0]] = (time.time() + opts["time_out"], ex)

    @staticmethod
    def _seal(ex: _Exec) -> None:
        """The tasks queued on ``ex`` so far become one TASKS frame."""
        ex.out += P.encode((P.TASKS, ex.batch, ex.bdata))
        ex.batch = []
        ex.bdata = {}
