"""Which of the tasks sent to the nodes run now and which wait there (queued), per name.

A node is sent more tasks than it has slots (the master prefetches short
ones deeply: ``wire.thresholds``), so "on a node" is not "running". A task
the node said has started (state ``RUNNING``) runs. Functions known to take
under 5 ms send no such signal; they are counted as running only as far as
the node's slots left by the started ones go, in the order they were sent,
and the rest of what the node holds is queued. So a node never shows more
running tasks than it has slots (514 "running" on 2 slots was the old view).

Read without the run's lock, for a display: a count may be off by the task
that ends meanwhile, never by a node's backlog.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    from .view import RunView


class Occupancy(NamedTuple):
    """Per task name: tasks running on a node, and tasks held on a node not started."""

    running: dict[str, int]
    queued: dict[str, int]

    @property
    def n_running(self) -> int:
        return sum(self.running.values())

    @property
    def n_queued(self) -> int:
        return sum(self.queued.values())


def occupancy(rt: RunView) -> Occupancy:
    """What the nodes hold now: running and queued tasks per name (see the module doc)."""
    from ..graph import task as T
    from ..wire.thresholds import MASTER_SHORT
    running: dict[str, int] = {}
    queued: dict[str, int] = {}
    runs = rt.spec_runs         # (read without the run's lock: get adds nothing)
    for n in list(rt.nodes):
        held = list(n.inflight.values())
        maybe = []              # short tasks: running or not, the node does not say
        free = n.slots
        for t in held:
            name = t.spec.name
            if t.state is T.RUNNING:
                running[name] = running.get(name, 0) + 1
                free -= 1
                continue
            learned = runs.get(t.spec)
            if t.npending == 0 and learned is not None and learned.n \
                    and learned.mean < MASTER_SHORT:
                maybe.append(name)
            else:
                queued[name] = queued.get(name, 0) + 1
        for i, name in enumerate(maybe):        # the first sent fill the free slots
            into = running if i < free else queued
            into[name] = into.get(name, 0) + 1
    return Occupancy(running, queued)
