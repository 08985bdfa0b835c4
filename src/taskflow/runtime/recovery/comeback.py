"""A node that was lost and came back to the same run: its kept tasks used, not redone.

When an SSH host's link is cut, the master takes the node for lost (its
tasks go elsewhere, through lineage) and its agent, cut off from its master,
keeps its running tasks and holds their results (agent/orphan.py). If the
link comes back within the agent's grace, the running master reaches the
agent again (providers/comeback.py) and the node joins the run under its old
name. What the agent kept are the master's *own* tasks (same ids), so
nothing is matched by key here:

- a kept task whose task is not finished yet (waiting in the ready queue, or
  sent to another node meanwhile) is *claimed*: the copy elsewhere is taken
  back and cancelled there, and the kept one's result (held, or to come) is
  the task's. The kept copy started first: it is the one that ends first.
- a kept task that finished elsewhere meanwhile (or failed, or was cancelled),
  or one whose task waits for inputs made again, is cancelled on the node:
  never a value twice into the graph.

The values the node still holds are its own again (the master's futures name
the node as a holder); those whose futures died while it was away are
dropped there (DROP), as any dead value is. Called in the loop thread, under
the run's lock.
"""
from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from ...graph import task as T
from ...providers.handle import placed_on
from ...wire import messages as M
from ...events import Dispatched, NodeNote, Resumed

if TYPE_CHECKING:
    from ...graph.task import Task
    from ...providers.handle import NodeHandle
    from ..loop.remote_values import RemoteValues
    from ..state import RunState

log = logging.getLogger(__name__)


class Comeback:
    """What one node's return did (its summary line is :meth:`line`)."""

    def __init__(self, node: str, away: float) -> None:
        self.node = node
        self.away = away
        self.held = 0           # results that finished on it while it was away, used
        self.running = 0        # tasks still running there, kept (their copies elsewhere stopped)
        self.cancelled = 0      # kept tasks finished elsewhere meanwhile: stopped there
        self.callers = 0        # kept tasks that called tasks or used streams: stopped there
        self.values = 0         # values it still holds that the run still uses
        self.fresh = False      # its agent was gone: a new one started there

    def line(self) -> str:
        """``h1 back after 23 s: 3 held results used, 1 running task kept``."""
        if self.fresh:
            return (f"{self.node} back after {self.away:.0f} s (with a fresh agent: the one "
                    f"it had was gone)")
        parts = [f"{self.held} held result{'s' if self.held != 1 else ''} used",
                 f"{self.running} running task{'s' if self.running != 1 else ''} kept"]
        if self.cancelled:
            parts.append(f"{self.cancelled} finished elsewhere meanwhile (stopped there)")
        if self.callers:
            parts.append(f"{self.callers} that called tasks or used a stream run again "
                         f"(stopped there)")
        if self.values:
            parts.append(f"{self.values} value{'s' if self.values != 1 else ''} still held "
                         f"there")
        return f"{self.node} back after {self.away:.0f} s: {', '.join(parts)}"


