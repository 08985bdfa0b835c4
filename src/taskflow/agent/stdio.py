"""``python -m taskflow.node --stdio``: an agent on stdin/stdout (local and SSH nodes)."""
from __future__ import annotations

import os
import sys

from .agent import Agent


def serve_stdio() -> None:
    """Run an agent on stdin/stdout; stray prints by tasks go to stderr."""
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
