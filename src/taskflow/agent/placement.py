"""Which executor runs what: the agent's queue placed on its executors.

Each agent round, :meth:`Placement.schedule` takes work from the
:class:`~.workqueue.WorkQueue` and queues it on executors; each executor
gets one TASKS frame per round (:meth:`~.pool.Pool.send_batches`).

Short tasks (mean duration here under ``NODE_SHORT``) are queued up to
``NODE_DEEP`` per executor, so an executor never waits for a round trip;
tasks of a few ms (under ``LEAD_MIN_MEAN``) one behind the running one;
longer ones go to idle executors, or to an executor whose task is due to end
within ``LEAD`` (its function's mean duration here, when that is at least
``LEAD_MIN_MEAN``): the next task is then in its pipe when it finishes,
instead of one agent round trip later (~0.3-1 ms on a busy 2-core host, per
task). A task running past its mean gets no successor queued behind it.
Thresholds: :mod:`taskflow.wire.thresholds`.

``@IO`` tasks (``units`` 0: they hold no computing unit) never go to those
executors: they wait in :attr:`Placement.io_queue` for one of the node's I/O
executors (``--io_executors``), one task each at a time, so they overlap the
computing tasks.
"""
from __future__ import annotations

import time
from collections import deque
from typing import TYPE_CHECKING, Protocol

from ..wire import messages as M
from ..wire.thresholds import LEAD, LEAD_MIN_MEAN, NODE_DEEP, NODE_SHORT, RUNNING_SIGNAL_MIN
from .pool import Executor, Pool
from .state import NodeState
from .workqueue import WorkQueue

if TYPE_CHECKING:
    from .workqueue import Item

# Module globals, read at call time (a test widens LEAD so a slow machine's clock is
# irrelevant).
SHORT_TASK = NODE_SHORT
DEEP = NODE_DEEP


def _depth(mean: float | None, single: bool) -> int:
    """How many tasks of a function with this mean duration here an executor may hold.

    Short ones (< SHORT_TASK) DEEP; up to LEAD_MIN_MEAN, one behind the running
    task (the next one is in the executor's pipe when it ends: no agent round
    trip per task, which is 10-30 % of a 2-10 ms task on a busy host); longer or
    never-timed ones only on an idle executor (or LEAD before an end), unless the
    agent has one executor (``single``): no other one here could start it sooner,
    so it waits behind the running task and starts without waiting for the agent
    (which, on a host as busy as a 2-core machine running 128 agents, woke tens
    of ms late for a LEAD).
    """
    if mean is not None and mean < SHORT_TASK:
        return DEEP
    if single or (mean is not None and mean < LEAD_MIN_MEAN):
        return 2
    return 1


class Holds(Protocol):
    """What placement asks of the tasks held for inputs made on this node (agent.chained's
    :class:`~.chained.Chaining`, which places them in turn: the two call each other)."""

    waiting_on: dict[int, list[int]]     # data id -> held task ids

    def hold(self, t: M.TaskMsg, chain: bool = False) -> bool: ...

    def pull_behind(self, ex: Executor, dids: list[int]) -> None: ...


