"""The node agent: one per host, the same whatever transport reached it.

It speaks the framed protocol (:mod:`taskflow.wire`) with its master over one
stream (:mod:`.link`; a later master after a lost one: :meth:`Agent.attach`,
:mod:`.orphan`), forks one executor per slot (:mod:`.pool`), keeps
a queue of the work it was sent (:mod:`.workqueue`), places it on executors
(:mod:`.placement`), holds tasks sent before their inputs exist
(:mod:`.chained`), holds data that stays on the node, enforces time-outs,
and reports results, logs and resource samples. It is single-threaded (a
``selectors`` loop), so forking a fresh executor is safe at any time.
"""
from __future__ import annotations

import os
import selectors
import signal
import socket
import sys
import time
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..context import keep_calls_inline, private_dir, total_memory_gb
from ..errors import ProtocolError
from ..wire import budget, messages as M
from ..wire import protocol as P
from ..wire.adoption import PING_EVERY
from ..wire.channel import Channel, FdChannel
from ..wire.thresholds import RUNNING_SIGNAL_MIN
from .chained import Chaining
from .executor import diskroom, loglines
from .executor.taskenv import compss_environment
from .holding import INLINE_MAX, Holding
from .link import MasterLink, say
from .memory import NodeMemory
from .orphan import Orphan
from .placement import Placement
from .pool import Executor, Pool, kill_group
from .recent import Recent
from .redial import Redial
from .state import NodeState
from .stops import Stops
from .tracking import Tracker
from .workqueue import WorkQueue

if TYPE_CHECKING:
    from .sampler import Sampler

# bytes waiting for the master above which the executors are not read (their results and
# output lines wait in their pipes: the node holds no more than this of them), and below
# which they are read again
OUT_HIGH = 8 * loglines.ROW_MAX
OUT_LOW = 2 * loglines.ROW_MAX

