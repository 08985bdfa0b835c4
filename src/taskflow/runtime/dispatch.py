"""The loop thread: read from nodes, apply results, dispatch, write to nodes.

One thread does all node I/O through one ``selectors`` loop, so connections
need no locks and every write is non-blocking. Each round: read whatever
arrived, take the runtime lock once to apply all of it and to ask the
scheduler for assignments, release the lock, then encode and send one batch
per node.
"""
from __future__ import annotations

import hashlib
import os
import selectors
import sys
import threading
import time
import traceback
from typing import Any

import cloudpickle

from ..future import FINISHED
from ..graph import task as T
from ..wire import protocol as P
from . import gang, lineage, outcomes
from .remote_values import RemoteValues


class Dispatcher:
    def __init__(self, rt: Any) -> None:
        self.rt = rt
        self.sel = selectors.DefaultSelector()
        self._rfd, self._wfd = os.pipe()
        os.set_blocking(self._rfd, False)
        self._wake_pending = False
        self._round_done = threading.Event()   # set after every round (let_run)
        self.ident: int | None = None          # the loop thread
        self.closing = False
        self.crashed: str | None = None
        self.fetches: dict[int, list] = {}     # did -> [Event or Task waiting for the data]
        self.fetch_queue: list = []           # (node, did) to request
        self.data_out: dict = {}              # node -> [(did, payload)] for chained tasks
        self.cancel_out: dict = {}            # node -> [task id] taken back
        self.remote = RemoteValues(self.wake)  # values on nodes: DROP when their future dies
        self.nodes: list = []
        self.joining: list = []               # nodes added while running (add_node)

    # -- called from other threads -------------------------------------------
    def open(self, nodes: list) -> None:
        self.nodes = nodes
        self.sel.register(self._rfd, selectors.EVENT_READ, None)
        for n in nodes:
            self.sel.register(n.rfd, selectors.EVENT_READ, n)

    def add_node(self, node: Any) -> None:
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
            rt._max_cus, rt._max_mem = rt.scheduler.capacity()
            if rt.bus.active:
                rt.bus.emit(("node_join", time.time(), 0, "", n.name,
                             dict(n.info, slots=n.slots, job_id=getattr(n, "job_id", None))))

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

    def request_fetch(self, fut: Any, waiter: Any) -> None:
        """Under the runtime lock: get ``fut``'s value from a node holding it."""
        did = fut._did
        waiting = self.fetches.get(did)
        if waiting is None:
            self.fetches[did] = [fut, waiter]
            node = next((n for n in self.nodes if n.alive and n.name in (fut._holders or ())),
                        None)
            if node is None:
                del self.fetches[did]
                if lineage.recompute(self.rt, fut, waiter):   # lost with its node: rerun
                    self.wake()
                    return
                if hasattr(waiter, "set"):
                    waiter.set()
                return
            self.fetch_queue.append((node, fut))
        else:
            waiting.append(waiter)
        self.wake()

    # -- the loop ------------------------------------------------------------
    def loop(self) -> None:
        self.ident = threading.get_ident()
        try:
            self._loop()
        except BaseException:  # report instead of hanging every waiter
            self.crashed = traceback.format_exc()
            print(f"taskflow: internal error in the runtime loop:\n{self.crashed}", file=sys.stderr)

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
            cbs: list = []
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
                node.queue(P.encode((P.FETCH, [fut._did])))
                sends.setdefault(node, [])
            dropped = self.remote.take()
            if dropped:
                frame = P.encode((P.DROP, dropped))
                for node in self.nodes:
                    if node.alive:
                        node.queue(frame)
                        sends.setdefault(node, [])
            for node, frames in sends.items():
                for f in frames:
                    node.queue(P.encode(f) if type(f) is tuple else f)
            for node in self.nodes:
                if node.out or node.wreg:
                    self._flush(node)
            self._round_done.set()
            for fn, fut in cbs:
                try:
                    fn(fut)
                except Exception:
                    traceback.print_exc()

    def _early_frames(self, sends: dict) -> None:
        """Data and cancellations for chained tasks go before this round's work."""
        for node, items in self.data_out.items():
            sends.setdefault(node, []).insert(0, (P.DATA, items))
        for node, tids in self.cancel_out.items():
            sends.setdefault(node, []).insert(0, (P.CANCEL, tids))
        self.data_out = {}
        self.cancel_out = {}

    def _flush(self, node: Any) -> None:
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
    def _handle(self, node: Any, msgs: list, cbs: list) -> None:
        rt = self.rt
        for msg in msgs:
            op = msg[0]
            if op == P.RESULTS:
                inflight = node.inflight
                for res in msg[1]:
                    task = inflight.pop(res[0], None)
                    if task is None:
                        continue
                    node.used -= task.cus
                    node.mem_used -= task.mem
                    task.t_start, task.t_end = res[4]
                    if res[1] == P.OK:
                        st = node.stager    # shared_fs: false nodes bring files back first
                        if st is None or not st.defer(task, res[2]):
                            outcomes.task_done(rt, task, res[2], node, cbs)
                    else:
                        outcomes.task_failed(rt, task, res[1], res[3], node, cbs)
            elif op == P.LOG:
                self._logs(node, msg[1])
            elif op == P.DATA:
                for did, payload in msg[1]:
                    waiting = self.fetches.pop(did, None)
                    if not waiting:
                        continue
                    fut = waiting[0]
                    if payload is not None:
                        fut._payload = payload
                    for w in waiting[1:]:
                        if hasattr(w, "set"):
                            w.set()
                        elif w.state == T.READY:
                            rt.scheduler.push(w)
            elif op == P.SAMPLE:
                node.samples.append(msg[1])
                if rt.bus.active:
                    rt.bus.emit(("sample", msg[1]["t"], 0, "", node.name, msg[1]))
            elif op == P.LEAVING:
                self._leaving(node, msg[1], msg[2])
            elif op == P.FATAL:
                self._lose(node, msg[1], cbs)

    def _leaving(self, node: Any, reason: str, tids: list) -> None:
        """The node drains: no new work goes there; what it did not start runs elsewhere."""
        rt = self.rt
        if node.leaving is None:
            node.leaving = reason
            print(f"taskflow: node {node.name} is leaving ({reason}): its running tasks "
                  f"finish there, the others go to other nodes", file=sys.stderr)
            if rt.bus.active:
                rt.bus.emit(("node_leaving", time.time(), 0, "", node.name, reason))
            rt._max_cus, rt._max_mem = rt.scheduler.capacity()
        for tid in tids:
            task = node.inflight.get(tid)
            if task is not None:
                outcomes.hand_back(rt, task, node, reason)

    def _logs(self, node: Any, entries: list) -> None:
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

    def _lose(self, node: Any, reason: str, cbs: list) -> None:
        if not node.alive and not node.inflight:
            return
        try:
            self.sel.unregister(node.rfd)
        except (KeyError, ValueError):
            pass
        rt = self.rt
        for did, waiting in list(self.fetches.items()):
            fut = waiting[0]
            if fut._holders and node.name in fut._holders:
                fut._holders.discard(node.name)
                del self.fetches[did]               # ask another holder, or recompute
                for w in waiting[1:]:
                    self.request_fetch(fut, w)
        left = node.leaving is not None
        if left:
            reason = f"left: {node.leaving}"
        if getattr(node, "job_id", None):
            reason = f"{reason} (slurm job {node.job_id})"
            explain = getattr(node.provider, "explain_end", None)
            if explain is not None:
                explain(node)            # its Slurm state, once Slurm has it
        if rt.bus.active:
            rt.bus.emit(("node_left" if left else "node_lost", time.time(), 0, "", node.name,
                         reason))
        if not left or node.inflight:
            print(f"taskflow: node {node.name} lost: {reason}", file=sys.stderr)
        outcomes.node_lost(rt, node, reason, cbs)

    # -- work to nodes -------------------------------------------------------------
    def _prepare(self, assignments: list, cbs: list) -> dict:
        """Turn assignments into frames per node (under the runtime lock)."""
        sends: dict = {}
        now = time.time()
        emit = self.rt.bus.emit if self.rt.bus.active else None
        last_spec = last_node = batch = None
        for node, task in assignments:
            spec = task.spec
            if spec is not last_spec or node is not last_node:
                last_spec, last_node = spec, node
                if spec.digest is None:
                    _digest(spec)
                frames = sends.get(node)
                if frames is None:
                    frames = sends[node] = [[]]
                if spec.digest not in node.funcs:
                    node.funcs.add(spec.digest)
                    frames.insert(len(frames) - 1, (P.FUNC, spec.digest, spec.payload))
                batch = frames[-1]          # this round's TASKS for the node: always last
            refs = task.refs
            wire_refs = None
            if refs:
                wire_refs = self._wire_refs(node, task, refs, frames)
                if wire_refs is None:       # waiting for data from another node
                    node.used -= task.cus
                    node.mem_used -= task.mem
                    if self.rt.scheduler.gangs:
                        gang.release(self.rt.scheduler, task)
                    continue
            inouts = task.inouts
            wire_inouts = [(e[0], e[1], e[2]) for e in inouts] if inouts else None
            outs = task.outputs
            if inouts:
                outs = task.all_outputs()
            outdids = [outs[0]._did] if len(outs) == 1 else [f._did for f in outs]
            batch.append((task.id, spec.digest, task.argv, wire_refs, task.kwargs, spec.nout,
                          wire_inouts, task.options, task.prio, task.cus, spec.exclusive,
                          outdids))
            task.state = T.DISPATCHED
            task.node = node
            task.t_dispatch = now
            node.inflight[task.id] = task
            if outs[0]._consumers if len(outs) == 1 else any(f._consumers for f in outs):
                self._chain(task, node, assignments)
            if emit is not None and not (spec.stats_n and spec.stats_mean < 0.005):
                # Short tasks get no event of their own: their end event carries
                # the dispatch time, and nobody could watch them run anyway.
                emit(("dispatched", now, task.id, spec.name, node.name, None))
        for node, frames in sends.items():
            batch = frames.pop()
            if batch:
                frames.append((P.TASKS, batch))
        return sends

    def _chain(self, task: Any, node: Any, assignments: list) -> None:
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
    def _chainable(c: Any, node: Any) -> bool:
        spec = c.spec
        if spec.exclusive or getattr(spec, "gang", False) or c.lock_item is not None \
                or node.stager is not None or not c.reads:
            return False
        extra = 1 if not spec.stats_n or spec.stats_mean >= 0.005 else 256
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

    def push_data(self, node: Any, fut: Any) -> None:
        """Under the runtime lock: send a value to a node that waits for it."""
        self.data_out.setdefault(node, []).append((fut._did, fut._payload))

    def cancel_on(self, node: Any, tid: int) -> None:
        self.cancel_out.setdefault(node, []).append(tid)

    def _wire_refs(self, node: Any, task: Any, refs: list, frames: list) -> list | None:
        if node.stager is not None:     # no shared filesystem: translate paths, stage inputs
            return node.stager.wire_refs(self, node, task, refs, frames)
        out = []
        push = []
        for path, kind, obj in refs:
            if kind == "r":
                if not self._ensure(node, obj, push, task):
                    return None
                out.append((path, "r", obj._did))
            elif kind == "p":
                blob, futs = obj
                for f in futs:
                    if not self._ensure(node, f, push, task):
                        return None
                out.append((path, "p", (blob, [f._did for f in futs])))
            elif kind == "fio" or kind == "dio":
                out.append((path, kind, (obj[0]._path, obj[1]._path)))
            else:
                out.append((path, kind, obj._path))
        if push:
            frames.insert(len(frames) - 1, (P.DATA, push))
        return out

    def _ensure(self, node: Any, fut: Any, push: list, task: Any) -> bool:
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
        task.state = T.READY
        return False


def _digest(spec: Any) -> None:
    target = getattr(spec, "wrapper", None) or spec.func
    code = getattr(spec.func, "__code__", None)
    payload = cloudpickle.dumps((target, code.co_filename if code else None), P.PROTOCOL)
    spec.payload = payload
    spec.digest = hashlib.blake2b(payload, digest_size=16).digest()
