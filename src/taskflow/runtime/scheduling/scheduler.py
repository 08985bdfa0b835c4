"""The scheduler: a priority queue of ready tasks and the choice of a node.

``assign`` pops ready tasks while some node can take them and returns the
choice per node; the runtime sends them. A node may be given more work than
it has slots (it queues it and starts the next task the moment a slot
frees, without a round trip); how much more depends on how long tasks of
that name have taken so far: deep for tasks of a millisecond, one extra per
slot for long ones, so long tasks are not hoarded by one node; and on the
size of the values its calls leave on their node: no deeper than
``PREFETCH_BYTES`` of them per slot, so a fast producer of large values does
not fill a node's memory ahead of its consumers. A node above its memory
pause mark (``agent.memory``) gets tasks that read values, and a task that
reads none only when nothing else runs there.

Placement policies (``placement=``):
  locality     prefer the node that already holds the task's inputs, then
               the least loaded (default)
  least-loaded lowest utilisation first: the node's reported CPU load when
               it has sent samples, else its share of busy slots
  fifo         round-robin over the nodes with room

An ``@IO`` task (PyCOMPSs, with ``--io_executors``) holds no computing unit
(``task.cus`` 0): it goes to the node with the most free I/O executors
(``io_slots``), so it overlaps the computing tasks.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING

from ...wire.thresholds import PREFETCH_BYTES
from . import gang
from .nodeloads import NodeLoads
from .readyqueue import ReadyQueue
from .resources import Grant, Pools
from ..specruns import SpecRun, SpecRuns

if TYPE_CHECKING:
    from ...future import Future
    from ...graph.task import Task
    from ...providers.handle import NodeHandle

SHORT = 0.005      # seconds; tasks faster than this are prefetched deeply
DEEP = 256         # extra tasks per slot for short tasks
SLICE = 32         # short calls given to one of several nodes at once (Scheduler._slice)...
SLICE_WORK = 0.002   # ...holding at most this many seconds of their mean duration


class Scheduler:
    def __init__(self, placement: str = "locality", spec_runs: SpecRuns | None = None) -> None:
        if placement not in ("locality", "least-loaded", "fifo"):
            raise ValueError(f"unknown placement policy {placement!r}: use locality, "
                             f"least-loaded or fifo")
        self.placement = placement
        # what the run learned of each function so far: how deep to prefetch (RunState's)
        self.spec_runs = spec_runs if spec_runs is not None else SpecRuns()
        self.ready = ReadyQueue()
        self.nodes: list[NodeHandle] = []
        self._rr = 0
        # task id -> what runtime.scheduling.gang reserved beyond its node: (head node, [(node, units)],
        # GPUs and named resources held, several nodes?, @IO: [(node, I/O executors)])
        self.gangs: dict[int, tuple[NodeHandle, list[tuple[NodeHandle, int]], Grant | None,
                                    bool, list[tuple[NodeHandle, int]]]] = {}
        self.held: dict[str, int] = {}         # node name -> gang shares held there (no prefetch)
        self.pools = Pools()      # each node's GPUs and named resources (scheduling.resources)
        self.walltimes = False    # some node has a job end time (Slurm): check before placing
        self.longest: float | None = None   # the longest task a node can ever start (None: no end)
        self.paused = False       # some node is above its memory pause mark (agent.memory)
        self.loads = NodeLoads()  # several nodes: the least loaded in O(log n) (nodeloads.py)
        self._named: dict[str, NodeHandle] = {}   # by name, the latest of a name (named())
        self._named_size = 0

    def push(self, task: Task) -> None:
        self.ready.push(task)

    def tasks(self) -> list[Task]:
        """The ready tasks (any order)."""
        return list(self.ready)

    def __len__(self) -> int:
        return len(self.ready)

    def named(self, name: str) -> NodeHandle | None:
        """The node called ``name`` (the latest to join under it), alive or not: a look-up,
        not a scan of the nodes (a fetch or a copy of a value on 1,024 nodes)."""
        nodes = self.nodes
        if len(nodes) != self._named_size:     # nodes join by appending to the list
            self._named = {n.name: n for n in nodes}
            self._named_size = len(nodes)
        return self._named.get(name)

    def holder(self, fut: Future, other_than: NodeHandle | None = None) -> NodeHandle | None:
        """A live node that holds ``fut``'s value (not ``other_than``), or None."""
        for name in sorted(fut._holders or ()):     # (sorted: the same choice every time)
            n = self.named(name)
            if n is not None and n.alive and n is not other_than:
                return n
        return None

    def fits_ever(self, cus: int, mem: float) -> bool:
        return any(n.usable and n.slots >= cus and n.memory_gb >= mem for n in self.nodes)

    def capacity(self) -> tuple[int, float]:
        alive = [n for n in self.nodes if n.usable]
        return (max((n.slots for n in alive), default=0),
                max((n.memory_gb for n in alive), default=0.0))

    def assign(self) -> list[tuple[NodeHandle, Task]]:
        """Pop the ready tasks that can go somewhere now; return [(node, task)]."""
        ready = self.ready
        if not ready:
            return []
        allnodes = self.nodes
        if len(allnodes) == 1:
            nodes = allnodes if allnodes[0].usable else []
        else:     # no list of the usable nodes per round: NodeLoads skips the others
            nodes = allnodes
            if self.loads.stale(allnodes):
                self.loads.rebuild(allnodes)
        out: list[tuple[NodeHandle, Task]] = []
        deferred: list[Task] = []
        single = nodes[0] if len(nodes) == 1 else None
        held = self.held
        runs = self.spec_runs
        peek, pop = ready.peek, ready.pop
        while ready:
            task = peek()
            spec = task.spec
            if spec.gang:
                node = gang.reserve(self, task, nodes)
                if node is None:
                    if spec.need is None:
                        break        # wait for enough free slots; no backfill meanwhile
                    deferred.append(pop())   # named resources: others pass while it waits
                    if len(deferred) >= 32:
                        break
                    continue
                pop()
                out.append((node, task))
                continue
            cus = task.cus
            if not cus:     # @IO: an I/O executor of some node, no computing unit
                node = _io_node(nodes, task)
                if node is None:
                    deferred.append(pop())
                    if len(deferred) >= 32:
                        break
                    continue
                pop()
                node.io_used += 1
                node.mem_used += task.mem
                out.append((node, task))
                continue
            learned = runs[spec]
            extra = DEEP if (learned.n and learned.mean < SHORT) else 1
            if learned.held_mean and extra > 1:     # its values stay on the node: bounded depth
                extra = max(1, min(extra, PREFETCH_BYTES // learned.held_mean))
            if single is not None:
                n = single
                cap = n.slots * (1 + (0 if held else extra))
                node = n if (n.used + cus <= cap
                             and n.mem_used + task.mem <= n.memory_gb
                             and (not self.walltimes
                                  or _before_end(n, task, learned, self.longest))
                             and (not self.paused or _takes(n, task))) else None
                if node is not None and not spec.call_time and not self.walltimes:
                    # the calls of one function queued together: every one fits as
                    # the first does while there is room (same units and memory)
                    room = (cap - n.used) // cus if cus > 0 else len(ready)
                    mem = task.mem
                    if mem > 0:
                        room = min(room, int((n.memory_gb - n.mem_used) // mem))
                    if n.paused and not task.reads:
                        room = 1        # paused: one producing task at a time (_takes)
                    run = ready.pop_run(spec, max(1, room))
                    n.used += cus * len(run)
                    n.mem_used += mem * len(run)
                    out.extend([(n, t) for t in run])
                    continue
            else:
                node = self._choose(task, nodes, cus, extra)
                if node is not None and extra == DEEP and not spec.call_time \
                        and not task.reads and self._sliceable(task, node):
                    k = self._slice(node, task, cus, extra)
                    if k > 1:
                        run = ready.pop_run(spec, k, plain=True)
                        node.used += cus * len(run)
                        node.mem_used += task.mem * len(run)
                        out.extend([(node, t) for t in run])
                        self.loads.took(node)
                        continue
            if node is None:
                if self._all_full(nodes):
                    break            # every node is full even for short tasks: next round
                deferred.append(pop())
                if len(deferred) >= 32:
                    break
                continue
            pop()
            node.used += cus
            node.mem_used += task.mem
            out.append((node, task))
            if single is None:
                self.loads.took(node)
        for t in reversed(deferred):     # back in their places
            ready.push_front(t)
        return out

    def idle_room(self) -> int:
        """Slots a burst of calls can fill at once: every usable node's when the least
        loaded one has nothing placed on it (so some node sits idle), else 0. O(log n):
        the dispatcher asks after every round (:meth:`~..loop.dispatch.Dispatcher.let_run`)."""
        loads = self.loads
        if loads.nodes is None or self.ready:
            return 0
        node = loads.least()
        return loads.total if node is not None and node.used <= 0 else 0

    def _slice(self, node: NodeHandle, task: Task, cus: int, extra: int) -> int:
        """How many short calls of ``task``'s function ``node`` takes at once.

        One at a time, every round's few dozen calls went one to each of 128
        nodes: frames of 1-4 tasks, whose handling cost the nodes more than the
        tasks. A slice holds up to SLICE calls and SLICE_WORK seconds of their
        mean duration, so a burst of short calls is never more than that
        uneven over the nodes.
        """
        room = (node.slots * (1 + extra) - node.used) // cus if cus > 0 else SLICE
        mean = self.spec_runs[task.spec].mean
        k = min(room, SLICE, int(SLICE_WORK / mean) if mean > 0 else SLICE)
        mem = task.mem
        if mem > 0:
            k = min(k, int((node.memory_gb - node.mem_used) // mem))
        return k

    def freed(self, node: NodeHandle) -> None:
        """``node`` has less work than before (results came back, work was taken back)."""
        if self.loads.nodes is not None:
            self.loads.freed(node)

    def _fast(self, task: Task) -> bool:
        """The default placement can start from :class:`NodeLoads`' least loaded node."""
        return self.placement == "locality" and task.spec.pin is None

    def _sliceable(self, task: Task, node: NodeHandle) -> bool:
        """Short calls of ``task``'s function may go to ``node`` several at once."""
        return self.placement == "locality" and task.spec.pin is None and not task.excluded \
            and not node.paused and not (self.held and node.name in self.held)

    def _fits(self, n: NodeHandle, task: Task, cus: int, extra: int) -> bool:
        """``n`` may take ``task`` now: what :meth:`_choose_scan` asks of every node."""
        held = self.held
        return n.usable and n.slots >= cus \
            and n.used + cus <= n.slots * (1 + (0 if held and n.name in held else extra)) \
            and n.mem_used + task.mem <= n.memory_gb \
            and (not self.walltimes
                 or _before_end(n, task, self.spec_runs[task.spec], self.longest)) \
            and (not self.paused or _takes(n, task)) \
            and not (task.excluded and n.name in task.excluded)

    def _all_full(self, nodes: list[NodeHandle]) -> bool:
        if not self.held and len(nodes) > 1 and self.loads.nodes is not None:
            # the least loaded node has the lowest used / slots: if it is full even for
            # short tasks (used >= slots x (1 + DEEP)), so is every other node
            n = self.loads.least()
            return n is None or n.used >= n.slots * (1 + DEEP)
        return all(n.used >= n.slots * (1 + DEEP) for n in nodes if n.usable)

    def _choose(self, task: Task, nodes: list[NodeHandle], cus: int, extra: int) -> NodeHandle | None:
        if self._fast(task) and self.loads.nodes is not None:
            return self._choose_fast(task, cus, extra)
        return self._choose_scan(task, [n for n in nodes if n.usable], cus, extra)

    def _choose_fast(self, task: Task, cus: int, extra: int) -> NodeHandle | None:
        """Locality, then the least loaded node: O(inputs' holders + log nodes) when that
        node may take the task (nearly always); else the scan's choice.

        A node that may not take it (full, short of memory, too close to its job's end,
        paused, excluded after a failure there) sends the choice to the scan, except when
        every node has the same slots and the least loaded one is full: then so is every
        other node, as the scan would find out at the cost of a look at each.
        """
        loads = self.loads
        if task.reads:
            by_name = loads.by_name
            best: NodeHandle | None = None
            best_score = 0
            scores: dict[str, int] = {}
            for v in task.reads:
                holders = v._holders
                if holders:
                    for name in holders:
                        scores[name] = scores.get(name, 0) + 1
            for name, score in scores.items():
                n = by_name.get(name)
                if n is None or not self._fits(n, task, cus, extra):
                    continue
                if score > best_score or (score == best_score and best is not None
                                          and n.load < best.load):
                    best, best_score = n, score
            if best is not None:
                return best
        node = loads.least()
        if node is None:
            return None
        if self._fits(node, task, cus, extra):
            return node
        if loads.uniform and node.used + cus > node.slots * (1 + extra) \
                and not (self.held and node.name in self.held):
            return None              # the least loaded node is full: so is every other
        return self._choose_scan(task, [n for n in self.nodes if n.usable], cus, extra)

    def _choose_scan(self, task: Task, nodes: list[NodeHandle], cus: int,
                     extra: int) -> NodeHandle | None:
        held = self.held
        pin = task.spec.pin
        if pin is not None:         # one copy of a replicated task per node (another node
            nodes = [n for n in nodes if n.name == pin] or nodes    # if its node is gone)
        fit = [n for n in nodes
               if n.used + cus <= n.slots * (1 + (0 if held and n.name in held else extra))
               and n.mem_used + task.mem <= n.memory_gb and n.slots >= cus]
        if self.walltimes:
            learned = self.spec_runs[task.spec]
            fit = [n for n in fit if _before_end(n, task, learned, self.longest)]
        if self.paused:
            fit = [n for n in fit if _takes(n, task)]
        if not fit:
            return None
        if task.excluded:
            others = [n for n in fit if n.name not in task.excluded]
            if others:
                fit = others
        if len(fit) == 1:
            return fit[0]
        policy = self.placement
        if policy == "fifo":
            self._rr += 1
            return fit[self._rr % len(fit)]
        if policy == "least-loaded":
            # no prefetch onto a node that outside load keeps busy: its slots only
            roomy = [n for n in fit if n.used + cus <= n.slots or _outside_load(n) < 0.5]
            return min(roomy, key=_reported_load) if roomy else None
        # locality: bytes of inputs already on the node, then least loaded
        if task.reads:
            best, best_score = fit[0], -1      # the first node scores >= 0 and replaces it
            for n in fit:
                score = sum(1 for v in task.reads if v._holders and n.name in v._holders)
                if score > best_score or (score == best_score and n.load < best.load):
                    best, best_score = n, score
            if best_score > 0:
                return best
        return min(fit, key=lambda n: n.load)


def _io_node(nodes: list[NodeHandle], task: Task) -> NodeHandle | None:
    """The node with the most free I/O executors for an @IO task (one task queued behind
    each busy one at most), on its pinned node if it has one; None: none now."""
    pin = task.spec.pin
    best: NodeHandle | None = None
    for n in nodes:
        if not n.usable or not n.io_slots or (pin is not None and n.name != pin) \
                or n.io_used >= 2 * n.io_slots or n.mem_used + task.mem > n.memory_gb:
            continue
        if best is None or n.io_used * best.io_slots < best.io_used * n.io_slots:
            best = n
    return best


def _takes(node: NodeHandle, task: Task) -> bool:
    """A paused node (above its memory pause mark) takes tasks that read values, which may
    free them, and a task that only makes values when nothing else runs there (so a pause
    slows a run down to one such task at a time on the node, and never stops it)."""
    return not node.paused or bool(task.reads) or node.used <= 0


def _before_end(node: NodeHandle, task: Task, learned: SpecRun, longest: float | None) -> bool:
    """The task is expected to end before the node's job does (walltime, issue 7).

    The expected duration is the task's ``time_out``, else the mean of its
    earlier runs, unless that mean is longer than any job of the run can ever
    give (``longest``): an estimate no node could honour is not waited on for
    ever, the task is tried. A node past its drain point (end - ``drain_margin``)
    gets nothing new.
    """
    end: float | None = getattr(node, "walltime_end", None)
    if end is None:
        return True
    left = end - time.time() - getattr(node, "drain_margin", 0.0)
    if left <= 0:
        return False
    opts = task.options
    expect: float = (opts.time_out if opts is not None else None) or 0.0
    if not expect and learned.n and (longest is None or learned.mean <= longest):
        expect = learned.mean
    return expect <= left


def _outside_load(node: NodeHandle) -> float:
    """Share of the node's cores busy with work that is not taskflow's (last sample)."""
    s = node.sample
    if not s or s.get("cpu") is None:
        return 0.0
    share: float = max(0.0, s["cpu"] - s.get("cpu_own", 0.0)) / 100.0
    return share


def _reported_load(node: NodeHandle) -> tuple[float, float]:
    """Expected wait on the node for one more task: its queue, slowed by outside load."""
    s = node.sample
    if not s or s.get("cpu") is None:
        return (node.load, node.load)
    if "cpu_own" not in s:
        return (s["cpu"] / 100.0 + node.load, node.load)
    speed = max(0.1, 1.0 - _outside_load(node))    # share of its cores left for taskflow
    return ((node.load + 1.0 / max(node.slots, 1)) / speed, node.load)
