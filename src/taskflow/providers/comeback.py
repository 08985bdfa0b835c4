"""The comeback: lost SSH hosts taken back into the running run when their link comes back.

An SSH node is lost when its link fails (no data for the heartbeat time-out,
or the connection dropped without the agent's exit status). In an adoptable
run (``adopt_grace`` > 0) its agent, if it is still alive, keeps its running
tasks and holds their results for a master (agent/orphan.py). The running
master does not write the host off: :class:`Comeback` (one thread, started at
the first loss) tries to reach it again, through the same bridge and with the
same mutual proof a resumed master uses (``taskflow.node --adopt``,
wire/adoption.py), bound to this run's *own* id and secret: it is the same
run, not an adoption. It succeeds when the link is back:

- the agent waits there: it proves the run's secret, answers HELLO with the
  tasks it kept, and the node joins the run again under its old name
  (runtime/rejoin.py claims or cancels what it kept);
- no agent waits there (the host rebooted, or the agent's grace ran out): a
  fresh agent starts on the same channel, as at the run's start.

Bounded: the first try comes once the agent has surely taken its master for
lost (its silence limit after the loss, plus a second: before that a fresh
agent could start beside one that still runs the tasks), then with backoff
(:data:`FIRST_WAIT` doubling up to :data:`MAX_WAIT`), and never past the
agent's grace after the loss (the agent is gone by then: the host stays
lost, as before). An agent that exited on its own (an exit status) is not
restarted. The run's end stops the thread before the nodes are dismissed.

This module decides when to try; how to reach a host is the SSH provider's
(:meth:`HostReacher.reach_again`), which it sees through that narrow protocol.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Protocol

from ..wire import adoption
from ..wire import messages as M
from ..wire import protocol as P
from .base import AdoptFrom

if TYPE_CHECKING:
    from ..wire.messages import Hello
    from .base import NodeSink
    from .sshnode import SSHNode

log = logging.getLogger(__name__)

FIRST_WAIT = 2.0        # s between the first tries to reach a lost host again ...
MAX_WAIT = 30.0         # ... doubling up to this


class HostReacher(Protocol):
    """The SSH provider, as its comeback sees it."""

    @property
    def heartbeat_timeout(self) -> float: ...

    def reach_again(self, n: SSHNode, src: AdoptFrom, config: Hello, timeout: float) -> bool:
        """One try to reach lost host ``n`` (its waiting agent, proving ``src``'s secret, or
        a fresh one); False, ``n`` as it was, when the host is not back yet."""


class Comeback:
    """The thread that takes lost hosts of one SSH provider back into the run (an
    adoptable run's: the provider makes it only then)."""

    def __init__(self, provider: HostReacher, sink: NodeSink, config: Hello,
                 timeout: float) -> None:
        self.provider = provider
        self.sink = sink
        self.config = config            # the agents' HELLO: a fresh agent gets it too
        self.timeout = timeout
        # what the agents were told (the run's own adoption identity, their grace)
        self.run_id = str(config.get("adopt_run", ""))
        self.secret = str(config.get("adopt_secret", ""))
        self.grace = float(config.get("adopt_grace") or 0.0)
        self.first = adoption.silence_limit(provider.heartbeat_timeout) + 1.0
        self.cond = threading.Condition()
        self.due: dict[SSHNode, tuple[float, float, float]] = {}   # lost at, next try, wait
        self.ending = False
        self.busy = threading.Lock()        # held while a host is being reached
        self.thread: threading.Thread | None = None
        self.tries = 0
        self.given_up: list[str] = []       # hosts past the grace, not said to the run yet

    def lost(self, n: SSHNode) -> None:
        """The pump of ``n`` saw its link fail: try to get the host back (the run counts on
        it meanwhile: :meth:`coming`)."""
        with self.cond:
            if self.ending:
                return
            now = time.time()
            self.due[n] = (now, now + self.first, FIRST_WAIT)
            log.warning("node %s: its link failed; reaching it again for up to %g s (the "
                        "agents' adopt grace)", n.cfg.name, self.grace)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, daemon=True,
                                               name="taskflow-ssh-comeback")
                self.thread.start()
            self.cond.notify()

    def waiting(self) -> list[str]:
        """The names of the lost hosts still being tried."""
        with self.cond:
            return [n.cfg.name for n in self.due]

    def coming(self) -> bool:
        """A lost host is still being tried: a run with no node left waits for it."""
        return bool(self.due) and not self.ending

    def stop(self) -> None:
        """The run ends: no more tries; a try under way finishes first (bounded by the
        SSH time-outs)."""
        with self.cond:
            self.ending = True
            self.due.clear()
            self.cond.notify()
        with self.busy:
            pass
        if self.thread is not None:
            self.thread.join(1.0)

    def _next(self) -> tuple[SSHNode, float, float] | None:
        """Under the condition: wait for the next host due (None: the run ends)."""
        while not self.ending:
            now = time.time()
            for n, (lost_at, _, _) in list(self.due.items()):
                if now - lost_at > self.grace:
                    del self.due[n]
                    self.given_up.append(f"node {n.cfg.name} was not reached again within "
                                         f"the agents' grace ({self.grace:g} s)")
                    log.warning("%s: it stays lost", self.given_up[-1])
            if self.given_up:
                return None             # (said to the run outside the lock: _run)
            ready = [(at, n) for n, (_, at, _) in self.due.items() if at <= now]
            if ready:
                _, n = min(ready, key=_first_due)
                lost_at, _, wait = self.due[n]
                return n, lost_at, wait
            nxt = min((min(at, lost_at + self.grace) for lost_at, at, _ in self.due.values()),
                      default=None)
            self.cond.wait(None if nxt is None else max(0.01, nxt - now))
        return None

    def _run(self) -> None:
        while True:
            with self.cond:
                got = self._next()
                given_up, self.given_up = ([] if self.ending else self.given_up), []
                if got is None and not given_up:
                    return
                if got is not None:
                    self.busy.acquire()
            if given_up:        # tasks that only such a host could run fail now (no hang)
                self.sink.no_more_nodes("; ".join(given_up))
                continue
            assert got is not None
            n, lost_at, wait = got
            try:
                back = self._reach(n, lost_at)
            except Exception as exc:  # noqa: BLE001 - a try that fails is tried again
                log.debug("node %s: not reached again: %r", n.cfg.name, exc)
                back = False
            finally:
                self.busy.release()
            with self.cond:
                if back:
                    self.due.pop(n, None)
                elif n in self.due:
                    self.due[n] = (lost_at, time.time() + wait, min(MAX_WAIT, wait * 2))

    def _reach(self, n: SSHNode, lost_at: float) -> bool:
        """One try: connect, reach the waiting agent (or start a fresh one), join the run."""
        self.tries += 1
        src = AdoptFrom(self.run_id, self.secret, {n.cfg.name: ("ssh", n.cfg.host)})
        if not self.provider.reach_again(n, src, self.config, self.timeout):
            return False
        h = n.handle
        assert h is not None            # launched
        if self.ending:                 # the run ended meanwhile: the agent stops
            try:
                P.write_all(h.channel, P.encode(M.SHUTDOWN, None))
            except OSError:
                pass
            return True
        h.info["rejoined"] = time.time() - lost_at
        self.sink.add_node(h)
        return True


def _first_due(item: tuple[float, SSHNode]) -> float:
    due, _ = item
    return due
