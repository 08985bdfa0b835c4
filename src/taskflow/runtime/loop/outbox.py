"""What one round of the loop sends: assignments turned into frames per node.

Under the runtime lock, :meth:`Outbox.prepare` turns the scheduler's
assignments into each node's frames: a FUNC for a function the node does not
have yet, DATA for values a task needs there, and one TASKS batch. It also
chains consumers to their producer's node before the producer has finished
(:meth:`Outbox._chain`). It is every stager's
:class:`~taskflow.providers.staging.StageHost`.
"""
from __future__ import annotations

import json
import time
import traceback
from typing import TYPE_CHECKING, Any

import cloudpickle

from ...future import FINISHED, Future
from ...graph import task as T
from ...graph.digests import blake2b
from ...graph.spec import TaskSpec
from ...graph.task import Task
from ...providers.handle import NodeHandle
from ...wire import messages as M
from ...wire import protocol as P
from ...wire.thresholds import MASTER_DEEP, MASTER_SHORT
from ..scheduling import gang
from ..rules import outcomes
from ...events import Dispatched, Granted
from ...errors import RecordFailed
from ..recovery.recordfail import record_failed
from ..recovery.adopt import ADOPT_MIN
from ..recovery.log import Chunk, completion_record

if TYPE_CHECKING:
    from ...graph.task import TaskRef
    from .dispatch import Dispatcher
    from ..rules.outcomes import Callbacks
    from ..recovery.recovery import Recovery
    from ..state import RunState
    from ..specruns import SpecRun

Frames = list[Any]    # per node this round: (op, body) pairs, then the TASKS batch being built


