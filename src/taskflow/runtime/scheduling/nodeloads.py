"""The nodes by load, least loaded first: the default choice of a node in O(log n).

The scheduler used to look at every node for every task (a list of the nodes
with room, then the least loaded): with 128 nodes that loop was most of the
master's time per task. :class:`NodeLoads` keeps a heap of
``(load, seq, used, node)`` instead:

* an entry is *current* while the node's ``used`` is still the one it was
  pushed with; a popped entry that is not current goes back with the node's
  load now, so a node that got more work (by the scheduler or by anything
  else) sinks by itself;
* a node whose load went *down* must be pushed again (:meth:`freed`), or its
  old entry would keep it too deep: the dispatcher does that once per
  RESULTS frame, and so do the rare paths that take work back from a node
  (a task waiting for data, a chained task taken back, a gang released);
* a node that is lost or leaving, or past its Slurm job's drain point, drops out
  when its entry comes up;
* the heap is rebuilt from the nodes when it holds four times as many
  entries as there are nodes (each task and each frame adds at most one).

So the choice stays O(log n) per task, and every task still goes where the
old scan would have put it: the node with the lowest ``used / slots``, the
first of them in heap order when several tie.
"""
from __future__ import annotations

import heapq
import itertools
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ...providers.handle import NodeHandle

Entry = tuple[float, int, int, "NodeHandle"]


class NodeLoads:
    __slots__ = ("heap", "seq", "nodes", "size", "uniform", "slots", "memory_gb", "by_name",
                 "total")

    def __init__(self) -> None:
        self.heap: list[Entry] = []
        self.seq = itertools.count()
        self.nodes: list[NodeHandle] | None = None   # the list the heap was built from
        self.size = -1                 # its length then (nodes join by appending to it)
        self.uniform = False           # every node has the same slots and memory
        self.slots = 0
        self.memory_gb = 0.0
        self.by_name: dict[str, NodeHandle] = {}    # for locality: where inputs are held
        self.total = 0                 # the usable nodes' slots at the last rebuild

    def stale(self, nodes: list[NodeHandle]) -> bool:
        return nodes is not self.nodes or len(nodes) != self.size \
            or len(self.heap) > 4 * self.size + 64

    def rebuild(self, nodes: list[NodeHandle]) -> None:
        seq = self.seq
        self.heap = [(n.used / n.slots, next(seq), n.used, n) for n in nodes
                     if n.usable and n.slots > 0]
        heapq.heapify(self.heap)
        self.nodes, self.size = nodes, len(nodes)
        self.by_name = {n.name: n for n in nodes if n.usable}
        usable = [n for n in nodes if n.usable]
        self.uniform = bool(usable) and all(
            n.slots == usable[0].slots and n.memory_gb == usable[0].memory_gb for n in usable)
        if usable:
            self.slots, self.memory_gb = usable[0].slots, usable[0].memory_gb
        self.total = sum(n.slots for n in usable)

    def freed(self, node: NodeHandle) -> None:
        """``node`` has less work than before: its place in the heap moves up."""
        if node.slots > 0:
            heapq.heappush(self.heap, (node.used / node.slots, next(self.seq), node.used, node))

    def least(self) -> NodeHandle | None:
        """The usable node with the least load (None: no usable node). A node past the
        drain point of its Slurm job (``walltime_end - drain_margin``) takes nothing new:
        it leaves the heap like a lost one (a result from it pushes it again: freed)."""
        heap = self.heap
        while heap:
            _, _, used, node = heap[0]
            if used == node.used and node.usable:
                end = node.walltime_end
                if end is None or time.time() < end - node.drain_margin:
                    return node
                heapq.heappop(heap)
                continue
            if node.usable:
                heapq.heapreplace(heap, (node.used / node.slots, next(self.seq), node.used, node))
            else:
                heapq.heappop(heap)
        return None

    def took(self, node: NodeHandle) -> None:
        """``node`` (the one :meth:`least` gave) got work: its entry goes down."""
        heap = self.heap
        entry = (node.used / node.slots, next(self.seq), node.used, node)
        if heap:
            _, _, _, top = heap[0]
            if top is node:
                heapq.heapreplace(heap, entry)
                return
        heapq.heappush(heap, entry)