class Placement:
    def __init__(self, state: NodeState, queue: WorkQueue, pool: Pool) -> None:
        self.state = state
        self.queue = queue
        self.pool = pool
        self.chaining: Holds | None = None      # set by the agent (they call each other)
        self.lead_at: float | None = None       # when to place a long task's successor early
        self.io_queue: deque[M.TaskMsg] = deque()   # @IO tasks waiting for an I/O executor

    def enqueue(self, tasks: list[M.TaskMsg]) -> None:
        """Put the master's tasks on the agent's queue.

        Consecutive plain tasks (no inputs to look up, no options, not
        exclusive) of one function and priority share one queue entry, a
        *run*, which :meth:`_place_run` splits over the executors in slices.
        """
        q = self.queue
        chaining = self.chaining
        run: list[M.TaskMsg] | None = None
        run_digest = b""
        run_prio = 0
        for t in tasks:
            if not t.units:             # @IO: the I/O executors' own queue
                self.io_queue.append(t)
                run = None
                continue
            if t.refs:
                run = None
                if chaining is not None and chaining.hold(t, chain=True):
                    continue
            elif not t.options and not t.exclusive:
                digest = t.digest
                if run is not None and digest == run_digest and t.priority == run_prio:
                    run.append(t)
                    continue
                run = q.push_run(t)
                run_digest, run_prio = digest, t.priority
                continue
            else:
                run = None
            q.push(t)

    # -- when does an executor's long task end ------------------------------------------
    def expected_end(self, e: Executor) -> float | None:
        """When ``e``'s only task, a long one, should end (None: no early successor)."""
        eq = e.queue
        if len(eq) != 1 or e.reserved:
            return None
        head = eq[0]
        if head.exclusive:
            return None
        m = self.state.mean.get(head.digest)
        if m is None or m < LEAD_MIN_MEAN:
            return None
        return e.started + m

    def _ending_soon(self, e: Executor, now: float) -> bool:
        """``e`` runs one long task, due to end within LEAD (and not overdue)."""
        end = self.expected_end(e)
        return end is not None and end - LEAD <= now <= end + LEAD

    def _next_lead(self, now: float) -> float | None:
        """When an executor's long task will be LEAD from its expected end (for the loop)."""
        due = [end - LEAD for end in map(self.expected_end, self.pool.execs)
               if end is not None and end - LEAD > now]
        return min(due) if due else None

    def _behind_ok(self, e: Executor) -> bool:
        """Work may queue behind ``e``'s running task: it is known here to end within
        LEAD_MIN_MEAN, or no other executor could start the work sooner (one executor).
        Behind a long or never-timed task, a short one would wait for it while another
        executor idles (a 6 s task kept a 10 ms one waiting for its whole run)."""
        if len(self.pool.execs) == 1:
            return True
        m = self.state.mean.get(e.queue[0].digest)
        return m is not None and m < LEAD_MIN_MEAN

    # -- the round's placement ----------------------------------------------------------
    def schedule(self) -> None:
        self.lead_at = None
        if self.io_queue:
            self._place_io()
        q = self.queue
        if not q:
            return
        execs = self.pool.execs
        idle = [e for e in execs if not e.queue]
        if self.pool.parked and len(idle) > 1:    # an executor holding no waiting task first
            idle.sort(key=lambda e: len(e.parked))
        nfree = len(idle) - sum(e.reserved for e in execs)
        skipped: list[tuple[int, int, Item]] = []
        means = self.state.mean
        best: Executor | None
        while q:
            t = q.head()
            if type(t) is list:         # a run of plain tasks
                nfree = self._place_run(t, idle, nfree)
                if t:
                    break               # no room for the rest of it
                q.pop()
                continue
            assert isinstance(t, M.TaskMsg)
            cus, exclusive = t.units, t.exclusive
            if nfree <= 0 and exclusive:
                break
            if exclusive:
                if nfree < cus:
                    if len(skipped) < 64:      # let smaller work pass a big task
                        skipped.append(q.pop())
                        continue
                    break
                q.pop()
                ex = idle.pop(0)
                ex.reserved = cus - 1
                nfree -= cus
                self.start(ex, t)
                continue
            if idle and nfree > 0:
                best = idle.pop(0)
                nfree -= 1
            else:
                depth = _depth(means.get(t.digest), len(execs) == 1)
                best = None
                if depth > 1:
                    for e in execs:
                        eq = e.queue
                        if e.reserved or not eq or eq[0].exclusive or len(eq) >= depth \
                                or not self._behind_ok(e):
                            continue
                        if best is None or len(eq) < len(best.queue):
                            best = e
                else:
                    now = time.time()
                    best = next((e for e in execs if self._ending_soon(e, now)), None)
                if best is None:
                    break
            q.pop()
            self.start(best, t)
        for entry in skipped:
            q.put_back(entry)
        if q:       # work waits: wake the loop when a long task nears its end
            self.lead_at = self._next_lead(time.time())

    def _place_io(self) -> None:
        """One waiting @IO task to each idle I/O executor."""
        ioq = self.io_queue
        for ex in self.pool.io_execs:
            if not ioq:
                return
            if not ex.queue:
                self.start(ex, ioq.popleft())

    def drop_io(self, tids: set[int]) -> None:
        """Cancelled @IO tasks that have not started."""
        if self.io_queue:
            self.io_queue = deque(t for t in self.io_queue if t.task_id not in tids)

    def _place_run(self, run: list[M.TaskMsg], idle: list[Executor], nfree: int) -> int:
        """Spread the head of ``run`` over the executors with room; return ``nfree``.

        The same policy as for single tasks (an idle slot first, then the
        shortest queue below the prefetch depth), applied as water-filling:
        the shortest queues are raised level by level, so a run lands on the
        executors in even slices. Placed tasks leave ``run``. A queue deeper
        than half the depth is left alone until it is down to half.
        """
        depth = _depth(self.state.mean.get(run[0].digest), len(self.pool.execs) == 1)
        if depth == 1:
            return self._place_run_long(run, idle, nfree)
        # A deep queue is topped up once it is down to half (then to the full depth):
        # short tasks travel in frames of at least depth / 2, however few executors
        # there are (one per node: each result used to bring back one task or two).
        low = depth // 2 if depth > 2 else depth - 1
        cands = []
        nidle = 0
        for e in self.pool.execs:
            eq = e.queue
            if not eq:
                if e.reserved or nidle >= nfree:
                    continue
                nidle += 1
            elif e.reserved or eq[0].exclusive or len(eq) > low or not self._behind_ok(e):
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

    def _place_run_long(self, run: list[M.TaskMsg], idle: list[Executor], nfree: int) -> int:
        """A run of long (or not yet timed) tasks: one each to the idle executors, then
        one each to those whose task ends within LEAD."""
        chosen: list[Executor] = []
        for e in list(idle):
            if len(chosen) >= len(run) or nfree <= 0:
                break
            if not e.reserved:
                idle.remove(e)
                nfree -= 1
                chosen.append(e)
        if len(chosen) < len(run):
            now = time.time()
            for e in self.pool.execs:
                if self._ending_soon(e, now):
                    chosen.append(e)
                    if len(chosen) >= len(run):
                        break
        for i, e in enumerate(chosen):
            self._queue_run(e, run[i:i + 1])
        del run[:len(chosen)]
        return nfree

    # -- queueing on one executor -------------------------------------------------------
    def _queue_run(self, ex: Executor, chunk: list[M.TaskMsg]) -> None:
        """:meth:`queue_on` for a slice of a run (plain tasks of one function)."""
        digest = chunk[0].digest
        if not ex.batch:
            self.pool.mark(ex)
        if digest not in ex.digests:
            self.pool.add_function(ex, digest, self.state.funcs[digest])
        ex.batch.extend(chunk)
        producing = self.state.producing
        for t in chunk:
            for d in t.outputs:
                producing[d] = ex
        queue = ex.queue
        if not queue:
            ex.started = time.time()
            self._running(chunk[0], ex.started)
        queue.extend(chunk)
        chaining = self.chaining
        if chaining is not None and chaining.waiting_on:
            for t in chunk:
                chaining.pull_behind(ex, t.outputs)

    def _running(self, t: M.TaskMsg, when: float) -> None:
        """``t`` begins now on an idle executor: say so, unless it is known to be short."""
        state = self.state
        m = state.mean.get(t.digest)
        if m is None or m >= RUNNING_SIGNAL_MIN:
            state.started.append((t.task_id, when))

    def start(self, ex: Executor, t: M.TaskMsg) -> None:
        """Queue ``t`` on ``ex``, and right behind it the held tasks waiting only for it."""
        self.queue_on(ex, t)
        chaining = self.chaining
        if chaining is not None and chaining.waiting_on:
            chaining.pull_behind(ex, t.outputs)

    def queue_on(self, ex: Executor, t: M.TaskMsg) -> None:
        """Queue the task on ``ex`` (sent at the end of the round)."""
        digest = t.digest
        if not ex.batch:               # the first task for ex this round
            self.pool.mark(ex)
        state = self.state
        if digest not in ex.digests:   # the function goes after the tasks queued before it
            self.pool.add_function(ex, digest, state.funcs[digest])
        refs = t.refs
        if refs:
            store = state.store
            data = ex.bdata
            for _, kind, payload in refs:
                if kind == M.REF_VALUE:
                    if payload in store:
                        data[payload] = store[payload]
                elif kind == M.REF_PICKLED:
                    _, dids = payload
                    for d in dids:
                        if d in store:
                            data[d] = store[d]
        ex.batch.append(t)
        producing = state.producing
        for d in t.outputs:
            producing[d] = ex
        if not ex.queue:
            ex.started = time.time()
            self._running(t, ex.started)
        ex.queue.append(t)
        opts = t.options
        if opts is not None:
            time_out = opts.time_out
            if time_out:
                state.deadlines[t.task_id] = (time.time() + time_out, ex)