class Agent:
    def __init__(self, rfd: int, wfd: int, channel: Channel | None = None) -> None:
        self.sel = selectors.DefaultSelector()
        # the first master's stream (``channel``, else the descriptors), until its HELLO
        self.link = MasterLink(channel if channel is not None else FdChannel(rfd, wfd))
        self._term_r, self._term_w = os.pipe()
        self.state = NodeState()
        self.queue = WorkQueue()
        self.pool = Pool(self.sel, [self._term_r, self._term_w])    # (+ each master's: attach)
        self.placement = Placement(self.state, self.queue, self.pool)
        self.chaining = Chaining(self.state, self.queue, self.placement)
        self.placement.chaining = self.chaining
        self.holding = Holding(self.state, self.queue, self.chaining, self._send_parts)
        self.results: list[M.ResultWire] = []     # to the master at the end of the round
        self.logs: list[M.LogWire] = []
        self.cancelled: dict[int, M.TaskMsg] = {}   # queued behind one, cancelled (stops)
        self.stops = Stops(self.state, self.queue, self.pool, self.placement, self.chaining,
                           self.cancelled)
        self.slots = 1
        self.sampler: Sampler | None = None
        self._sample_interval = 2.0
        self._sampler_at = 0.0
        self.running = True
        self.name = socket.gethostname()
        self.leaving: str | None = None   # why the agent drains (SIGTERM, idle): no new work
        self.idle_exit: float | None = None
        self.last_busy = time.time()
        self.memory: NodeMemory | None = None     # the budget (set at the handshake)
        self.tracker: Tracker | None = None       # what tasks start (set at the handshake)
        self.told_to_stop = False                 # SHUTDOWN: the master ends the run
        self.orphan: Orphan | None = None         # the master was lost (agent.orphan)
        self.redial: Redial | None = None         # a dial-back agent dials a resumed master

    # -- set-up: the first master, and every later one ----------------------
    def handshake(self) -> None:
        """Wait for the first master's HELLO on the agent's stream, and take that master."""
        chan = self.link.chan
        op, body = P.read_frame_blocking(chan)
        if op != M.HELLO:
            raise ProtocolError("expected HELLO")
        hello: M.Hello = body           # (a TypedDict: its keys are checked by mypy)
        self.attach(chan, hello)

    def attach(self, chan: Channel, hello: M.Hello) -> None:
        """Take the master that sent ``hello`` on ``chan`` as this agent's, and answer READY.

        The first master (:meth:`handshake`) also sets the agent up: the run's
        paths, its environment, the executors. A later one, after the first
        was lost (:mod:`.orphan`: a resumed master adopting the agent, or its own
        master back after a cut link), is told what the agent kept for it.
        """
        orphan = self.orphan
        same = self.link.same_run(hello)      # (its own master back: the run's values stay)
        link = self.link = MasterLink(chan, hello, self.link)
        self.pool.own(*link.fds)              # executors forked from now on close it
        self.redial = Redial.named(hello) if link.grace else None
        self.pool.nested_here(bool(hello.get("nested_here")))     # (a resumed master's: off)
        info = self._set_up(hello) if orphan is None else self._ready_again(orphan, same)
        P.write_all(chan, P.encode(M.READY, info))
        link.watch(self.sel)
        if orphan is None:
            self._arm()
        else:
            say(f"taskflow.node: {self.name}: "
                f"{'its master is back' if same else 'adopted by a resumed master'} "
                f"({len(info.get('adoptable', ()))} task(s) kept for it)")

    def _set_up(self, hello: M.Hello) -> M.Ready:
        """The first master's HELLO: the run's paths and environment, the memory budget,
        the executors; the READY that answers it."""
        for p in reversed(hello.get("sys_path", [])):
            if p not in sys.path:
                sys.path.insert(0, p)
        if hello.get("cwd") and os.path.isdir(hello["cwd"]):
            os.chdir(hello["cwd"])
        if hello.get("data_dir"):         # file versions of the run: user-only on this node too
            private_dir(hello["data_dir"])
        os.environ.update(hello.get("env", {}))
        self.name = self.holding.name = hello.get("name", self.name)
        self.slots = int(hello.get("slots") or os.cpu_count() or 1)
        self.idle_exit = hello.get("idle_exit")
        silence = self.link.silence
        self.recent = Recent(silence + 2 * PING_EVERY if silence else 0.0)  # a cut link
        store = self.state.store
        if hello.get("data_dir"):
            store.dir = os.path.join(hello["data_dir"], f"spill-{self.name}-{os.getpid()}")
            # (the run's directory on this node: its job logs, as programs' are)
            loglines.KEEP_DIR[:] = [os.path.join(os.path.dirname(hello["data_dir"]), "jobs")]
            diskroom.DATA_DIR[:] = [hello["data_dir"]]     # (a task's full disk: which)
        mem_gb = float(hello.get("memory_gb") or total_memory_gb())
        high, pause = budget.marks(hello.get("memory_budget"), hello.get("memory_pause"), mem_gb)
        self.memory = NodeMemory(store, self.pool, high, pause,
                                 lambda r: self._send(M.MEMORY, r))
        if hello.get("compss_env"):     # PyCOMPSs: what every task sees (before the forks),
            compss_environment(hello.get("label") or self.name)
            keep_calls_inline(not hello.get("compss_nesting"))  # calls in tasks: inline?
        self.tracker = Tracker()        # before the executors: a cgroup is theirs too
        for _ in range(self.slots):
            self.pool.spawn()
        io = int(hello.get("io_executors") or 0)     # @IO tasks' own executors (placement)
        for _ in range(io):
            self.pool.spawn(io=True)
        # The sampler (psutil: ~16 ms of imports) starts after the handshake (see _sample).
        self._sample_interval = hello.get("sample_interval", 2.0)
        self._sampler_at = time.time() + 0.1
        return {"hostname": socket.gethostname(), "pid": os.getpid(),
                "slots": self.slots, "cpus": os.cpu_count(), "io_executors": io,
                "memory_gb": total_memory_gb(), "python": sys.version.split()[0],
                "version": __version__, "memory_budget": high, "memory_pause": pause}

    def _arm(self) -> None:
        """After the first READY: the sub-reaper (it costs an import), and SIGTERM (Slurm's
        walltime warning, scancel, a user's kill) drains the node: running tasks finish,
        the rest goes back to the master (see _leave)."""
        assert self.tracker is not None
        self.tracker.arm()
        os.set_blocking(self._term_w, False)
        self.sel.register(self._term_r, selectors.EVENT_READ, "term")
        signal.signal(signal.SIGTERM, self._on_sigterm)

    # -- main loop -------------------------------------------------------
    def run(self) -> None:
        pool = self.pool
        placement = self.placement
        stops = self.stops
        while self.running:
            timeout = self._timeout()
            for key, mask in self.sel.select(timeout):
                data = key.data
                if data == "term":
                    os.read(self._term_r, 64)
                    if self.orphan is not None and self.orphan.waiting():
                        self._give_up(self.orphan)      # (no master to hand work back to)
                    self._leave("SIGTERM")
                elif data == "adopt":
                    self._answer()
                elif data is None:
                    if mask & selectors.EVENT_READ:
                        self._from_master()
                    if mask & selectors.EVENT_WRITE:
                        self._flush()
                elif type(data) is tuple:       # ("w", executor): its pipe has room again
                    _, ex = data
                    if ex in pool:
                        pool.flush(ex)
                elif data in pool:
                    # (an executor replaced earlier in this round may have left a stale
                    # event whose fd number now belongs to its successor: skip it)
                    self._from_exec(data)
            stops.check_deadlines(self.results)
            if pool.doomed:
                pool.kill_doomed(time.time())
            if stops.interrupt_at is not None and time.time() >= stops.interrupt_at:
                stops.kill_the_rest()
            if self.chaining.blocked and time.time() >= stops.held_next:
                stops.check_held(self.results, self.name)
            if self.leaving is None:
                placement.schedule()
                if self.idle_exit is not None:
                    self._check_idle()
            if pool.dirty:
                pool.send_batches()
            self._sample()
            tracker = self.tracker
            if tracker is not None and tracker.subreaper and time.time() >= tracker.next_reap:
                tracker.reap({e.pid for e in pool.every()}, time.time())
            if self.memory is not None:
                self.memory.check(time.time())
            self._send_batches()
            pending = self.link.writer.pending()
            if pending > OUT_HIGH:      # the master takes less than the executors send
                pool.pause_reads()
            elif not pool.reading and pending < OUT_LOW:
                pool.resume_reads()
            orphan = self.orphan
            link = self.link
            if link.silence and (orphan is None or not orphan.waiting()) and \
                    link.silent(time.time()):
                self._master_lost(f"it was silent for {link.silence:g} s")
            elif orphan is not None and orphan.waiting():
                self._wait_for_master(orphan, time.time())
            elif self.leaving is not None:
                if self.queue or self.chaining.blocked:     # requeued after an executor died
                    self._hand_back()
                if not pool.busy():
                    self.running = False      # drained: every task it kept has reported
        self._shutdown()

    def _timeout(self) -> float:
        t = (self.sampler.next_due() if self.sampler else self._sampler_at) - time.time()
        deadlines = self.state.deadlines
        if deadlines:
            t = min(t, min(d for d, _ in deadlines.values()) - time.time())
        if self.idle_exit is not None and self.leaving is None:
            t = min(t, self.last_busy + self.idle_exit - time.time())
        if self.chaining.blocked:
            t = min(t, self.stops.held_next - time.time())
        interrupt_at = self.stops.interrupt_at
        if interrupt_at is not None:
            t = min(t, interrupt_at - time.time())
        if self.pool.doomed:
            t = min(t, min(self.pool.doomed.values()) - time.time())
        orphan = self.orphan
        if orphan is not None and orphan.waiting():
            t = min(t, orphan.due() if self.redial is None else
                    min(orphan.due(), self.redial.due()))
        lead_at = self.placement.lead_at
        if lead_at is not None and self.leaving is None:   # a long task's successor is
            # due (placement.py); a leaving agent places nothing, so it must not wake
            t = min(t, lead_at - time.time())
        return max(0.0, min(t, 5.0))

    # -- leaving: SIGTERM or idle ------------------------------------------------
    def _on_sigterm(self, signum: int, frame: Any) -> None:
        try:
            os.write(self._term_w, b"t")
        except OSError:
            pass

    def _check_idle(self) -> None:
        now = time.time()
        idle_exit = self.idle_exit
        if self.queue or self.chaining.blocked or self.pool.busy():
            self.last_busy = now
        elif idle_exit is not None and now - self.last_busy >= idle_exit:
            self._leave(f"idle for {idle_exit:g} s")

    def _leave(self, reason: str) -> None:
        """Drain: take no new work, hand back what has not started, finish the rest.

        Tasks already queued on an executor run (the head is running; the
        others are short ones prefetched behind it, or one long task queued
        in the last LEAD of the head's expected time). Held tasks and the
        agent's own queue go back to the master, which places them elsewhere;
        tasks that arrive later go back the same way.
        """
        if self.leaving is not None:
            return
        self.leaving = reason
        self._hand_back()

    def _hand_back(self) -> None:
        io = self.placement.io_queue
        back = [t.task_id for t in self.queue.take_all()] + self.chaining.take_all() + \
            [t.task_id for t in io]
        io.clear()
        self._send(M.LEAVING, M.Leaving(self.leaving or "", back))

    # -- frames in ---------------------------------------------------------------
    def _from_master(self) -> None:
        msgs = self.link.receive()
        if msgs is None:     # the master is gone: leave no process behind (or wait for one)
            self._master_lost("its stream closed")
            return
        state = self.state
        for op, body in msgs:
            if op == M.TASKS:
                if self.leaving is not None:
                    self._send(M.LEAVING, M.Leaving(self.leaving,
                                                    [t.task_id for t in M.tasks(body)]))
                    continue
                self.placement.enqueue(M.tasks(body))
            elif op == M.FUNC:
                state.funcs[body.digest] = body.payload
                if body.code is not None:
                    state.codes[body.digest] = body.code
            elif op == M.DATA:
                self.holding.data(body)
            elif op == M.FETCH:
                self.holding.fetch(body)
            elif op == M.PULL:
                self.holding.pull(body)
            elif op == M.PART:
                self.holding.parts(body)
            elif op == M.DROP:
                self.holding.drop(body)
            elif op == M.NESTED:            # answers to tasks' waits (executor.nested)
                self.pool.answer(body)
            elif op == M.CANCEL:
                self.stops.cancel(set(body), self.results)
            elif op == M.INTERRUPT:
                self._interrupt(float(body))
            elif op == M.SHUTDOWN:
                self.told_to_stop = True
                self.running = False
            elif op == M.KEYS:
                state.keys.update(body)
            elif op == M.PRELOAD:           # the script's modules (agent.executor.preload)
                self.pool.preload(body.modules)
            elif op == M.ADOPT:
                if self.orphan is not None:
                    running = self.orphan.adopt(body)
                    if running:
                        self.stops.cancel(running, self.results)

    # -- the master is lost, and the next one --------------------------------------------
    def _master_lost(self, why: str) -> None:
        """The stream to the master ended (``why``). In an adoptable run with tasks running
        or results not reported, keep them for the next master (agent.orphan); else exit,
        leaving no process."""
        orphan = self.orphan
        if orphan is not None and orphan.waiting():
            return
        link = self.link
        worth = self.pool.busy() or self.results or (orphan is not None and orphan.kept) \
            or self.redial is not None      # (a dial-back agent waits idle too: its Slurm
        #                                     job is the run's, agent.redial)
        if not (link.grace > 0 and not self.told_to_stop and self.stops.interrupt_at is None
                and worth):
            self.running = False
            return
        if orphan is None:
            orphan = self.orphan = Orphan(self.state.store)
        self.pool.disown(*link.fds)             # (closed now: their numbers will be reused)
        link.close(self.sel)
        orphan.enter([t for ex in self.pool.every() for t in ex.queue], self.recent.take())
        self.queue.take_all()                   # not started: the next master runs them
        self.chaining.take_all()
        self.placement.io_queue.clear()
        self.state.started = []
        orphan.hold(self.results, self.logs)    # not sent: kept for the next master
        self.results, self.logs = [], []
        self.leaving = "the master was lost"
        sock = orphan.listen(link.run_id, self.name, link.grace)
        if sock is None:
            return
        self.pool.own(sock.fileno())            # executors forked later close it
        self.sel.register(sock, selectors.EVENT_READ, "adopt")
        say(f"taskflow.node: {self.name}: the master was lost ({why}); keeping "
            f"{orphan.running()} running task(s) for a resumed master for "
            f"{link.grace:g} s at {orphan.path}")

    def _wait_for_master(self, orphan: Orphan, now: float) -> None:
        """While no master: past the grace, give up; before, a dial-back agent looks for a
        resumed master (agent.redial)."""
        if now >= orphan.deadline:
            self._give_up(orphan)
        elif self.redial is not None:
            got = self.redial.look(now, self.link, self.name)
            if got is not None:
                self.attach(*got)

    def _answer(self) -> None:
        """A connection on the orphan's socket: a master that proves the run's secret
        becomes the agent's; one that says SHUTDOWN ends the wait."""
        orphan = self.orphan
        assert orphan is not None
        got = orphan.accept(self.link.secret, self.link.run_id, self.name)
        if got is not None:
            self.attach(*got)
        elif orphan.dismissed:
            self._give_up(orphan)

    def _ready_again(self, orphan: Orphan, same: bool) -> M.Ready:
        """The READY of a later master: the tasks kept for it, and what the values held
        here are to it (``same``: its own run's; else dropped, and the ids to start above)."""
        self._close_listener()
        self.leaving = None
        state = self.state
        info: M.Ready = {"hostname": socket.gethostname(), "pid": os.getpid(),
                         "slots": self.slots, "cpus": os.cpu_count(),
                         "io_executors": len(self.pool.io_execs), "version": __version__,
                         "adoptable": orphan.taken(state.keys, state.codes, {
                             ex.queue[0].task_id for ex in self.pool.every() if ex.queue},
                             self.pool.callers)}
        mine = orphan.outputs()
        if same:            # (runtime/rejoin.py drops those it has no use for any more)
            info["held"] = [d for d in state.store if d not in mine]
        else:
            state.keep_only(orphan.kept, mine)
            info["ids_above"] = max(orphan.kept, default=0), max(mine, default=0)
        if self.memory is not None:
            info["memory_budget"], info["memory_pause"] = self.memory.budget, self.memory.pause
        return info

    def _give_up(self, orphan: Orphan) -> None:
        """No master came within the grace: stop the tasks kept for one (with what they
        started); the agent exits and its spill files go."""
        for ex in self.pool.every():
            if ex.queue:
                kill_group(ex)
        self._close_listener()
        why = orphan.unreachable or f"no master came within {self.link.grace:g} s"
        say(f"taskflow.node: {self.name}: the master was lost and {why}: "
            f"{orphan.running()} task(s) stopped, {len(orphan.held)} result(s) dropped")
        self.running = False

    def _close_listener(self) -> None:
        if self.orphan is not None:
            self.orphan.close_listener(self.sel, self.pool.disown)

    # -- frames from the executors -------------------------------------------------------
    def _from_exec(self, ex: Executor) -> None:
        try:
            msgs = ex.reader.feed()
        except BlockingIOError:
            return
        except OSError:
            msgs = None
        if msgs is None:
            self.stops.died(ex, self.results, self.name)
            return
        queue = ex.queue
        producing = self.state.producing
        deadlines = self.state.deadlines
        cancelled = self.cancelled
        mean = self.state.mean
        results = self.results
        chaining = self.chaining
        ok, packed, shared = M.OK, M.Packed, M.Shared
        rs_end = 0.0
        for op, body in msgs:
            if op != M.RESULTS:
                if op == M.NEST:        # a task's calls and waits: the master records them
                    self.pool.nest(ex, body)
                continue
            rs, lines = body
            n = len(rs)
            # An executor answers in the order it was sent work: the head of its queue.
            head: list[M.TaskMsg | None] = queue[:n]     # type: ignore[assignment]
            del queue[:n]
            if len(head) < n:
                head += [None] * (n - len(head))
            digest = None
            m = None
            for res, tmsg in zip(rs, head):
                tid, status, outputs, _, timing = res
                try:
                    t0, t1 = timing
                except ValueError:          # measured (executor.usage): start, end, cpu, peak, io
                    t0, t1 = timing[0], timing[1]
                rs_end = t1
                if deadlines:
                    deadlines.pop(tid, None)
                if tmsg is not None:
                    if tmsg.digest is not digest:      # mean duration here (prefetch depth)
                        if digest is not None and m is not None:
                            mean[digest] = m
                        digest = tmsg.digest
                        m = mean.get(digest)
                    d = t1 - t0
                    m = d if m is None else 0.8 * m + 0.2 * d
                    for did in tmsg.outputs:
                        if producing.get(did) is ex:
                            del producing[did]
                if cancelled and tmsg is not None and cancelled.get(tid) is tmsg:
                    del cancelled[tid]      # (that copy's: not one sent again under its id)
                    self.holding.discard(outputs)       # (its shared files)
                    continue
                if status == ok and tmsg is not None and outputs is not None:
                    if chaining.waiting_on:
                        chaining.outputs_made(tmsg.outputs, outputs)
                    for payload in outputs:
                        kind = type(payload)
                        if kind is packed or kind is shared or (kind is bytes and len(payload) > INLINE_MAX):
                            res = self.holding.keep_large(res, tmsg)
                            break
                elif status == M.MISSING and tmsg is not None:
                    res = self.holding.resend(res, tmsg)
                    if res is None:
                        continue
                results.append(res)
            if digest is not None and m is not None:
                mean[digest] = m
            for tid, tlines in lines:
                self.logs.extend((tid, t, lvl, line) for t, lvl, line in tlines)
        if not ex.queue:
            ex.reserved = 0
            ex.started = 0.0
        elif rs_end:
            ex.started = rs_end       # the next task started when the last one ended
            nxt = ex.queue[0]
            mean_next = mean.get(nxt.digest)
            if mean_next is None or mean_next >= RUNNING_SIGNAL_MIN:
                self.state.started.append((nxt.task_id, rs_end))

    # -- the run is interrupted ---------------------------------------------------
    def _interrupt(self, grace: float) -> None:
        """Start nothing more; stop what runs; what still runs after ``grace`` seconds is
        killed (agent.stops)."""
        if self.stops.interrupt(grace):
            self._leave("interrupted")          # the agent's queue and held tasks go back
            self.stops.signal_busy()

    # -- frames out ------------------------------------------------------------
    def _sample(self) -> None:
        s = self.sampler
        if s is None:
            if time.time() < self._sampler_at:
                return
            from .sampler import Sampler
            s = self.sampler = Sampler(self._sample_interval)
        if time.time() >= s.next_due():
            self._send(M.SAMPLE, s.sample())

    def _send_batches(self) -> None:
        orphan = self.orphan
        if orphan is not None:
            sifted = orphan.sift(self.results, self.logs)
            if sifted is None:                      # no master: held for one
                self.results, self.logs, self.state.started = [], [], []
                return
            self.results, self.logs = sifted        # (under the new master's ids)
            if orphan.finished():
                self.orphan = None
        if self.state.keys and self.results:        # (keyed calls of an adoptable run)
            self.state.forget_keys(self.results)
        if self.pool.nest_out:      # a task's calls before its result (pool.nest)
            self._send(M.NEST, self.pool.take_nest())
        if self.logs:       # first: a task's lines are in before its result (none lost at stop)
            self._send(M.LOG, self.logs)
            self.logs = []
        if self.results:
            self.recent.sent(self.results, self._send(M.RESULTS, self.results))  # (recent.py)
            self.results = []
        started = self.state.started
        if started:         # after the results: a task queued behind its producer starts
            self._send(M.STARTED, started)     # once the producer's result is in
            self.state.started = []

    def _send(self, op: int, body: Any) -> int:
        if self.orphan is not None and self.orphan.waiting():
            return 0                # no master to tell (else: the frame's size)
        self.link.writer.queue(frame := P.encode(op, body))
        self._flush()
        return len(frame)

    def _send_parts(self, op: int, body: Any) -> None:
        """A frame that may carry values: their buffers are written from where they are."""
        self.link.writer.queue_parts(P.encode_parts(op, body))
        self._flush()

    def _flush(self) -> None:
        """Write what the master's stream takes now (the rest when it has room)."""
        try:
            self.link.writer.flush()
        except OSError:             # the master is gone
            self._master_lost("a write to it failed")

    def _shutdown(self) -> None:
        self._close_listener()
        self.pool.shutdown()
        if self.tracker is not None:        # what the tasks left (daemons, kept children)
            self.tracker.end()
        self.state.store.close()
        self.link.drain()
