"""The loop thread: read from nodes, apply results, dispatch, write to nodes.

One thread does all node I/O through one ``selectors`` loop, so connections
need no locks and every write is non-blocking. Each round: read whatever
arrived, take the runtime lock once to apply all of it and to ask the
scheduler for assignments, release the lock, then encode and send one batch
per node.
"""
from __future__ import annotations

import logging
import os
import selectors
import sys
import threading
import time
import traceback
from functools import partial
from typing import TYPE_CHECKING, Any


from ...future import Future
from ...graph import task as T
from ...providers.handle import NodeHandle
from ...wire import messages as M
from ...wire import protocol as P
from ...wire.adoption import PING_EVERY
from .. import gctune
from ..rules import herecalls, outcomes
from ..rules.cancel import cancel_tasks
from ...events import Log, Memory, NodeGone, NodeJoin, Running, Sample, Usage
from .outbox import Frames, Outbox
from .pause import PauseWatch
from .preload import Preload
from .fetches import Fetches
from .relay import Relay
from .remote_values import EVERY_NODE, RemoteValues
from ...errors import RecordFailed
from ..recovery.recordfail import record_failed
from ..recovery.log import Chunk, completion_record
from ..state import Waiter   # (a type alias: at run time too)

log = logging.getLogger(__name__)

# Load samples a second the journal takes from all the nodes together, at most: a node's
# sample goes in when len(nodes) / SAMPLE_ROWS seconds passed since its last one there, so
# up to 200 nodes at the default 2 s every sample is kept, and 1,024 nodes do not write
# 512 rows a second (1.8 million an hour). Placement reads each node's latest sample.
SAMPLE_ROWS = 100.0
YIELD_EVERY = 128   # calls between a submitter's yields to the loop thread (Dispatcher.let_run)

if TYPE_CHECKING:
    from ...graph.task import Task
    from ..rules.outcomes import Callbacks
    from ..recovery.recovery import Recovery
    from ..state import RunState


