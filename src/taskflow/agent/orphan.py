"""An agent whose master is gone: the tasks it keeps for the next master, and where it waits.

When the stream to the master ends without SHUTDOWN (the master was
SIGKILLed, its host rebooted, the SSH connection broke) and the run is
adoptable (``Hello.adopt_grace`` > 0), the agent does not exit (as it does
otherwise, leaving no process): it keeps an :class:`Orphan`
(:meth:`~.agent.Agent._master_lost` decides; this module keeps the record).

- Tasks already on an executor (the running one and the short ones
  prefetched behind it) go on; their results are held on the node (values
  above :data:`~.holding.INLINE_MAX` in the store, spilled by the memory
  budget like any held value; at most :data:`LINES_HELD` output lines).
- Nothing new starts: the agent's queue and held tasks are dropped (the
  next master runs them itself).
- The agent listens on a Unix socket (:func:`taskflow.wire.adoption.socket_path`)
  for ``adopt_grace`` seconds (a dial-back agent also dials out: :mod:`.redial`).
  A master that proves the run's secret (:func:`~taskflow.wire.adoption.agent_side`,
  before anything is unpickled) becomes the agent's master
  (:meth:`~.agent.Agent.attach`): a resumed master adopting it, or its own
  master back after a cut link (a rejoin: it keeps the values it holds). It
  gets a READY listing the tasks kept (:class:`~taskflow.wire.messages.Adoptable`),
  claims those its script calls again (ADOPT: the agent then reports them
  under the new ids) and cancels the rest.
- When the grace runs out with no master, the agent kills its tasks (with
  every process they started) and exits; its spill files go with it.
"""
from __future__ import annotations

import os
import selectors
import socket
import time
from typing import AbstractSet, Callable

from ..wire import adoption
from ..wire import messages as M
from ..wire.channel import Channel, FdChannel
from .link import first_frame, say
from .recent import reported
from .store import ValueStore

LINES_HELD = 10_000      # output lines of kept tasks held for a new master (then dropped)


