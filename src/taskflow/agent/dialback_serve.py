"""``python -m taskflow.node --connect HOST:PORT``: dial back to the master, then be an agent.

(Apart from :mod:`.dialback`, the connection itself, which the agent also uses to
dial a resumed master: :mod:`.rejoin`.)
"""
from __future__ import annotations

import os
import sys

from ..wire.tlschannel import TlsChannel
from .dialback import connect, read_secret


def serve_connect(address: str) -> None:
    """Dial back, then be an agent."""
    from .agent import Agent
    try:
        sock = connect(address, read_secret())
    except (OSError, EOFError) as exc:
        print(f"taskflow.node: cannot join the master at {address}: {exc}", file=sys.stderr)
        raise SystemExit(3) from None
    chan = TlsChannel(sock)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    agent = Agent(chan.rfd, chan.wfd, channel=chan)    # executors close the socket's fd
    agent.handshake()
    agent.run()