class Outbox:
    def __init__(self, rt: RunState, recovery: Recovery, disp: Dispatcher) -> None:
        self.rt = rt
        self.recovery = recovery
        self.disp = disp
        self.remote = disp.remote
        self.lost: list[tuple[Task, Future]] = []   # inputs no node holds nor can make again

    def prepare(self, assignments: list[tuple[NodeHandle, Task]],
                 cbs: Callbacks) -> dict[NodeHandle, Frames]:
        """Turn assignments into frames per node (under the runtime lock)."""
        sends: dict[NodeHandle, Frames] = {}
        now = time.time()
        emit = self.rt.bus.emit if self.rt.bus.active else None
        runs = self.rt.spec_runs
        last_spec: TaskSpec | None = None
        last_node: NodeHandle | None = None
        frames: Frames          # frames, batch, digest, learned: set with last_spec (the first task)
        batch: list[M.TaskWire]
        digest: bytes
        learned: SpecRun
        chained: object         # its consumers (a list or None), or whether any output has some
        # an adoptable run: the keys of keyed calls go to their node (runtime/recovery/adopt.py)
        adoptable = self.recovery.adoptable
        keyed: dict[NodeHandle, list[tuple[int, bytes]]] | None = {} if adoptable else None
        for node, task in assignments:
            spec = task.spec
            if spec is not last_spec or node is not last_node:
                last_spec, last_node = spec, node
                learned = runs[spec]
                digest = learned.digest if learned.digest is not None else _digest(spec, learned)
                known = sends.get(node)
                if known is None:
                    known = sends[node] = [[]]
                frames = known
                if digest not in node.funcs:
                    node.funcs.add(digest)
                    assert learned.payload is not None     # made with the digest
                    keys = self.recovery.keys   # (an adoptable run: its code digest, adopt.py)
                    code = keys.code(spec) if adoptable and keys is not None else None
                    frames.insert(len(frames) - 1,
                                  (M.FUNC, M.Func(digest, learned.payload, code)))
                batch = frames[-1]          # this round's TASKS for the node: always last
            refs = task.refs
            wire_refs = None
            if refs:
                wire_refs = self._wire_refs(node, task, refs, frames)
                if wire_refs is None:       # waiting for data (from a node, or an upload)
                    task.state = T.READY
                    node.unplace(task)
                    self.rt.scheduler.freed(node)
                    if self.rt.scheduler.gangs:
                        gang.release(self.rt.scheduler, task)
                    continue
            inouts = task.inouts
            wire_inouts = [(e.path, e.kind, e.pname) for e in inouts] if inouts else None
            outs = task.outputs
            if inouts:
                outs = task.all_outputs()
            if len(outs) == 1:
                (out,) = outs
                outdids = [out._did]
                chained = out._consumers
            else:
                outdids = [f._did for f in outs]
                chained = any(f._consumers for f in outs)
            batch.append((task.id, digest, task.argv, wire_refs, task.kwargs, spec.nout,
                          wire_inouts, task.options, task.prio, task.cus, spec.exclusive,
                          outdids))
            task.state = T.DISPATCHED
            task.node = node
            task.t_dispatch = now
            node.inflight[task.id] = task
            # (calls known to be short are not worth adopting: run again, they cost less
            # than their keys on every dispatch, a chain's latency above all)
            if keyed is not None and task.key is not None and \
                    not (learned.n and learned.mean < ADOPT_MIN):
                keyed.setdefault(node, []).append((task.id, task.key))
            if chained:
                self._chain(task, node, assignments)
            if emit is not None and not (learned.n and learned.mean < MASTER_SHORT):
                # Short tasks get no event of their own: their end event carries
                # the dispatch time, and nobody could watch them run anyway.
                emit(Dispatched("dispatched", now, task.id, spec.name, node.name,
                                None if task.cus == 1 and task.options is None
                                else slots_held(task, node)))
            if spec.gang and emit is not None and spec.need is not None:
                emit(granted(task, node, now))
        for node, frames in sends.items():
            batch = frames.pop()
            if batch:
                frames.append((M.TASKS, batch))
                if keyed and node in keyed:     # (what a resumed master adopts them by)
                    frames.append((M.KEYS, keyed.pop(node)))
        if self.lost:
            self._inputs_lost(cbs)
        return sends

    def _inputs_lost(self, cbs: Callbacks) -> None:
        """Tasks whose input is gone for good (its nodes lost, no way to make it again)."""
        lost, self.lost = self.lost, []
        now = time.time()
        for task, fut in lost:
            if task.state != T.READY:
                continue
            task.t_start = task.t_end = now
            outcomes.task_failed(self.rt, task, M.ERROR, M.ErrorInfo(
                "ValueLost", f"its input d{fut._did} was lost with the nodes that held it and "
                f"cannot be made again (its producer failed or was cancelled)", "", None),
                None, cbs)

    def _chain(self, task: Task, node: NodeHandle,
               assignments: list[tuple[NodeHandle, Task]]) -> None:
        """Send the consumers of ``task`` to its node before it finishes.

        A consumer whose only unfinished inputs are produced on the same node
        can wait there: the agent starts it the moment the value is made,
        without a round trip through the master (a dependent chain then costs
        one hop per task). Only plain Python tasks whose pending inputs are
        objects qualify; a failure or retry of the producer takes them back
        (:func:`outcomes.undispatch`).
        """
        outs = task.outputs if not task.inouts else task.all_outputs()
        for fut in outs:
            cs = fut._consumers
            if not cs:
                continue
            for c in cs:
                if c.state is T.SUBMITTED and self._chainable(c, node):
                    c.state = T.READY
                    node.used += c.cus
                    node.mem_used += c.mem
                    assignments.append((node, c))

    def _chainable(self, c: Task, node: NodeHandle) -> bool:
        spec = c.spec
        if spec.exclusive or spec.gang or c.lock_item is not None \
                or node.stager is not None or not c.reads or spec.pin is not None \
                or not c.cus:       # (an @IO task waits for an I/O executor: scheduler)
            return False
        learned = self.rt.spec_runs[spec]
        extra = 1 if not learned.n or learned.mean >= MASTER_SHORT else MASTER_DEEP
        if node.used + c.cus > node.slots * (1 + extra) or node.mem_used + c.mem > node.memory_gb:
            return False
        if c.excluded and node.name in c.excluded:
            return False
        name = node.name
        for d in c.reads:
            if d._state is FINISHED:
                if d._exception is not None or (d._payload is None and not (
                        d._holders and name in d._holders)):
                    return False
                continue
            p = d._producer
            if p is None or d._path is not None or p.node is not node \
                    or (p.state is not T.DISPATCHED and p.state is not T.RUNNING):
                return False
        return True

    def _wire_refs(self, node: NodeHandle, task: Task, refs: list[TaskRef],
                   frames: Frames) -> list[M.RefWire] | None:
        if node.stager is not None:     # no shared filesystem: translate paths, stage inputs
            return node.stager.wire_refs(self, node, task, refs, frames)
        out: list[M.RefWire] = []
        push: list[Future] = []
        for path, kind, obj in refs:
            if kind == M.REF_VALUE:
                if not self.ensure(node, obj, push, task):
                    return None
                out.append((path, kind, obj._did))
            elif kind == M.REF_PICKLED:
                blob, futs = obj
                for f in futs:
                    if not self.ensure(node, f, push, task):
                        return None
                out.append((path, kind, (blob, [f._did for f in futs])))
            elif kind == M.REF_FILE_INOUT or kind == M.REF_DIR_INOUT:
                old, new = obj
                out.append((path, kind, (old._path, new._path)))
            else:
                out.append((path, kind, obj._path))
        if push:
            self.send_values(node, push, frames)
        return out

    # -- StageHost: what a stager asks of the runtime ------------------------------------
    def ensure(self, node: NodeHandle, fut: Future, push: list[Future], task: Task) -> bool:
        """``node`` will have ``fut``'s value: it holds it, it is made there (a chained
        producer), it goes along (added to ``push``: see :meth:`send_values`), or it is
        first fetched from another node (False: the task waits)."""
        holders = fut._holders
        if holders is not None and node.name in holders:
            return True
        if fut._state is not FINISHED:        # chained: made on this node, where the agent
            self.remote.watch(fut, node.name)     # may keep it for the tasks waiting for it
            return True
        if fut._payload is not None:
            push.append(fut)
            return True
        if fut._exception is not None:
            raise RuntimeError(f"internal: task {task.id} reads a failed value")
        # The value lives on another node: it is copied there in parts (runtime.loop.relay).
        if not self.disp.relay.request(fut, node, task):
            self.lost.append((task, fut))
        return False

    def send_values(self, node: NodeHandle, push: list[Future], frames: Frames) -> None:
        """The values ``push`` go to ``node`` with this round's work, before it: the node
        holds them from now on (recorded only now, when the frame is certain to go)."""
        name = node.name
        for fut in push:
            fut.held_by(name)
            self.remote.watch(fut)
        frames.insert(len(frames) - 1, (M.DATA, [(f._did, f._payload) for f in push]))

    def staged_in(self, task: Task, node: NodeHandle, futs: list[Future],
                  err: M.ErrorInfo | None) -> None:
        """A stager's thread: ``task``'s input files are on ``node`` (or failed to go)."""
        rt = self.rt
        cbs: Callbacks = []
        with rt.lock:
            if task.state == T.READY:
                if err is None:
                    for fut in futs:
                        fut.held_by(node.name)
                    rt.scheduler.push(task)
                elif err.type_name == "NodeLost" or not node.alive:
                    task.excluded = (task.excluded or set()) | {node.name}
                    rt.scheduler.push(task)
                else:
                    task.t_start = task.t_end = time.time()
                    outcomes.task_failed(rt, task, M.ERROR, err, node, cbs)
        self._after_staging(cbs)

    def brought_back(self, task: Task, node: NodeHandle, outputs: list[M.Output],
                     files: list[Future], err: M.ErrorInfo | None) -> None:
        """A stager's thread: the files ``task`` wrote on ``node`` are here (or lost)."""
        rt = self.rt
        cbs: Callbacks = []
        with rt.lock:
            if err is None:
                for fut in files:
                    fut.held_by(node.name)
                if self.recovery.log is not None:     # logged before it is acted on
                    payloads: list[Chunk] = []
                    rec = completion_record(task, outputs, payloads)
                    if rec is not None:
                        try:
                            self.recovery.keep_completions([rec], payloads)
                        except RecordFailed as exc:     # the result stands; the run fails
                            record_failed(rt, str(exc), cbs)
                outcomes.task_done(rt, task, outputs, node, cbs)
            else:           # the node gone (placed again), or a full disk (the task's)
                outcomes.task_failed(rt, task, M.LOST if err.type_name == "NodeLost" else
                                     M.ERROR, err, node, cbs)
        self._after_staging(cbs)

    def _after_staging(self, cbs: Callbacks) -> None:
        self.disp.wake()
        for fn, fut in cbs:
            try:
                fn(fut)
            except Exception:  # noqa: BLE001 - a user's callback
                traceback.print_exc()


