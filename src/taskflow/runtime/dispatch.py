"""The loop thread: read from nodes, apply results, dispatch, write to nodes.

One thread does all node I/O through one ``selectors`` loop, so connections
need no locks and every write is non-blocking. Each round: read whatever
arrived, take the runtime lock once to apply all of it and to ask the
scheduler for assignments, release the lock, then encode and send one batch
per node.
"""
from __future__ import annotations

import logging
import hashlib
import os
import selectors
import sys
import threading
import time
import traceback
from typing import TYPE_CHECKING, Any

import cloudpickle

from ..future import FINISHED, Future
from ..graph import task as T
from ..graph.spec import TaskSpec
from ..graph.task import Task
from ..providers.handle import NodeHandle
from ..wire import messages as M
from ..wire import protocol as P
from ..wire.thresholds import MASTER_DEEP, MASTER_SHORT
from . import gang, lineage, outcomes
from .remote_values import RemoteValues
from .state import Waiter

log = logging.getLogger(__name__)

if TYPE_CHECKING:
    from ..graph.task import TaskRef
    from .outcomes import Callbacks
    from .runtime import Runtime

Frames = list[Any]    # per node this round: (op, body) pairs, then the TASKS batch being built


class _Fetch:
    """A value being brought from a node to the master, and who waits for it."""

    __slots__ = ("fut", "waiters")

    def __init__(self, fut: Future, waiter: Waiter) -> None:
        self.fut = fut
        self.waiters: list[Waiter] = [waiter]


