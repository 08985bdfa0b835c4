"""How ``python -m taskflow.node`` becomes an agent: on stdin/stdout, or after dialling back.

- ``--stdio`` (:func:`serve_stdio`, local and SSH nodes): the master started
  the agent and holds its stdin and stdout.
- ``--connect HOST:PORT`` (:func:`serve_connect`, Slurm's batch and pilot
  jobs): the agent dials back to the master (:mod:`.dialback`, the connection
  itself, which an orphaned agent also uses to dial a resumed master:
  :mod:`.rejoin`).

Either way one :class:`~.agent.Agent` then reads the master's HELLO
(:meth:`~.agent.Agent.handshake`) and runs. The imports are deferred: a
``--connect`` agent dials before it loads the agent, a ``--stdio`` one never
loads ``ssl``.
"""
from __future__ import annotations

import os
import sys


def serve_stdio() -> None:
    """Run an agent on stdin/stdout; stray prints by tasks go to stderr."""
    from .agent import Agent
    rfd = os.dup(0)
    wfd = os.dup(1)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.dup2(2, 1)
    os.close(devnull)
    sys.stdout = sys.stderr
    agent = Agent(rfd, wfd)
    agent.handshake()
    agent.run()


def serve_connect(address: str) -> None:
    """Dial back, then be an agent."""
    from ..wire.tlschannel import TlsChannel
    from .dialback import connect, read_secret
    try:
        sock = connect(address, read_secret())
    except (OSError, EOFError) as exc:
        print(f"taskflow.node: cannot join the master at {address}: {exc}", file=sys.stderr)
        raise SystemExit(3) from None
    from .agent import Agent
    chan = TlsChannel(sock)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    agent = Agent(chan.rfd, chan.wfd, channel=chan)    # executors close the socket's fd
    agent.handshake()
    agent.run()
