"""What every provider offers the runtime: the :class:`Provider` base class.

A provider obtains nodes from somewhere (child processes, SSH hosts, Slurm
jobs) and gives the runtime handshaken :class:`~.handle.NodeHandle` objects.
The base class holds the optional parts with their do-nothing defaults, so
the runtime calls them on every provider instead of asking which ones exist.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, NamedTuple, Protocol

if TYPE_CHECKING:
    from ..wire.messages import Hello
    from .handle import NodeHandle


class AdoptFrom(NamedTuple):
    """The earlier run whose agents a resumed master looks for (:mod:`.adopting` reads it
    from the run's directory; the runtime gives it to every provider as ``adopt``)."""

    run_id: str
    secret: str
    nodes: dict[str, tuple[str, str]]     # node name -> (provider, host)
    run_dir: str = ""                     # its directory (a Slurm run's: where its dial-back
    #                                       agents look for a resumed master, slurm/adopt.py)


class NodeSink(Protocol):
    """The running runtime, as an elastic provider (Slurm pilots) sees it."""

    def add_node(self, node: NodeHandle) -> None:
        """A node joins the run (any thread)."""

    def work_waiting(self) -> bool:
        """Tasks are ready and waiting for a slot."""

    def node_event(self, kind: str, node: str, extra: Any) -> None:
        """Record something about a node in the run's journal: ``node_state`` (how a
        Slurm job ended), ``log`` (a provider's line, ``(level, text)``, journaled as a
        line of task 0 from ``node``)."""

    def no_more_nodes(self, reason: str) -> None:
        """The provider will bring no more nodes (it gave up): tasks that no node left can
        run fail, with ``reason``, instead of waiting (any thread)."""


class Provider:
    name = "provider"
    # a resumed run: the earlier run whose waiting agents to adopt (providers/adopting.py)
    adopt: AdoptFrom | None = None
    # its nodes are named by the cluster file (a resumed master that finds none of the
    # earlier run's names was given another file); False: found otherwise (Slurm's jobs)
    named_by_config = True

    def dismiss_lost(self, run_id: str, secret: str) -> None:
        """The run ends: agents of nodes it lost that may wait for a resumed master are
        told to stop, where they can be reached (SSH hosts: providers/ssh.py)."""

    def adoption_refusals(self) -> list[str]:
        """Why agents of the earlier run were not adopted (said once by the runtime)."""
        return []

    def launch(self) -> None:
        """Start the nodes' processes now, before the run's other start-up work, so that
        their interpreters load while it is done; :meth:`start` then handshakes (the
        default: :meth:`start` does it all)."""

    def start(self, config: Hello, timeout: float, *,
              adoptable: bool = False) -> list[NodeHandle]:
        """Start the first nodes and return them, handshaken (HELLO sent, READY read).

        ``adoptable``: the run is adoptable (resumable, ``adopt_grace`` > 0, said by the
        runtime): its agents outlive a lost master. ``config`` carries what the agents need
        of that (the grace, the run's adoption secret); a provider does not read it back
        to learn whether the run is adoptable."""
        raise NotImplementedError

    def stop(self) -> None:
        """Stop every node this provider started (and anything it submitted)."""
        raise NotImplementedError

    def kill(self, handle: NodeHandle) -> None:
        """Kill one node's agent at once (tests of node loss); the default can't."""

    def attach(self, sink: NodeSink) -> None:
        """The run has started: nodes that join later go to ``sink`` (elastic providers)."""

    def nodes_coming(self) -> bool:
        """True while more nodes will join (a pending pilot job): do not give up on a task."""
        return False

    def longest_window(self) -> float | None:
        """The longest time a node of this provider can give one task, in seconds (its job's
        walltime less the drain margin); None: its nodes last as long as the run."""
        return None

    def explain_end(self, node: NodeHandle) -> None:
        """A node is gone: add what the provider knows about why (e.g. its job's state)."""

    def link_lost(self, node: NodeHandle) -> None:
        """An adoptable run's loop lost ``node`` by its stream (it ended or broke; not a
        node that left): a provider that can reach its agent again starts trying (local
        agents: providers/localcomeback.py; SSH hosts' links are watched by their own
        pumps). Called before the loss is applied to its tasks, so that
        :meth:`nodes_coming` counts it."""


def longest_window(providers: list[Provider]) -> float | None:
    """The longest task any node of the run can ever start (None: no bound, some provider's
    nodes have no end)."""
    windows = [p.longest_window() for p in providers]
    if not windows or any(w is None for w in windows):
        return None
    return max(w for w in windows if w is not None)