class Dispatcher:
    """The loop thread's half of the runtime: node I/O, results in, work out.

    It is the runtime's :class:`~.state.Comm` (what the outcome rules ask of
    the nodes) and every stager's :class:`~taskflow.providers.staging.StageHost`.
    """

    def __init__(self, rt: Runtime) -> None:
        self.rt = rt
        self.sel = selectors.DefaultSelector()
        self._rfd, self._wfd = os.pipe()
        os.set_blocking(self._rfd, False)
        self._wake_pending = False
        self._round_done = threading.Event()   # set after every round (let_run)
        self.ident: int | None = None          # the loop thread
        self.closing = False
        self.crashed: str | None = None
        self.fetches: dict[int, _Fetch] = {}   # data id -> value being fetched
        self.fetch_queue: list[tuple[NodeHandle, Future]] = []   # FETCH frames to send
        self.data_out: dict[NodeHandle, list[M.DataItem]] = {}   # values for chained tasks
        self.cancel_out: dict[NodeHandle, list[int]] = {}        # task ids taken back
        self.remote = RemoteValues(self.wake)  # values on nodes: DROP when their future dies
        self.nodes: list[NodeHandle] = []
        self.joining: list[NodeHandle] = []    # nodes added while running (add_node)

    # -- called from other threads -------------------------------------------
    def open(self, nodes: list[NodeHandle]) -> None:
        self.nodes = nodes
        self.sel.register(self._rfd, selectors.EVENT_READ, None)
        for n in nodes:
            self.sel.register(n.rfd, selectors.EVENT_READ, n)

    def add_node(self, node: NodeHandle) -> None:
        """Any thread: a node joins the running loop (registered by the loop thread)."""
        with self.rt.lock:
            self.joining.append(node)
            self.wake()

    def _join(self) -> None:
        """Loop thread, under the runtime lock: register the nodes that joined."""
        rt = self.rt
        joining, self.joining = self.joining, []
        for n in joining:
            if self.closing:
                n.close()
                continue
            self.sel.register(n.rfd, selectors.EVENT_READ, n)
            self.nodes.append(n)
            if rt.scheduler.nodes is not self.nodes:
                rt.scheduler.nodes.append(n)
            if n.walltime_end is not None:
                rt.scheduler.walltimes = True      # check job ends before placing
            rt._max_cus, rt._max_mem = rt.scheduler.capacity()
            if rt.bus.active:
                rt.bus.emit(("node_join", time.time(), 0, "", n.name,
                             dict(n.info, slots=n.slots, job_id=n.job_id)))

    def wake(self) -> None:
        if not self._wake_pending:
            self._wake_pending = True
            try:
                os.write(self._wfd, b"\0")
            except OSError:
                pass

    def let_run(self) -> None:
        """A thread submitting a burst of calls gives the loop thread its turn.

        Both need the GIL, and a thread that never blocks keeps it for the
        whole switch interval (5 ms): during a burst the loop thread ran
        about one round per interval and the nodes sat idle until the burst
        was over (1,000 to 2,500 of 10,000 no-ops done when the last call
        returned). Every ``YIELD_EVERY`` calls the submitter, holding no lock,
        waits (at most 5 ms) for the end of one round when work is waiting
        for it; then the nodes run while the calls are still being made.
        """
        if not self._wake_pending or self.closing or self.crashed \
                or threading.get_ident() == self.ident:
            return
        ev = self._round_done
        ev.clear()
        if self._wake_pending:
            ev.wait(0.005)

    def close(self) -> None:
        self.closing = True
        self._wake_pending = False
        self.wake()

    # -- Comm: what the outcome rules ask of the nodes (runtime lock held) ----------------
    def request_fetch(self, fut: Future, waiter: Waiter) -> None:
        """Get ``fut``'s value from a node holding it."""
        did = fut._did
        fetch = self.fetches.get(did)
        if fetch is None:
            node = next((n for n in self.nodes if n.alive and n.name in (fut._holders or ())),
                        None)
            if node is None:
                if lineage.recompute(self.rt, fut, waiter):   # lost with its node: rerun
                    self.wake()
                    return
                if isinstance(waiter, threading.Event):
                    waiter.set()
                return
            self.fetches[did] = _Fetch(fut, waiter)
            self.fetch_queue.append((node, fut))
        else:
            fetch.waiters.append(waiter)
        self.wake()

    def drop_fetches(self) -> list[Waiter]:
        waiters = [w for f in self.fetches.values() for w in f.waiters]
        self.fetches.clear()
        return waiters

    def watch_remote(self, fut: Future) -> None:
        self.remote.watch(fut)

    def push_data(self, node: NodeHandle, fut: Future) -> None:
        """Send a value to a node where a chained task waits for it."""
        assert fut._payload is not None
        self.data_out.setdefault(node, []).append((fut._did, fut._payload))

    def cancel_on(self, node: NodeHandle, tid: int) -> None:
        self.cancel_out.setdefault(node, []).append(tid)

    # -- the loop ------------------------------------------------------------
    def loop(self) -> None:
        self.ident = threading.get_ident()
        try:
            self._loop()
        except BaseException:  # report instead of hanging every waiter
            self.crashed = traceback.format_exc()
            log.error("internal error in the runtime loop:\n%s", self.crashed)

    def _loop(self) -> None:
        rt = self.rt
        sel = self.sel
        lock = rt.lock
        while not self.closing:
            events = sel.select(1.0)
            arrived = []
            lost = []
            for key, mask in events:
                node = key.data
                if node is None:
                    try:
                        os.read(self._rfd, 4096)
                    except BlockingIOError:
                        pass
                    continue
                if mask & selectors.EVENT_READ:
                    msgs = node.read()
                    if msgs is None:
                        lost.append(node)
                        continue
                    if msgs:
                        arrived.append((node, msgs))
                if mask & selectors.EVENT_WRITE:
                    self._flush(node)
            cbs: Callbacks = []
            with lock:
                self._wake_pending = False
                if self.joining:
                    self._join()
                for node, msgs in arrived:
                    self._handle(node, msgs, cbs)
                for node in lost:
                    self._lose(node, node.lost_reason or "its connection closed", cbs)
                sends = self._prepare(rt.scheduler.assign(), cbs) if rt.scheduler.ready else {}
                fetches, self.fetch_queue = self.fetch_queue, []
                if self.data_out or self.cancel_out:
                    self._early_frames(sends)
            for node, fut in fetches:
                node.queue(P.encode(M.FETCH, [fut._did]))
                sends.setdefault(node, [])
            dropped = self.remote.take()
            if dropped:
                frame = P.encode(M.DROP, dropped)
                for node in self.nodes:
                    if node.alive:
                        node.queue(frame)
                        sends.setdefault(node, [])
            for node, frames in sends.items():
                for op, body in frames:
                    node.queue(P.encode(op, body))
            for node in self.nodes:
                if node.out or node.wreg:
                    self._flush(node)
            self._round_done.set()
            for fn, fut in cbs:
                try:
                    fn(fut)
                except Exception:
                    traceback.print_exc()

    def _early_frames(self, sends: dict[NodeHandle, Frames]) -> None:
        """Data and cancellations for chained tasks go before this round's work."""
        for node, items in self.data_out.items():
            sends.setdefault(node, []).insert(0, (M.DATA, items))
        for node, tids in self.cancel_out.items():
            sends.setdefault(node, []).insert(0, (M.CANCEL, tids))
        self.data_out = {}
        self.cancel_out = {}

    def _flush(self, node: NodeHandle) -> None:
        """Write what the node takes; watch for writability only while bytes are left."""
        want = not node.flush()
        if not node.alive or want == node.wreg:
            return
        try:
            if node.wfd == node.rfd:
                self.sel.modify(node.rfd, selectors.EVENT_READ
                                | (selectors.EVENT_WRITE if want else 0), node)
            elif want:
                self.sel.register(node.wfd, selectors.EVENT_WRITE, node)
            else:
                self.sel.unregister(node.wfd)
            node.wreg = want
        except (KeyError, ValueError, OSError):
            pass

    # -- messages from nodes ----------------------------------------------------
    def _handle(self, node: NodeHandle, msgs: list[tuple[int, Any]], cbs: Callbacks) -> None:
        rt = self.rt
        for op, body in msgs:
            if op == M.RESULTS:
                inflight = node.inflight
                ok = M.OK
                for tid, status, outputs, error, timing in body:
                    task = inflight.pop(tid, None)
                    if task is None:
                        continue
                    node.used -= task.cus
                    node.mem_used -= task.mem
                    task.t_start, task.t_end = timing
                    if status == ok:
                        st = node.stager    # shared_fs: false nodes bring files back first
                        if st is None or not st.defer(task, outputs):
                            outcomes.task_done(rt, task, outputs, node, cbs)
                    else:
                        outcomes.task_failed(rt, task, status, error, node, cbs)
            elif op == M.LOG:
                self._logs(node, body)
            elif op == M.DATA:
                for did, payload in body:
                    fetch = self.fetches.pop(did, None)
                    if fetch is None:
                        continue
                    if payload is not None:
                        fetch.fut._payload = payload
                    for w in fetch.waiters:
                        if isinstance(w, threading.Event):
                            w.set()
                        elif w.state == T.READY:
                            rt.scheduler.push(w)
            elif op == M.SAMPLE:
                node.samples.append(body)
                if rt.bus.active:
                    rt.bus.emit(("sample", body["t"], 0, "", node.name, body))
            elif op == M.LEAVING:
                self._leaving(node, body.reason, body.task_ids)
            elif op == M.FATAL:
                self._lose(node, body, cbs)

    def _leaving(self, node: NodeHandle, reason: str, tids: list[int]) -> None:
        """The node drains: no new work goes there; what it did not start runs elsewhere."""
        rt = self.rt
        if node.leaving is None:
            node.leaving = reason
            log.warning("node %s is leaving (%s): its running tasks finish there, the others "
                        "go to other nodes", node.name, reason)
            if rt.bus.active:
                rt.bus.emit(("node_leaving", time.time(), 0, "", node.name, reason))
            rt._max_cus, rt._max_mem = rt.scheduler.capacity()
        for tid in tids:
            task = node.inflight.get(tid)
            if task is not None:
                outcomes.hand_back(rt, task, node, reason)

    def _logs(self, node: NodeHandle, entries: list[M.LogWire]) -> None:
        rt = self.rt
        if rt.echo_logs:
            for _, _, level, line in entries:
                stream = sys.stderr if level == "STDERR" else sys.stdout
                try:
                    stream.write(line + "\n")
                except (OSError, ValueError):
                    pass
        if rt.bus.active:
            rt.bus.emit_many(("log", t, tid, "", node.name, (level, line))
                             for tid, t, level, line in entries)

    def _lose(self, node: NodeHandle, reason: str, cbs: Callbacks) -> None:
        if not node.alive and not node.inflight:
            return
        try:
            self.sel.unregister(node.rfd)
        except (KeyError, ValueError):
            pass
        rt = self.rt
        for did, fetch in list(self.fetches.items()):
            fut = fetch.fut
            if fut._holders and node.name in fut._holders:
                fut._holders.discard(node.name)
                del self.fetches[did]               # ask another holder, or recompute
                for w in fetch.waiters:
                    self.request_fetch(fut, w)
        left = node.leaving is not None
        if left:
            reason = f"left: {node.leaving}"
        if node.job_id:
            reason = f"{reason} (slurm job {node.job_id})"
        if node.provider is not None:
            node.provider.explain_end(node)     # e.g. its Slurm state, once Slurm has it
        if rt.bus.active:
            rt.bus.emit(("node_left" if left else "node_lost", time.time(), 0, "", node.name,
                         reason))
        if not left or node.inflight:
            log.warning("node %s lost: %s", node.name, reason)
        outcomes.node_lost(rt, node, reason, cbs)

    # -- work to nodes -------------------------------------------------------------
    def _prepare(self, assignments: list[tuple[NodeHandle, Task]],
                 cbs: Callbacks) -> dict[NodeHandle, Frames]:
        """Turn assignments into frames per node (under the runtime lock)."""
        sends: dict[NodeHandle, Frames] = {}
        now = time.time()
        emit = self.rt.bus.emit if self.rt.bus.active else None
        last_spec: TaskSpec | None = None
        last_node: NodeHandle | None = None
        frames: Frames          # frames, batch and digest: set with last_spec (the first task)
        batch: list[M.TaskWire]
        digest: bytes
        chained: object         # its consumers (a list or None), or whether any output has some
        for node, task in assignments:
            spec = task.spec
            if spec is not last_spec or node is not last_node:
                last_spec, last_node = spec, node
                digest = spec.digest if spec.digest is not None else _digest(spec)
                known = sends.get(node)
                if known is None:
                    known = sends[node] = [[]]
                frames = known
                if digest not in node.funcs:
                    node.funcs.add(digest)
                    assert spec.payload is not None     # made with the digest
                    frames.insert(len(frames) - 1, (M.FUNC, M.Func(digest, spec.payload)))
                batch = frames[-1]          # this round's TASKS for the node: always last
            refs = task.refs
            wire_refs = None
            if refs:
                wire_refs = self._wire_refs(node, task, refs, frames)
                if wire_refs is None:       # waiting for data (from a node, or an upload)
                    task.state = T.READY
                    node.used -= task.cus
                    node.mem_used -= task.mem
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
            if chained:
                self._chain(task, node, assignments)
            if emit is not None and not (spec.stats_n and spec.stats_mean < MASTER_SHORT):
                # Short tasks get no event of their own: their end event carries
                # the dispatch time, and nobody could watch them run anyway.
                emit(("dispatched", now, task.id, spec.name, node.name, None))
        for frames in sends.values():
            batch = frames.pop()
            if batch:
                frames.append((M.TASKS, batch))
        return sends

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

    @staticmethod
    def _chainable(c: Task, node: NodeHandle) -> bool:
        spec = c.spec
        if spec.exclusive or spec.gang or c.lock_item is not None \
                or node.stager is not None or not c.reads:
            return False
        extra = 1 if not spec.stats_n or spec.stats_mean >= MASTER_SHORT else MASTER_DEEP
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
                    or p.state is not T.DISPATCHED:
                return False
        return True

    def _wire_refs(self, node: NodeHandle, task: Task, refs: list[TaskRef],
                   frames: Frames) -> list[M.RefWire] | None:
        if node.stager is not None:     # no shared filesystem: translate paths, stage inputs
            return node.stager.wire_refs(self, node, task, refs, frames)
        out: list[M.RefWire] = []
        push: list[M.DataItem] = []
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
            frames.insert(len(frames) - 1, (M.DATA, push))
        return out

    # -- StageHost: what a stager asks of the runtime ------------------------------------
    def ensure(self, node: NodeHandle, fut: Future, push: list[M.DataItem], task: Task) -> bool:
        """``node`` will have ``fut``'s value: pushed along in ``push``, made there (a
        chained producer), or first fetched from another node (False: the task waits)."""
        holders = fut._holders
        name = node.name
        if holders is not None and name in holders:
            return True
        if holders is None:
            self.remote.watch(fut)
        if fut._state is not FINISHED:        # chained: produced on this node
            fut._holders = {name} if holders is None else holders | {name}
            return True
        if fut._payload is not None:
            push.append((fut._did, fut._payload))
            if holders is None:
                fut._holders = {name}
            else:
                holders.add(name)
            return True
        if fut._exception is not None:
            raise RuntimeError(f"internal: task {task.id} reads a failed value")
        # The value lives on another node: fetch it through the master first.
        self.request_fetch(fut, task)
        return False

    def staged_in(self, task: Task, node: NodeHandle, futs: list[Future],
                  err: M.ErrorInfo | None) -> None:
        """A stager's thread: ``task``'s input files are on ``node`` (or failed to go)."""
        rt = self.rt
        cbs: Callbacks = []
        with rt.lock:
            if task.state == T.READY:
                if err is None:
                    for fut in futs:
                        fut._holders = (fut._holders or set()) | {node.name}
                    rt.scheduler.push(task)
                elif err.type_name == "NodeLost" or not node.alive:
                    task.excluded = (task.excluded or set()) | {node.name}
                    rt.scheduler.push(task)
                else:
                    task.t_start = task.t_end = time.time()
                    outcomes.task_failed(rt, task, M.ERROR, err, node, cbs)
        self._after_staging(cbs)

    def brought_back(self, task: Task, node: NodeHandle, outputs: list[M.Output],
                     files: list[Future], err: str | None) -> None:
        """A stager's thread: the files ``task`` wrote on ``node`` are here (or lost)."""
        rt = self.rt
        cbs: Callbacks = []
        with rt.lock:
            if err is None:
                for fut in files:
                    fut._holders = (fut._holders or set()) | {node.name}
                outcomes.task_done(rt, task, outputs, node, cbs)
            else:
                outcomes.task_failed(rt, task, M.LOST, M.ErrorInfo("NodeLost", err, "", None),
                                     node, cbs)
        self._after_staging(cbs)

    def _after_staging(self, cbs: Callbacks) -> None:
        self.wake()
        for fn, fut in cbs:
            try:
                fn(fut)
            except Exception:  # noqa: BLE001 - a user's callback
                traceback.print_exc()


def _digest(spec: TaskSpec) -> bytes:
    target = spec.wrapper or spec.func
    code = getattr(spec.func, "__code__", None)
    payload: bytes = cloudpickle.dumps((target, code.co_filename if code else None), P.PROTOCOL)
    spec.payload = payload
    spec.digest = digest = hashlib.blake2b(payload, digest_size=16).digest()
    return digest