class Orphan:
    """The agent's record from the loss of its master until a new one claimed everything."""

    def __init__(self, store: ValueStore) -> None:
        self.store = store                       # the node's (a held result's values)
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
        self.dismissed = False                   # the run's master said SHUTDOWN meanwhile

    # -- the master is lost ----------------------------------------------------------
    def enter(self, running: list[M.TaskMsg], unconfirmed: list[M.ResultWire]) -> None:
        """The master is gone: keep the tasks on the executors (``running``: their queues)
        and the results sent just before, which it may not have received (agent/recent.py)."""
        self.connected = False
        # a master lost again (a resumed run's): what it claimed and was not reported is
        # listed to the next one again, under the ids the tasks were kept by
        self.claimed.clear()
        for t in running:
            self.kept.setdefault(t.task_id, t)
        for r in unconfirmed:       # held as those of kept tasks that ended (a master that
            tid = M.ResultMsg(*r).task_id       # has them cancels them)
            if tid not in self.kept:
                self.kept[tid] = reported(r)
                self.done.add(tid)
                self.held.append(r)

    def listen(self, run_id: str, node: str, grace: float) -> socket.socket | None:
        """Wait ``grace`` seconds for a master on the socket of (run, node); None: no socket
        could be made (:attr:`unreachable` says why; the grace is over at once)."""
        self.deadline = time.time() + grace
        try:
            self.path = adoption.socket_path(run_id, node)
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
            return None
        self.listener = sock
        return sock

    def waiting(self) -> bool:
        """No master: frames to it are not sent."""
        return not self.connected

    def due(self) -> float:
        """Seconds until the grace is over."""
        return self.deadline - time.time()

    def running(self) -> int:
        """Kept tasks that have not ended."""
        return len(self.kept) - len(self.done)

    def sift(self, results: list[M.ResultWire], logs: list[M.LogWire]
             ) -> tuple[list[M.ResultWire], list[M.LogWire]] | None:
        """The agent's round of frames out: None when there is no master (this round's
        results and lines are held); else what the master gets (:meth:`translate`)."""
        if not self.connected:
            self.hold(results, logs)
            return None
        return self.translate(results, logs)

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
        # lines first: releasing a result forgets its task's claim, and the lines it printed
        # last (this round's) would then be kept for no one
        lines.extend(self._release_lines())
        out.extend(self._release())
        return out, lines

    def _release(self) -> list[M.ResultWire]:
        out, still = [], []
        store = self.store
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
    def accept(self, secret: str, run_id: str, node: str) -> tuple[Channel, M.Hello] | None:
        """A connection on the socket: the stream and HELLO of a master that proved the
        run's secret for (run, node); None when there is none to take (refused, said why;
        a master is connected already; the run's master dismissed the agent: :attr:`dismissed`)."""
        assert self.listener is not None
        try:
            conn, _ = self.listener.accept()
        except (BlockingIOError, OSError):
            return None
        if self.connected:              # one master at a time
            conn.close()
            return None
        try:
            if adoption.peer_uid(conn) != os.getuid():
                raise adoption.Refused("a process of another user")
            conn.setblocking(False)
            adoption.agent_side(conn, secret, run_id, node)
            op, hello = first_frame(conn, FdChannel(conn.fileno(), conn.fileno()))
            if op == M.SHUTDOWN:        # the run's master ended: nothing to wait for
                conn.close()
                self.unreachable = "its run ended (the master dismissed it)"
                self.dismissed = True
                return None
            if op != M.HELLO:
                raise adoption.Refused("no HELLO after the handshake")
        except Exception as exc:  # noqa: BLE001 - a refused master never stops the agent
            say(f"taskflow.node: {node}: refused a master at {self.path}: {exc}")
            conn.close()
            return None
        fd = conn.detach()
        return FdChannel(fd, fd), hello

    def taken(self, keys: dict[int, bytes], codes: dict[bytes, bytes],
              started: set[int], callers: AbstractSet[int] = frozenset()
              ) -> list[M.Adoptable]:
        """A master took the agent: the kept tasks it has not claimed, for its READY (by
        their keys, or their code and arguments for a plain call; ``started``: the ids of
        those running now, the others wait on their executor behind one of them).
        ``callers``: tasks that called tasks or used a stream; a new master has none of
        their calls or items, so they are listed with no key, which it cancels at once:
        they run again there (docs/guide/nested.md, Resume)."""
        self.connected = True
        out = []
        for tid, t in self.kept.items():
            if tid in self.claimed:
                continue
            plain = _plain(t) and tid not in callers
            out.append(M.Adoptable(tid, b"" if tid in callers else keys.get(tid, b""),
                                   codes.get(t.digest, b"") if plain else b"",
                                   t.argv if plain else None, t.units, tid in self.done,
                                   written(t), tid in self.done or tid in started))
        return out

    def outputs(self) -> set[int]:
        """The data ids the kept tasks make (their values stay for any master)."""
        return {d for t in self.kept.values() for d in t.outputs}

    def adopt(self, body: M.Adopt) -> set[int]:
        """The master's claims (ADOPT): report claimed tasks under its ids, cancel the rest;
        the running tasks to cancel (no result will come: forgotten now)."""
        for old, new, dids in body.claimed:
            if old in self.kept:
                self.claimed[old] = (new, list(dids))
        gone = {t for t in body.cancelled if t in self.kept}
        self.cancelled |= gone
        running = gone - self.done
        for tid in running:
            self.kept.pop(tid, None)
            self.cancelled.discard(tid)
        return running

    def close_listener(self, sel: selectors.BaseSelector | None = None,
                       disown: Callable[[int], None] | None = None) -> None:
        """Stop watching the socket (``sel``: the agent's selector; ``disown``: forget its fd
        in the executors forked later), close it and remove its path."""
        if self.listener is not None:
            if sel is not None:
                try:
                    sel.unregister(self.listener)
                except (KeyError, ValueError):
                    pass
            if disown is not None:
                disown(self.listener.fileno())
            self.listener.close()
            self.listener = None
            try:
                os.unlink(self.path)
            except OSError:
                pass


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