class Comebacks:
    """The tasks that were in flight on lost nodes, until those nodes come back."""

    def __init__(self) -> None:
        # node name -> task id -> (the task, it was running: its loss counted as a crash,
        # it had called tasks or used a stream: its loss cancelled its children and closed
        # its streams, so its kept copy cannot go on)
        self.lost: dict[str, dict[int, tuple[Task, bool, bool]]] = {}
        self.frames: list[tuple[NodeHandle, int, object]] = []   # (node, op, body) to send
        self.backs: list[Comeback] = []

    def node_lost(self, node: NodeHandle, tasks: list[Task]) -> None:
        """``node`` is being lost with ``tasks`` in flight (kept for its return: bounded by
        them); called before the loss is applied to them."""
        if tasks:
            self.lost.setdefault(node.name, {}).update(
                (t.id, (t, t.state == T.RUNNING, t.nest is not None)) for t in tasks)

    def back(self, rt: RunState, remote: RemoteValues, node: NodeHandle,
             away: float) -> Comeback:
        """``node`` joined again after ``away`` seconds: its kept tasks claimed or cancelled
        (an ADOPT frame), the values it holds that nobody uses dropped (DROP; ``remote``:
        the values on nodes the run watches)."""
        info = node.info
        fresh = "adoptable" not in info         # (a waiting agent lists what it kept)
        kept = [M.Adoptable._make(a) for a in info.pop("adoptable", None) or ()]
        info.pop("ids_above", None)
        held = info.pop("held", None) or []
        lost = self.lost.pop(node.name, {})
        back = Comeback(node.name, away)
        back.fresh = fresh
        claims: list[tuple[int, int, list[int]]] = []
        cancels: list[int] = []
        queued: set[int] = set()
        now = time.time()
        bus = rt.bus
        waiting = {t.id for t in rt.scheduler.ready} if kept else set()
        for a in kept:
            task, was_running, called = lost.get(a.task_id, (None, False, False))
            where = _where(task, waiting) if task is not None else None
            if task is None or where is None or called:
                cancels.append(a.task_id)
                if called and where is not None:
                    back.callers += 1
                else:
                    back.cancelled += 1
                continue
            if was_running and task.crashes:    # its worker did not die: its node was away
                task.crashes -= 1
                if where == "ready":            # (and it did not run again)
                    rt.tally.retry_undone()
            if where == "ready":
                queued.add(task.id)
            else:                           # sent to another node meanwhile: taken back
                other = placed_on(task)
                assert other is not None
                other.release(task.id)
                rt.comm.cancel_on(other, task.id)
                rt.scheduler.freed(other)
            node.inflight[task.id] = task
            node.used += task.cus
            node.mem_used += task.mem
            task.node = node
            task.state = T.DISPATCHED if a.done else T.RUNNING
            task.t_dispatch = now
            claims.append((task.id, task.id, [f._did for f in task.all_outputs()]))
            if a.done:
                back.held += 1
            else:
                back.running += 1
            if bus.active:
                bus.emit(Resumed("adopted", now, task.id, task.spec.name, node.name,
                                 f"finished on {node.name} while it was cut off" if a.done
                                 else f"kept running on {node.name} while it was cut off"))
                bus.emit(Dispatched("dispatched", now, task.id, task.spec.name, node.name,
                                    None))
        if queued:
            ready = rt.scheduler.ready
            ready.replace([t for t in ready if t.id not in queued])
        rt.scheduler.freed(node)
        if claims or cancels:
            self.frames.append((node, M.ADOPT, M.Adopt(claims, cancels)))
        remote.not_on(node.name, set(held))     # what it lost (all: a fresh agent)
        unused = remote.unused(held)
        back.values = len(held) - len(unused)
        if unused:
            self.frames.append((node, M.DROP, unused))
        text = back.line()
        self.backs.append(back)
        log.warning("node %s", text)
        if bus.active:
            bus.emit(NodeNote("log", now, 0, "", node.name, ("TASKFLOW", f"node {text}")))
        info["back"] = text
        return back

    def take_frames(self) -> list[tuple[NodeHandle, int, object]]:
        """Under the run's lock (the loop): the frames this round sends to nodes back."""
        frames, self.frames = self.frames, []
        return frames

    def summary(self) -> str:
        """The returns of the run, for its last line (``h1 back after 23 s: ...``), or ""."""
        return "; ".join(b.line() for b in self.backs)


def _where(task: Task, waiting: set[int]) -> str | None:
    """Where a task kept by a node that came back is now: ``"ready"`` (in the ready queue,
    ``waiting``), ``"sent"`` (in flight on another live node, its inputs all there), or
    None (finished, failed, cancelled, waiting for inputs made again, or a multi-node task:
    the node's copy is cancelled)."""
    if task.npending > 0 or task.state in T.FINAL_STATES:
        return None
    inv = task.options.invocation if task.options is not None else None
    if inv is not None and inv.gang is not None:
        return None
    if task.state == T.READY and task.id in waiting:
        return "ready"
    other = placed_on(task)
    if task.state in (T.DISPATCHED, T.RUNNING) and other is not None and other.alive \
            and other.inflight.get(task.id) is task:
        return "sent"
    return None
