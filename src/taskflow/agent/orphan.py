"""An agent whose master is gone: it keeps its running tasks for a resumed master.

When the stream to the master ends without SHUTDOWN (the master was
SIGKILLed, its host rebooted, the SSH connection broke) and the run is
adoptable (``Hello.adopt_grace`` > 0), the agent does not exit (as it does
otherwise, leaving no process): :class:`Orphan` takes over.

- Tasks already on an executor (the running one and the short ones
  prefetched behind it) go on; their results are held on the node (values
  above :data:`~.holding.INLINE_MAX` in the store, spilled by the memory
  budget like any held value; at most :data:`LINES_HELD` output lines).
- Nothing new starts: the agent's queue and held tasks are dropped (the
  resumed master runs them itself).
- The agent listens on a Unix socket (:func:`taskflow.wire.adoption.socket_path`)
  for ``adopt_grace`` seconds. A master that proves the run's secret
  (:func:`~taskflow.wire.adoption.agent_side`, before anything is unpickled)
  becomes the agent's master: it gets a READY listing the tasks kept
  (:class:`~taskflow.wire.messages.Adoptable`), claims those its script calls
  again (ADOPT: the agent then reports them under the new ids) and cancels the rest.
- When the grace runs out with no master, the agent kills its tasks (with
  every process they started) and exits; its spill files go with it.
"""
from __future__ import annotations

import os
import selectors
import socket
import struct
import sys
import time
from typing import TYPE_CHECKING, Any

from .._version import __version__
from ..wire import adoption
from ..wire import messages as M
from ..wire import protocol as P
from ..wire.channel import Channel, FdChannel
from ..wire.dialback import AUTH_TIMEOUT
from ..wire.framewriter import FrameWriter
from .pool import kill_group
from .recent import reported

if TYPE_CHECKING:
    from .agent import Agent

LINES_HELD = 10_000      # output lines of kept tasks held for a new master (then dropped)


def forget_keys(keys: dict[int, bytes], results: list[M.ResultWire]) -> None:
    """Keys of calls that ended (reported) are not needed any more."""
    for r in results:
        keys.pop(M.ResultMsg(*r).task_id, None)


def master_lost(ag: Agent, why: str) -> bool:
    """The agent's stream to its master ended (``why``): in an adoptable run with tasks
    running or results not reported, keep them for a resumed master (True); else the
    agent exits (False)."""
    orphan = ag.orphan
    if orphan is not None and orphan.waiting():
        return True
    if ag.adopt_grace > 0 and not ag.told_to_stop and ag.interrupt_at is None \
            and (ag.pool.busy() or ag.results or (orphan is not None and orphan.kept)
                 or ag.rejoin is not None):     # (a dial-back agent waits idle too: its
        #                                         Slurm job is the run's, agent.rejoin)
        if orphan is None:
            orphan = ag.orphan = Orphan(ag)
        orphan.enter(why)
        return True
    return False


