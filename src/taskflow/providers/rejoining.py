"""The thread that takes a provider's lost nodes back into the running run.

Both comebacks (an SSH host whose link comes back: :mod:`.comeback`; a local
agent after the master was paused: :mod:`.localcomeback`) share what this
class does: one thread, started at the first loss, tries each lost node
until it is back (it joins the run), said lost for good (past the agents'
grace, or a subclass's reason: the run is told, so tasks only it could run
fail instead of waiting), or the run ends. Between tries a node waits
``wait`` seconds, doubling up to ``max_wait``; the first try comes ``first``
seconds after the loss. While a node is being tried the run counts on it
(:meth:`coming`). The subclasses say how one try reaches a node.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Generic, Hashable, TypeVar, Union

if TYPE_CHECKING:
    from .base import NodeSink

log = logging.getLogger(__name__)

N = TypeVar("N", bound=Hashable)
Tried = Union[bool, str]    # one try: back (True), not yet (False), never (why, a line)


class Rejoining(Generic[N]):
    """Lost nodes tried again on one thread (see the module docstring)."""

    thread_name = "taskflow-comeback"

    def __init__(self, sink: NodeSink, grace: float, first: float, wait: float,
                 max_wait: float) -> None:
        self.sink = sink
        self.grace = grace
        self.first, self.wait, self.max_wait = first, wait, max_wait
        self.cond = threading.Condition()
        self.due: dict[N, tuple[float, float, float]] = {}    # lost at, next try, wait
        self.ending = False
        self.busy = threading.Lock()        # held while a node is being tried
        self.thread: threading.Thread | None = None
        self.given_up: list[str] = []       # nodes lost for good, not said to the run yet

    # -- what a subclass says -----------------------------------------------------------
    def label(self, node: N) -> str:
        """The node's name, as messages say it."""
        raise NotImplementedError

    def reach(self, node: N, lost_at: float) -> Tried:
        """One try to take ``node`` back into the run (it joins the run itself)."""
        raise NotImplementedError

    def past_grace(self, node: N) -> str:
        """Why ``node`` is lost for good when the grace ran out."""
        return (f"node {self.label(node)} was not reached again within the agents' grace "
                f"({self.grace:g} s)")

    # -- the run's side -------------------------------------------------------------------
    def lost(self, node: N, what: str) -> None:
        """``node`` was lost (``what``: how, for the warning): try to get it back."""
        with self.cond:
            if self.ending:
                return
            now = time.time()
            self.due[node] = (now, now + self.first, self.wait)
            log.warning("node %s: %s; reaching it again for up to %g s (the agents' adopt "
                        "grace)", self.label(node), what, self.grace)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, daemon=True,
                                               name=self.thread_name)
                self.thread.start()
            self.cond.notify()

    def waiting(self) -> list[str]:
        """The names of the lost nodes still being tried."""
        with self.cond:
            return [self.label(n) for n in self.due]

    def coming(self) -> bool:
        """A lost node is still being tried: a run with no node left waits for it."""
        return bool(self.due) and not self.ending

    def stop(self) -> None:
        """The run ends: no more tries; a try under way finishes first (bounded by the
        reaching's own time-outs)."""
        with self.cond:
            self.ending = True
            self.due.clear()
            self.cond.notify()
        with self.busy:
            pass
        if self.thread is not None:
            self.thread.join(1.0)

    # -- the thread -----------------------------------------------------------------------
    def _next(self) -> tuple[N, float, float] | None:
        """Under the condition: wait for the next node due (None: the run ends, or nodes
        were given up: said by :meth:`_run` outside the lock)."""
        while not self.ending:
            now = time.time()
            for n, (lost_at, _, _) in list(self.due.items()):
                if now - lost_at > self.grace:
                    del self.due[n]
                    self._give_up(self.past_grace(n))
            if self.given_up:
                return None
            ready = [(at, i) for i, (_, at, _) in enumerate(self.due.values()) if at <= now]
            if ready:
                n = list(self.due)[min(ready)[1]]
                lost_at, _, wait = self.due[n]
                return n, lost_at, wait
            nxt = min((min(at, lost_at + self.grace) for lost_at, at, _ in self.due.values()),
                      default=None)
            self.cond.wait(None if nxt is None else max(0.01, nxt - now))
        return None

    def _give_up(self, why: str) -> None:
        self.given_up.append(why)
        log.warning("%s: it stays lost", why)

    def _run(self) -> None:
        while True:
            with self.cond:
                got = self._next()
                given_up, self.given_up = ([] if self.ending else self.given_up), []
                if got is None and not given_up:
                    return
                if got is not None:
                    self.busy.acquire()
            if given_up:        # tasks that only such a node could run fail now (no hang)
                self.sink.no_more_nodes("; ".join(given_up))
                continue
            assert got is not None
            n, lost_at, wait = got
            try:
                back = self.reach(n, lost_at)
            except Exception as exc:  # noqa: BLE001 - a try that fails is tried again
                log.debug("node %s: not reached again: %r", self.label(n), exc)
                back = False
            finally:
                self.busy.release()
            with self.cond:
                if back is True or isinstance(back, str):
                    self.due.pop(n, None)
                    if isinstance(back, str):
                        self._give_up(back)
                elif n in self.due:
                    self.due[n] = (lost_at, time.time() + wait, min(self.max_wait, wait * 2))
