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
after the loss (the schedule and the thread are :class:`~.rejoining.Rejoining`'s,
shared with the SSH comeback); the run's end stops the thread before the nodes
are dismissed.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol, Union

from ..wire import messages as M
from ..wire import protocol as P
from .rejoining import Rejoining, Tried

if TYPE_CHECKING:
    from .base import NodeSink
    from .handle import NodeHandle

TRY_EVERY = 0.2     # s between tries to reach a lost local agent (it listens within moments)

# what one try found: the node back (its new handle), not yet (None), or why never
Reached = Union["NodeHandle", str, None]


class LocalReacher(Protocol):
    """The local provider, as its comeback sees it."""

    def reach_again(self, lost: NodeHandle) -> Reached:
        """One try to reach the agent of ``lost`` again (its socket, or a fresh agent):
        its new handshaken handle; None when it may still come; why not when it will not."""


class LocalComeback(Rejoining["NodeHandle"]):
    """The thread that takes one local provider's lost nodes back into the run."""

    thread_name = "taskflow-local-comeback"

    def __init__(self, provider: LocalReacher, sink: NodeSink, grace: float) -> None:
        super().__init__(sink, grace, 0.0, TRY_EVERY, TRY_EVERY)
        self.provider = provider

    def label(self, node: NodeHandle) -> str:
        return node.name

    def past_grace(self, node: NodeHandle) -> str:
        return self._lost_for_good(node, f"it was not reached again within the agents' "
                                         f"grace ({self.grace:g} s)")

    def _lost_for_good(self, node: NodeHandle, why: str) -> str:
        return (f"no nodes left: node {node.name} was lost "
                f"({node.lost_reason or 'its stream closed'}) and {why}")

    def reach(self, node: NodeHandle, lost_at: float) -> Tried:
        """One try for ``node``: back (it joins the run), not yet, or never (why)."""
        if self.ending:
            return True
        got = self.provider.reach_again(node)
        if got is None:
            return False
        if isinstance(got, str):
            return self._lost_for_good(node, got)
        if self.ending:                     # the run ended meanwhile: the agent stops
            try:
                P.write_all(got.channel, P.encode(M.SHUTDOWN, None))
            except OSError:
                pass
            got.close()
            return True
        got.info["rejoined"] = time.time() - lost_at
        self.sink.add_node(got)             # (before it leaves due: the run waits for it)
        return True