def _digest(spec: TaskSpec, learned: SpecRun) -> bytes:
    """The function pickled to ship, once per run, and its digest (nodes know it by that)."""
    target = spec.wrapper or spec.func
    code = getattr(spec.func, "__code__", None)
    payload: bytes = cloudpickle.dumps((target, code.co_filename if code else None), P.PROTOCOL)
    learned.payload = payload
    learned.digest = digest = blake2b(payload, digest_size=16).digest()
    return digest


def granted(task: Task, node: NodeHandle, now: float) -> Granted:
    """The journal's record of the named resources and variant ``task`` was given."""
    inv = task.options.invocation if task.options is not None else None
    place = inv.placement if inv is not None else None
    given = json.loads(place.resources) if place is not None and place.resources else {}
    variant = place.variant if place is not None and place.variant >= 0 else None
    return Granted("granted", now, task.id, task.spec.name, node.name,
                   json.dumps({"variant": variant, "cores": task.cus, "resources": given}))


def slots_held(task: Task, node: NodeHandle) -> list[tuple[str, int]] | None:
    """[(node name, slots)] a task holds when that is not one slot of its node (journal)."""
    inv = task.options.invocation if task.options is not None else None
    place = inv.placement if inv is not None else None
    if place is not None:
        if len(place.node_names) == 1:      # one node: the units it was given there
            return [(n, task.cus) for n, _ in place.node_names]
        unit = inv.gang.unit if inv is not None and inv.gang is not None else 1
        return [(n, k * unit) for n, k in place.node_names]
    return None if task.cus == 1 else [(node.name, task.cus)]
