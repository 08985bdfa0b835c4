"""The comeback of a local node: its agent reached again after the master was paused.

A local agent's pipes break only when the agent closes them. In an adoptable
run that happens when the agent heard nothing from its master for its
heartbeat time-out (the master was stopped by SIGSTOP or Ctrl-Z, or its
machine frozen: runtime/loop/pause.py) and so took it for lost: then, with
tasks running, it keeps them and waits on its adoption socket for the grace
(agent/orphan.py); with none, it exits (status 0). When the master runs
again, its loop sees the broken stream and loses the node; the provider
(:meth:`~.local.LocalProvider.link_lost`) hands it to :class:`LocalComeback`,
which reaches it again as an SSH host that comes back is (providers/comeback.py):

- the agent waits on its socket: the master proves the run's *own* secret
  (wire/adoption.py; it is the same run, not an adoption), sends HELLO, and the
  agent answers READY with the tasks it kept; the node joins the run again
  under its old name (runtime/recovery/comeback.py claims what it kept: no
  task runs twice);
- the agent exited with status 0 without being told to (it had nothing to
  keep, or its grace ran out): a fresh agent starts for the node;
- the agent died otherwise (killed, crashed): the node stays lost, as before
  (its tasks ran again elsewhere, or the run ends with the reason).

Bounded: tries every :data:`TRY_EVERY` seconds, never past the agents' grace
after the loss; the run's end stops the thread before the nodes are dismissed.
"""
from __future__ import annotations

import logging
import threading
import time
from typing import TYPE_CHECKING, Protocol, Union

from ..wire import messages as M
from ..wire import protocol as P

if TYPE_CHECKING:
    from .base import NodeSink
    from .handle import NodeHandle

log = logging.getLogger(__name__)

TRY_EVERY = 0.2     # s between tries to reach a lost local agent (it listens within moments)

# what one try found: the node back (its new handle), not yet (None), or why never
Reached = Union["NodeHandle", str, None]


class LocalReacher(Protocol):
    """The local provider, as its comeback sees it."""

    def reach_again(self, lost: NodeHandle) -> Reached:
        """One try to reach the agent of ``lost`` again (its socket, or a fresh agent):
        its new handshaken handle; None when it may still come; why not when it will not."""


class LocalComeback:
    """The thread that takes one local provider's lost nodes back into the run."""

    def __init__(self, provider: LocalReacher, sink: NodeSink, grace: float) -> None:
        self.provider = provider
        self.sink = sink
        self.grace = grace
        self.cond = threading.Condition()
        self.due: dict[str, tuple[NodeHandle, float]] = {}   # name -> (lost handle, lost at)
        self.ending = False
        self.busy = threading.Lock()        # held while a node is being reached
        self.thread: threading.Thread | None = None

    def lost(self, node: NodeHandle) -> None:
        """The loop lost ``node`` by its stream: try to reach it again (the run counts on it
        meanwhile: :meth:`coming`)."""
        with self.cond:
            if self.ending:
                return
            self.due[node.name] = (node, time.time())
            log.warning("node %s: its stream broke (%s); reaching its agent again for up "
                        "to %g s (the agents' adopt grace)", node.name,
                        node.lost_reason or "it closed", self.grace)
            if self.thread is None:
                self.thread = threading.Thread(target=self._run, daemon=True,
                                               name="taskflow-local-comeback")
                self.thread.start()
            self.cond.notify()

    def coming(self) -> bool:
        """A lost node is still being tried: a run with no node left waits for it."""
        return bool(self.due) and not self.ending

    def stop(self) -> None:
        """The run ends: no more tries; a try under way finishes first (bounded by the
        handshake's time-out)."""
        with self.cond:
            self.ending = True
            self.due.clear()
            self.cond.notify()
        with self.busy:
            pass
        if self.thread is not None:
            self.thread.join(1.0)

    def _run(self) -> None:
        while True:
            with self.cond:
                while not self.ending and not self.due:
                    self.cond.wait()
                if self.ending:
                    return
                due = list(self.due.items())
                self.busy.acquire()
            try:
                for name, (node, lost_at) in due:
                    self._try(name, node, lost_at)
            finally:
                self.busy.release()
            with self.cond:
                if self.due and not self.ending:
                    self.cond.wait(TRY_EVERY)

    def _try(self, name: str, node: NodeHandle, lost_at: float) -> None:
        """One try for ``node``: back (it joins the run), not yet, or never (said)."""
        if self.ending:
            return
        try:
            got = self.provider.reach_again(node)
        except Exception as exc:  # noqa: BLE001 - a try that fails is tried again
            log.debug("node %s: not reached again: %r", name, exc)
            got = None
        if got is None and time.time() - lost_at > self.grace:
            got = f"it was not reached again within the agents' grace ({self.grace:g} s)"
        if got is None:
            return
        if isinstance(got, str):
            with self.cond:
                self.due.pop(name, None)
            cause = node.lost_reason or "its stream closed"
            why = f"no nodes left: node {name} was lost ({cause}) and {got}"
            log.warning("node %s stays lost: %s", name, got)
            self.sink.no_more_nodes(why)    # tasks only it could run fail now (no hang)
            return
        if self.ending:                     # the run ended meanwhile: the agent stops
            try:
                P.write_all(got.channel, P.encode(M.SHUTDOWN, None))
            except OSError:
                pass
            got.close()
            return
        got.info["rejoined"] = time.time() - lost_at
        self.sink.add_node(got)             # (before it leaves due: the run waits for it)
        with self.cond:
            self.due.pop(name, None)
