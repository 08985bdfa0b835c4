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

When to try is :class:`~.rejoining.Rejoining`'s (shared with the local
comeback); how to reach a host is the SSH provider's
(:meth:`HostReacher.reach_again`), which it sees through that narrow protocol.
"""
from __future__ import annotations

import time
from typing import TYPE_CHECKING, Protocol

from ..wire import adoption
from ..wire import messages as M
from ..wire import protocol as P
from .base import AdoptFrom
from .rejoining import Rejoining

if TYPE_CHECKING:
    from ..wire.messages import Hello
    from .base import NodeSink
    from .sshnode import SSHNode

FIRST_WAIT = 2.0        # s between the first tries to reach a lost host again ...
MAX_WAIT = 30.0         # ... doubling up to this


class HostReacher(Protocol):
    """The SSH provider, as its comeback sees it."""

    @property
    def heartbeat_timeout(self) -> float: ...

    def reach_again(self, n: SSHNode, src: AdoptFrom, config: Hello, timeout: float) -> bool:
        """One try to reach lost host ``n`` (its waiting agent, proving ``src``'s secret, or
        a fresh one); False, ``n`` as it was, when the host is not back yet."""


class Comeback(Rejoining["SSHNode"]):
    """The thread that takes lost hosts of one SSH provider back into the run (an
    adoptable run's: the provider makes it only then)."""

    thread_name = "taskflow-ssh-comeback"

    def __init__(self, provider: HostReacher, sink: NodeSink, config: Hello,
                 timeout: float) -> None:
        super().__init__(sink, float(config.get("adopt_grace") or 0.0),
                         adoption.silence_limit(provider.heartbeat_timeout) + 1.0,
                         FIRST_WAIT, MAX_WAIT)
        self.provider = provider
        self.config = config            # the agents' HELLO: a fresh agent gets it too
        self.timeout = timeout
        # what the agents were told (the run's own adoption identity)
        self.run_id = str(config.get("adopt_run", ""))
        self.secret = str(config.get("adopt_secret", ""))
        self.tries = 0

    def label(self, node: SSHNode) -> str:
        return node.cfg.name

    def reach(self, n: SSHNode, lost_at: float) -> bool:
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