class Orphan:
    """The agent's state from the loss of its master until a new one claimed everything."""

    def __init__(self, agent: Agent) -> None:
        self.agent = agent
        self.kept: dict[int, M.TaskMsg] = {}     # earlier id -> the task kept for a master
        self.done: set[int] = set()              # ... of those, ended (results held)
        self.claimed: dict[int, tuple[int, list[int]]] = {}   # earlier id -> (new id, dids)
        self.cancelled: set[int] = set()
        self.held: list[M.ResultWire] = []       # results of kept tasks not claimed yet
        self.held_logs: list[M.LogWire] = []
        self.dropped_lines = 0
        self.listener: socket.socket | None = None
        self.path = ""
        self.deadline = 0.0
        self.connected = False                   # a new master took the agent
        self.unreachable = ""                    # why no master can reach it (no socket)

    # -- the master is lost ----------------------------------------------------------
    def enter(self, why: str) -> None:
        """The master is gone (``why``): keep what runs, start nothing, wait for another."""
        ag = self.agent
        self._drop_master()
        self.connected = False
        # a master lost again (a resumed run's): what it claimed and was not reported is
        # listed to the next one again, under the ids the tasks were kept by
        self.claimed.clear()
        for ex in ag.pool.every():
            for t in ex.queue:
                if t.task_id not in self.claimed:
                    self.kept.setdefault(t.task_id, t)
        self._unconfirmed(ag.recent.take())     # sent, maybe never received: offered again
        ag.queue.take_all()                     # not started: the new master runs them
        ag.chaining.take_all()
        ag.placement.io_queue.clear()
        ag.state.started = []
        self.hold(ag.results, ag.logs)          # not sent: kept for the next master
        ag.results, ag.logs = [], []
        ag.leaving = "the master was lost"
        self.deadline = time.time() + ag.adopt_grace
        try:
            self.path = adoption.socket_path(ag.adopt_run, ag.name)
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass
            sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            sock.bind(self.path)
            os.chmod(self.path, 0o600)
            sock.listen(4)
            sock.setblocking(False)
        except OSError as exc:
            self.unreachable = f"no new master could reach it: {exc}"
            self.deadline = 0.0
            return
        self.listener = sock
        ag.pool.own(sock.fileno())              # executors forked later close it
        ag.sel.register(sock, selectors.EVENT_READ, "adopt")
        say(f"taskflow.node: {ag.name}: the master was lost ({why}); keeping "
              f"{len(self.kept) - len(self.done)} running task(s) for a resumed master for "
              f"{ag.adopt_grace:g} s at {self.path}")

    def _unconfirmed(self, results: list[M.ResultWire]) -> None:
        """Results sent just before the master was lost (agent/recent.py): held as those of
        kept tasks that ended (a master that has them cancels them)."""
        for r in results:
            tid = M.ResultMsg(*r).task_id
            if tid not in self.kept:
                self.kept[tid] = reported(r)
                self.done.add(tid)
                self.held.append(r)

    def _drop_master(self) -> None:
        ag = self.agent
        try:
            ag.sel.unregister(ag.rfd)
        except (KeyError, ValueError):
            pass
        ag.out.detach()
        ag.pool.disown(ag.rfd, ag.wfd)          # (closed now: their numbers will be reused)
        ag.chan.close()

    def waiting(self) -> bool:
        """No master: frames to it are not sent."""
        return not self.connected

    def tick(self, now: float) -> None:
        """While no master: past the grace it gives up; before, a dial-back agent looks for
        a resumed master (agent/rejoin.py)."""
        rejoin = self.agent.rejoin
        if now >= self.deadline:
            self.give_up()
        elif rejoin is not None:
            rejoin.look(self, now)

    def due(self) -> float:
        """Seconds until :meth:`tick` has something to do."""
        rejoin = self.agent.rejoin
        left = self.deadline - time.time()
        return min(left, rejoin.due()) if rejoin is not None else left

    def give_up(self) -> None:
        """No master came within the grace: stop the tasks kept for one (with what they
        started); the agent exits and its spill files go."""
        ag = self.agent
        for ex in ag.pool.every():
            if ex.queue:
                kill_group(ex)
        self.close_listener()
        why = self.unreachable or f"no master came within {ag.adopt_grace:g} s"
        say(f"taskflow.node: {ag.name}: the master was lost and {why}: "
              f"{len(self.kept) - len(self.done)} task(s) stopped, "
              f"{len(self.held)} result(s) dropped")
        ag.running = False

    def sift(self) -> bool:
        """The agent's round of frames out: True when there is no master (this round's
        results and lines are held); else they are put under the master's ids."""
        ag = self.agent
        if not self.connected:
            self.hold(ag.results, ag.logs)
            ag.results, ag.logs, ag.state.started = [], [], []
            return True
        ag.results, ag.logs = self.translate(ag.results, ag.logs)
        if self.finished():
            ag.orphan = None
        return False

    # -- results while no master (or one that has not claimed them yet) ------------------
    def hold(self, results: list[M.ResultWire], logs: list[M.LogWire]) -> None:
        for r in results:
            tid = M.ResultMsg(*r).task_id
            if tid in self.kept:
                self.done.add(tid)
                self.held.append(r)
        room = LINES_HELD - len(self.held_logs)
        keep = [(tid, t, lvl, text) for tid, t, lvl, text in logs if tid in self.kept]
        self.held_logs.extend(keep[:max(0, room)])
        self.dropped_lines += max(0, len(keep) - max(0, room))

    def translate(self, results: list[M.ResultWire],
                  logs: list[M.LogWire]) -> tuple[list[M.ResultWire], list[M.LogWire]]:
        """What a connected master gets of this round's results and lines: those of tasks
        it gave (as they are), of kept tasks it claimed (under its ids); the others of kept
        tasks wait for its claim."""
        kept = self.kept
        out: list[M.ResultWire] = []
        for r in results:
            tid = M.ResultMsg(*r).task_id
            if tid in kept:
                self.done.add(tid)
                self.held.append(r)
            else:
                out.append(r)
        lines: list[M.LogWire] = []
        for tid, t, lvl, text in logs:
            (self.held_logs if tid in kept else lines).append((tid, t, lvl, text))
        out.extend(self._release())
        return out, lines + self._release_lines()

    def _release(self) -> list[M.ResultWire]:
        out, still = [], []
        store = self.agent.state.store
        for tid, status, outputs, error, timing in self.held:
            if tid in self.cancelled:
                self.forget(tid)
                continue
            claim = self.claimed.get(tid)
            if claim is None:
                still.append((tid, status, outputs, error, timing))
                continue
            new, dids = claim
            if outputs:
                outs = list(outputs)
                for i, o in enumerate(outs):
                    if type(o) is M.Held and i < len(dids):
                        payload = store.pop(o.key)
                        if payload is not None:
                            store[dids[i]] = payload
                        outs[i] = M.Held(dids[i], o.size)
                outputs = outs
            out.append((new, status, outputs, error, timing))
            self.forget(tid)
        self.held = still
        return out

    def _release_lines(self) -> list[M.LogWire]:
        out, still = [], []
        for tid, t, lvl, text in self.held_logs:
            claim = self.claimed.get(tid)
            if claim is not None:
                new, _ = claim
                out.append((new, t, lvl, text))
            elif tid not in self.cancelled:
                still.append((tid, t, lvl, text))
        self.held_logs = still
        return out

    def forget(self, tid: int) -> None:
        if tid in self.done:            # (a running one is forgotten when its result comes)
            self.kept.pop(tid, None)
            self.claimed.pop(tid, None)
            self.cancelled.discard(tid)
            self.done.discard(tid)

    def finished(self) -> bool:
        """Every kept task was claimed and reported, or cancelled: back to a plain agent."""
        return self.connected and not self.kept and not self.held

    # -- a new master ----------------------------------------------------------------
    def accept(self) -> None:
        """A connection on the socket: adopt its master if it proves the secret."""
        ag = self.agent
        assert self.listener is not None
        try:
            conn, _ = self.listener.accept()
        except (BlockingIOError, OSError):
            return
        if self.connected:              # one master at a time
            conn.close()
            return
        try:
            if adoption.peer_uid(conn) != os.getuid():
                raise adoption.Refused("a process of another user")
            conn.setblocking(False)
            adoption.agent_side(conn, ag.adopt_secret, ag.adopt_run, ag.name)
            op, hello = first_frame(conn, FdChannel(conn.fileno(), conn.fileno()))
            if op == M.SHUTDOWN:        # the run's master ended: nothing to wait for
                conn.close()
                self.unreachable = "its run ended (the master dismissed it)"
                self.give_up()
                return
            if op != M.HELLO:
                raise adoption.Refused("no HELLO after the handshake")
        except Exception as exc:  # noqa: BLE001 - a refused master never stops the agent
            say(f"taskflow.node: {ag.name}: refused a master at {self.path}: {exc}")
            conn.close()
            return
        fd = conn.detach()
        chan = FdChannel(fd, fd)
        self._take(chan, hello)

    def _take(self, chan: Channel, hello: M.Hello) -> None:
        ag = self.agent
        same = hello.get("adopt_run") == ag.adopt_run   # its own master, back (a link flap)
        ag.chan = chan
        ag.rfd = ag.wfd = chan.rfd
        ag.reader = P.FrameReader(chan)
        ag.out = FrameWriter(chan)
        ag.out.attach(ag.sel, None)
        ag.pool.own(chan.rfd)
        ag.adopt_grace = float(hello.get("adopt_grace") or 0.0)
        ag.adopt_secret = hello.get("adopt_secret", ag.adopt_secret)
        ag.adopt_run = hello.get("adopt_run", ag.adopt_run)
        ag.silence = adoption.silence_limit(hello.get("heartbeat_timeout") or 0.0) \
            if ag.adopt_grace else 0.0
        ag.last_rx = time.time()
        self.connected = True
        self.close_listener()
        keys = ag.state.keys
        tasks = [M.Adoptable(tid, keys.get(tid, b""),
                             ag.state.codes.get(t.digest, b"") if _plain(t) else b"",
                             t.argv if _plain(t) else None, t.units, tid in self.done,
                             written(t))
                 for tid, t in self.kept.items() if tid not in self.claimed]
        info: M.Ready = {"hostname": socket.gethostname(), "pid": os.getpid(),
                         "slots": ag.slots, "cpus": os.cpu_count(),
                         "io_executors": len(ag.pool.io_execs),
                         "version": __version__, "adoptable": tasks}
        if same:                # the values it holds are still the run's (runtime/rejoin.py)
            info["held"] = self._held_values()
        else:
            info["ids_above"] = self._forget_the_rest()
        if ag.memory is not None:
            info["memory_budget"], info["memory_pause"] = ag.memory.budget, ag.memory.pause
        P.write_all(chan, P.encode(M.READY, info))
        chan.set_blocking(False)
        ag.sel.register(chan.rfd, selectors.EVENT_READ, None)
        ag.leaving = None
        say(f"taskflow.node: {ag.name}: "
             f"{'its master is back' if same else 'adopted by a resumed master'} "
             f"({len(tasks)} task(s) kept for it)")

    def _forget_the_rest(self) -> tuple[int, int]:
        """What the earlier master left here besides the kept tasks (values it pushed or
        that stayed here) means nothing to a new one: dropped. The highest task and data
        ids of the earlier run left here, for the new master to start above."""
        ag = self.agent
        mine = {d for t in self.kept.values() for d in t.outputs}
        store = ag.state.store
        for did in [d for d in store if d not in mine]:
            store.pop(did)
        ag.state.producing.clear()
        ag.state.keys = {t: k for t, k in ag.state.keys.items() if t in self.kept}
        return max(self.kept, default=0), max(mine, default=0)

    def _held_values(self) -> list[int]:
        """Its own master is back: the data ids in the store other than kept tasks' outputs
        (the master drops those it has no use for any more)."""
        mine = {d for t in self.kept.values() for d in t.outputs}
        return [d for d in self.agent.state.store if d not in mine]

    def adopt(self, body: M.Adopt) -> None:
        """The master's claims (ADOPT): report claimed tasks under its ids, cancel the rest."""
        for old, new, dids in body.claimed:
            if old in self.kept:
                self.claimed[old] = (new, list(dids))
        gone = {t for t in body.cancelled if t in self.kept}
        self.cancelled |= gone
        running = gone - self.done
        if running:
            self.agent._cancel(running)
        for tid in running:           # killed: no result will come
            self.kept.pop(tid, None)
            self.cancelled.discard(tid)

    def close_listener(self) -> None:
        if self.listener is not None:
            try:
                self.agent.sel.unregister(self.listener)
            except (KeyError, ValueError):
                pass
            self.agent.pool.disown(self.listener.fileno())
            self.listener.close()
            self.listener = None
            try:
                os.unlink(self.path)
            except OSError:
                pass