class Dispatcher:
    """The loop thread's half of the runtime: node I/O, results in, work out.

    It is the runtime's :class:`~..state.Comm` (what the outcome rules ask of
    the nodes); what a round sends is made by its :class:`~.outbox.Outbox`.
    """

    def __init__(self, rt: RunState, recovery: Recovery, *, echo_logs: bool,
                 run_dir: str) -> None:
        """``rt``: the run's state, which this applies results to; ``recovery``: its resume
        log and keys, adoption and comebacks; ``echo_logs``: the tasks' output lines go to
        this process's stdout / stderr too; ``run_dir``: named in warnings."""
        self.rt = rt
        self.recovery = recovery
        self.echo_logs = echo_logs
        self.run_dir = run_dir
        self.sel = selectors.DefaultSelector()
        self._rfd, self._wfd = os.pipe()
        os.set_blocking(self._rfd, False)
        self._wake_pending = False
        self._round_done = threading.Event()   # set after every round (let_run)
        self.idle_room = 0     # slots idle after the last round (Scheduler.idle_room)
        self._held = 0         # calls a submitter made since it last gave the loop its turn
        self.ident: int | None = None          # the loop thread
        self.closing = False
        self.crashed: str | None = None
        self.fetches = Fetches(rt, self.wake)  # values on their way to the master
        self.data_out: dict[NodeHandle, list[M.DataItem]] = {}   # values for chained tasks
        self.cancel_out: dict[NodeHandle, list[int]] = {}        # task ids taken back
        self.ping_at = float("inf")     # when to tell the nodes the master is there (PING)
        self.remote = RemoteValues(self.wake)  # values on nodes: DROP when their future dies
        self.outbox = Outbox(rt, recovery, self)   # what each round sends: TASKS, FUNC, DATA
        self.relay = Relay(rt)                 # values copied node to node, in parts
        self.nodes: list[NodeHandle] = []
        self.joining: list[NodeHandle] = []    # nodes added while running (add_node)
        self.interrupt_grace: float | None = None  # to send INTERRUPT with (once)
        self.sample_every = 0.0                # s between a node's samples in the journal
        self.gone: set[NodeHandle] = set()     # nodes lost (each loss handled once: _lose)
        self.broken: list[NodeHandle] = []     # nodes a write to failed, to be lost
        self.pause = PauseWatch()              # the master stopped or frozen (pause.py)
        self.preload = Preload(self.wake)      # the script's modules, for executors to import

    # -- called from other threads -------------------------------------------
    def open(self, nodes: list[NodeHandle]) -> None:
        self.nodes = nodes
        self.sel.register(self._rfd, selectors.EVENT_READ, None)
        for n in nodes:
            self.sel.register(n.rfd, selectors.EVENT_READ, n)
            n.out.attach(self.sel, n)
        self.sample_every = len(nodes) / SAMPLE_ROWS
        if self.recovery.adoptable:         # agents outlive a lost master: they hear
            self.ping_at = time.time()      # from it (wire.adoption)
        self.preload.begin()

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
            n.out.attach(self.sel, n)
            self.nodes.append(n)
            if rt.scheduler.nodes is not self.nodes:
                rt.scheduler.nodes.append(n)
            if n.walltime_end is not None:
                rt.scheduler.walltimes = True      # check job ends before placing
            away = n.info.pop("rejoined", None)
            if away is not None:            # a lost node back in the run (recovery/comeback.py)
                self.recovery.comebacks.back(rt, self.remote, n, float(away))
            rt.capacity_changed()
            self.preload.node_joined()
            self.sample_every = len(self.nodes) / SAMPLE_ROWS
            if rt.bus.active:
                rt.bus.emit(NodeJoin("node_join", time.time(), 0, "", n.name,
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

        While nodes sit idle after the loop's last round (``idle_room``: the
        slots of a cluster whose least loaded node has nothing), the submitter
        goes on until its calls can fill them all, then waits for the round
        that sends them: one burst to every idle node. Handing the lock over
        every 128 calls instead cost each hand-over a round that read the
        STARTED frames of the nodes just served before sending to the next,
        and on a loaded machine a wait for the scheduler to run the other
        thread: on a loaded 2-core machine the round that placed the first
        task of the 784th of 1,024 idle nodes began 54 ms after the first
        call (median), 30 ms with one burst.
        """
        if not self._wake_pending or self.closing or self.crashed \
                or threading.get_ident() == self.ident:
            return
        held = self._held = self._held + YIELD_EVERY
        room = self.idle_room
        if held < room:
            return                  # not enough calls yet to fill the idle nodes
        self._held = 0
        ev = self._round_done
        ev.clear()
        if self._wake_pending:      # (a burst's round writes to every node it fills)
            ev.wait(min(0.02, 0.005 + 1e-5 * room))

    def interrupt(self, grace: float) -> None:
        """Under the run's lock: the run is interrupted; every node is told this round
        (INTERRUPT: running tasks get ``grace`` seconds before they are killed)."""
        self.interrupt_grace = grace
        self.wake()

    def close(self) -> None:
        self.preload.end()
        self.closing = True
        self._wake_pending = False
        self.wake()

    # -- Comm: what the outcome rules ask of the nodes (runtime lock held) ----------------
    def request_fetch(self, fut: Future, waiter: Waiter) -> None:
        """Get ``fut``'s value from a node holding it."""
        self.fetches.request(fut, waiter)

    def drop_fetches(self) -> list[Waiter]:
        return self.fetches.drop()

    def watch_remote(self, fut: Future, node: str | None = None) -> None:
        self.remote.watch(fut, node)

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
            self._say_shutdown()
        except BaseException:  # report instead of hanging every waiter
            self.crashed = traceback.format_exc()
            log.error("internal error in the runtime loop:\n%s", self.crashed)
        self.fetches.close()

    def _ping(self) -> None:
        """The master is there: a PING to every node (an agent of an adoptable run takes a
        master it has not heard from for its heartbeat time-out for lost)."""
        self.ping_at = time.time() + PING_EVERY
        frame = P.encode(M.PING, None)
        for node in self.nodes:
            if node.alive:
                node.out.queue(frame)
                if not node.out.watching:
                    self._write(node)

    def _write(self, node: NodeHandle) -> None:
        """Loop thread: flush what waits for ``node``; a broken stream has it lost at the
        next round (its agent may have taken this master for lost, or exited)."""
        if not node.flush():
            self.broken.append(node)
            self.wake()

    def _say_shutdown(self, wait: float = 2.0) -> None:
        """The run ends: SHUTDOWN to every node, so that an agent of an adoptable run exits
        instead of waiting for a new master (agent/orphan.py); at most ``wait`` seconds."""
        frame = P.encode(M.SHUTDOWN, None)
        nodes = [n for n in self.nodes if n.alive]
        for node in nodes:
            node.out.queue(frame)
        deadline = time.time() + wait
        while nodes and time.time() < deadline:
            for node in nodes:
                node.flush()
            nodes = [n for n in nodes if n.alive and n.out.pending()]
            if nodes:
                time.sleep(0.005)

    def _loop(self) -> None:
        rt = self.rt
        recovery = self.recovery
        comebacks = recovery.comebacks
        sel = self.sel
        lock = rt.lock
        gcwatch = gctune.WATCH
        # from the loop's first round: the nodes' start before it (an install on an SSH
        # host, a Slurm allocation's wait) is no pause
        pause = self.pause = PauseWatch()
        while not self.closing:
            events = sel.select(1.0)
            paused = pause.tick()
            arrived = []
            lost, self.broken = self.broken, []
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
                if mask & selectors.EVENT_WRITE and not node.flush():
                    lost.append(node)
            cbs: Callbacks = []
            with lock:
                self._wake_pending = False
                if paused:                      # the master was stopped: said once
                    pause.say(paused, rt.bus, recovery.adoptable)
                if self.joining:
                    self._join()
                for node, msgs in arrived:
                    self._handle(node, msgs, cbs)
                for node in lost:
                    self._lose(node, node.lost_reason or "its connection closed", cbs)
                if rt.dead and rt.scheduler.ready:      # nothing may start any more
                    outcomes.fail_everything(rt, RuntimeError(rt.dead), cbs)
                sends = self.outbox.prepare(rt.scheduler.assign(), cbs) \
                    if rt.scheduler.ready and not rt.interrupting else {}
                self.idle_room = rt.scheduler.idle_room()    # (let_run: bursts to fill
                self._held = 0                                # idle nodes)
                fetches = self.fetches.take_queue()
                if self.data_out or self.cancel_out:
                    self._early_frames(sends)
                pulls = self.relay.pulls() if self.relay else None
                nest = rt.nesting
                if nest is not None:            # tasks' calls of tasks (runtime/nesting.py)
                    if nest.doomed:             # a failed parent's children
                        for children, why in nest.take_doomed():
                            cancel_tasks(rt, children, why, cbs)
                    if nest.here_out:           # calls run in their parent's executor
                        herecalls.take(rt, nest.here_out, cbs, self._logs)
                    if nest.out:
                        for node, answers in nest.take().items():
                            if node.alive:
                                node.out.queue_parts(P.encode_parts(M.NESTED, answers))
                                sends.setdefault(node, [])
                adoption = recovery.adoption    # claims of tasks adopted agents kept
                if adoption is not None and adoption.pending:
                    for node, claims in adoption.frames():
                        node.out.queue(P.encode(M.ADOPT, claims))
                        sends.setdefault(node, [])
                if comebacks.frames:            # nodes back: their kept tasks, their values
                    for node, op, body in comebacks.take_frames():
                        node.out.queue(P.encode(op, body))
                        sends.setdefault(node, [])
            if self.relay.forward:              # parts of copies go before the tasks that
                for node, parts in self.relay.take_forward():     # wait for them
                    node.out.queue_parts(parts)
                    sends.setdefault(node, [])
            if pulls:
                for node, wanted in pulls.items():
                    node.out.queue(P.encode(M.PULL, wanted))
                    sends.setdefault(node, [])
            for node, fut in fetches:
                node.out.queue(P.encode(M.FETCH, [fut._did]))
                sends.setdefault(node, [])
            if self.preload.changed:    # the script's modules: before the round's work
                for node, names in self.preload.frames(self.nodes):
                    sends.setdefault(node, []).insert(0, (M.PRELOAD, names))
            if self.interrupt_grace is not None:     # the run is interrupted (once)
                frame = P.encode(M.INTERRUPT, self.interrupt_grace)
                self.interrupt_grace = None
                for node in self.nodes:
                    if node.alive:
                        node.out.queue(frame)
                        sends.setdefault(node, [])
            dropped = self.remote.take()
            if dropped:
                self._drop(dropped, sends)
            for node, frames in sends.items():
                out = node.out
                for op, body in frames:
                    if op == M.DATA:        # values: their buffers are not copied
                        out.queue_parts(P.encode_parts(op, body))
                    else:
                        out.queue(P.encode(op, body))
                # (a node waiting for room is written when it has it; a broken stream:
                if not out.watching and not node.flush():   # the node lost next round)
                    self.broken.append(node)
                    self.wake()
            if time.time() >= self.ping_at:
                self._ping()
            resume_log = recovery.log
            if resume_log is not None and resume_log.pending:
                resume_log.tick()
            if gcwatch.on:
                gctune.tick()           # cycles of the program, by memory growth
            self._round_done.set()
            for fn, fut in cbs:
                try:
                    fn(fut)
                except Exception:
                    traceback.print_exc()

    def _drop(self, dropped: dict[str, list[int]], sends: dict[NodeHandle, Frames]) -> None:
        """DROP the values nobody can use any more, on the nodes that may hold them."""
        everywhere = dropped.pop(EVERY_NODE, None)
        if everywhere:
            frame = P.encode(M.DROP, everywhere)
            for node in self.nodes:
                if node.alive:
                    node.out.queue(frame)
                    sends.setdefault(node, [])
        named = self.rt.scheduler.named
        for name, dids in dropped.items():
            holder = named(name)
            if holder is not None and holder.alive:
                holder.out.queue(P.encode(M.DROP, dids))
                sends.setdefault(holder, [])

    def _early_frames(self, sends: dict[NodeHandle, Frames]) -> None:
        """Data and cancellations for chained tasks go before this round's work."""
        for node, items in self.data_out.items():
            sends.setdefault(node, []).insert(0, (M.DATA, items))
        for node, tids in self.cancel_out.items():
            sends.setdefault(node, []).insert(0, (M.CANCEL, tids))
        self.data_out = {}
        self.cancel_out = {}

    # -- messages from nodes ----------------------------------------------------
    def _handle(self, node: NodeHandle, msgs: list[tuple[int, Any]], cbs: Callbacks) -> None:
        rt = self.rt
        for op, body in msgs:
            if op == M.RESULTS:
                ok = M.OK
                keys = self.recovery.keys
                if keys is not None and keys.keyed and node.stager is None:
                    self._log_completions(node.inflight, body, cbs)
                release = node.release      # the task leaves inflight, its slots come back
                for tid, status, outputs, error, timing in body:
                    task = release(tid)
                    if task is None:
                        continue
                    try:
                        task.t_start, task.t_end = timing
                    except ValueError:   # measured on the node: (start, end, cpu, peak, io)
                        self._usage(task, node, timing)
                    if status == ok:
                        st = node.stager    # shared_fs: false nodes bring files back first
                        if st is None or not st.defer(task, outputs):
                            outcomes.task_done(rt, task, outputs, node, cbs)
                    else:
                        outcomes.task_failed(rt, task, status, error, node, cbs)
                rt.scheduler.freed(node)     # once per frame: its place among the nodes
            elif op == M.STARTED:     # after RESULTS: a chained task starts once its
                self._started(node, body)   # producer's result is in (npending 0)
            elif op == M.LOG:
                self._logs(node, body)
            elif op == M.DATA:      # values fetched (kept in the resume log too)
                keep = partial(self._keep_fetched, cbs) if self.recovery.log else None
                self.fetches.keep_in(self.recovery.log)
                for did, payload in body:
                    self.fetches.arrived(did, payload, keep)
            elif op == M.SAMPLE:
                node.sample = body
                if rt.bus.active:
                    t = body["t"]
                    if t - node.sample_logged >= self.sample_every * 0.9:
                        node.sample_logged = t
                        rt.bus.emit(Sample("sample", t, 0, "", node.name, body))
            elif op == M.LEAVING:
                self._leaving(node, body.reason, body.task_ids)
            elif op == M.MEMORY:
                self._memory(node, body)
            elif op == M.PART:
                self.relay.parts(node, body)
            elif op == M.NEST:          # a running task's calls and waits
                rt.nested().arrived(node, body)
            elif op == M.FATAL:
                self._lose(node, body, cbs)

    def _log_completions(self, inflight: dict[int, Task], results: list[M.ResultWire],
                         cbs: Callbacks) -> None:
        """Resumable runs with keyed calls: the tasks with a key that ended well, in the
        resume log before anything is done with their results (one write for the frame;
        runtime/recovery/log.py). Plain calls are kept by the bus thread (ResumeLog.ended)."""
        records: list[tuple[Any, ...]] = []
        payloads: list[Chunk] = []
        ok = M.OK
        for tid, status, outputs, _, _ in results:
            if status == ok and outputs is not None:
                task = inflight.get(tid)
                if task is not None and task.key is not None:
                    r = completion_record(task, outputs, payloads)
                    if r is not None:
                        records.append(r)
        try:        # (those that failed keep the keyed count above 0: fine)
            self.recovery.keep_completions(records, payloads)
        except RecordFailed as exc:     # the results stand; the run stops and fails
            record_failed(self.rt, str(exc), cbs)

    def _leaving(self, node: NodeHandle, reason: str, tids: list[int]) -> None:
        """The node drains: no new work goes there; what it did not start runs elsewhere."""
        rt = self.rt
        if node.leaving is None:
            node.leaving = reason
            if not rt.interrupting:
                log.warning("node %s is leaving (%s): its running tasks finish there, the "
                            "others go to other nodes", node.name, reason)
            if rt.bus.active:
                rt.bus.emit(NodeGone("node_leaving", time.time(), 0, "", node.name, reason))
            rt.capacity_changed()
        for tid in tids:
            task = node.inflight.get(tid)
            if task is not None:
                outcomes.hand_back(rt, task, node, reason)

    def _usage(self, task: Task, node: NodeHandle, timing: M.Timing) -> None:
        """A measured task's times, and its CPU time, peak memory and I/O for the journal."""
        task.t_start, task.t_end, cpu, peak, rd, wr, how = timing      # type: ignore[misc]
        bus = self.rt.bus
        if bus.active:
            bus.emit(Usage("usage", task.t_end, task.id, task.spec.name, node.name,
                           (cpu, peak, rd, wr, how)))

    def _memory(self, node: NodeHandle, report: M.MemoryReport) -> None:
        """The node spilled or read back values, or paused or resumed (agent.memory)."""
        rt = self.rt
        node.memory = report
        if report.paused != node.paused:
            node.paused = report.paused
            rt.scheduler.paused = any(n.paused for n in rt.scheduler.nodes)
            log.info("node %s %s: %.0f MB resident", node.name,
                     "paused (above its memory pause mark)" if node.paused else "resumed",
                     report.rss / 1e6)
        for what, code, free in report.events:
            if what == "full":          # a spill failed: values stay in memory, over budget
                log.warning("node %s could not spill values to its disk (%s): the disk holding "
                            "the run's directory %s has %s bytes free there; they stay in "
                            "memory, above the node's memory budget. Free space on that disk, "
                            "or raise --memory-budget", node.name, os.strerror(code) if code
                            else "error", self.run_dir, free if free >= 0 else "?")
        if rt.bus.active:       # plain values: the journal's process loads no taskflow class
            rt.bus.emit(Memory("memory", report.t, 0, "", node.name,
                               (report.rss, report.held, report.spilled, report.paused,
                                [tuple(e) for e in report.events])))

    def _keep_fetched(self, cbs: Callbacks, did: int, payload: M.Payload) -> None:
        """A value fetched to the master, in the resume log before anyone reads it."""
        assert self.recovery.log is not None
        try:
            self.recovery.log.fetched(did, payload)
        except RecordFailed as exc:
            record_failed(self.rt, str(exc), cbs)

    def _started(self, node: NodeHandle, entries: list[tuple[int, float]]) -> None:
        """Tasks that began to run on ``node`` (not sent for known-short functions)."""
        bus = self.rt.bus
        inflight = node.inflight
        running = T.RUNNING
        for tid, t in entries:
            task = inflight.get(tid)
            if task is not None and task.state is T.DISPATCHED and task.npending == 0:
                task.state = running
                task.t_start = t
                if bus.active:
                    bus.emit(Running("running", t, tid, task.spec.name, node.name, None))

    def _logs(self, node: NodeHandle, entries: list[M.LogWire]) -> None:
        rt = self.rt
        if self.echo_logs:
            for tid, _, level, line in entries:
                # a program's lines say whose they are (many run at once, and their words
                # are not the script's); a Python task's print stays as the user wrote it
                task = node.inflight.get(tid)
                prefix = f"[{task.spec.name} {tid}] " if task and task.spec.program else ""
                try:
                    (sys.stderr if level == "STDERR" else sys.stdout).write(prefix + line + "\n")
                except (OSError, ValueError):
                    pass
        if rt.bus.active:
            rt.bus.emit_many(Log("log", t, tid, "", node.name, (level, line))
                             for tid, t, level, line in entries)

    def _lose(self, node: NodeHandle, reason: str, cbs: Callbacks) -> None:
        """``node``'s stream ended or broke (or it sent FATAL): its descriptor is no longer
        watched, its tasks go elsewhere (or wait for its return, or the run ends with the
        reason). Once per node, however many ways its end was seen (a write that failed,
        then the read's end of file)."""
        if node in self.gone:
            return
        self.gone.add(node)
        try:
            self.sel.unregister(node.rfd)
        except (KeyError, ValueError):
            pass
        rt = self.rt
        self.relay.node_lost(node)
        self.fetches.node_lost(node)            # ask another holder, or recompute
        left = node.leaving is not None
        if left:
            reason = f"left: {node.leaving}"
        if node.job_id:
            reason = f"{reason} (slurm job {node.job_id})"
        if node.provider is not None:
            node.provider.explain_end(node)     # e.g. its Slurm state, once Slurm has it
        if rt.bus.active:
            rt.bus.emit(NodeGone("node_left" if left else "node_lost", time.time(), 0, "",
                                 node.name, reason))
        if not left or node.inflight:
            log.warning("node %s lost: %s", node.name, reason)
        if self.recovery.adoptable and not rt.interrupting:   # its agent may keep them
            self.recovery.comebacks.node_lost(node, list(node.inflight.values()))
            if not left and not self.closing and node.provider is not None:
                node.provider.link_lost(node)   # (first: the run sees the loss with the
        outcomes.node_lost(rt, node, reason, cbs)  # node coming back: nodes_coming)