def first_frame(sock: socket.socket, chan: Channel) -> tuple[int, Any]:
    """The first frame of a master that proved the run's secret on ``sock`` (``chan`` reads
    it), within :data:`AUTH_TIMEOUT`: a blocking read that gives up."""
    sock.setblocking(True)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", int(AUTH_TIMEOUT), 0))
    try:
        return P.read_frame_blocking(chan)
    finally:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 0))


def _plain(t: M.TaskMsg) -> bool:
    """A plain call (positional values only, no options): its key is its code's and its
    arguments' (graph.keys.plain_key), which a new master can match."""
    return t.refs is None and t.kwargs is None and t.options is None and t.inouts is None


def written(t: M.TaskMsg) -> list[str]:
    """The file and directory versions ``t`` writes, in the order of its inouts: where the
    earlier master planned them (a new master that claims ``t`` takes them as they are)."""
    if not t.inouts:
        return []
    where = {path: data for path, kind, data in t.refs or ()
             if kind in (M.REF_FILE_OUT, M.REF_DIR_OUT, M.REF_FILE_INOUT, M.REF_DIR_INOUT)}
    out = []
    for path, kind, _ in t.inouts:
        if kind != M.OUT_OBJECT:
            data = where.get(path)
            if isinstance(data, (tuple, list)):     # an INOUT: (previous, new)
                _, data = data
            out.append(str(data))
    return out


def say(text: str) -> None:
    """A line on the agent's stderr (which may be gone with the master's SSH channel)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
