"""What the SSH provider keeps for one remote node: its connection, channel and pumps.

Shared by :mod:`.ssh` (which starts the node and pumps its stream) and
:mod:`.comeback` (which reaches it again after its link failed).
"""
from __future__ import annotations

import socket
import threading
import time
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .handle import NodeHandle
    from .nodeconfig import NodeConfig


class SSHNode:
    """Everything the provider keeps for one remote node."""

    where: str                  # "node NAME (user@host:port)", set once connected

    def __init__(self, cfg: NodeConfig) -> None:
        self.cfg = cfg
        self.client: Any = None
        self.chan: Any = None
        self.handle: NodeHandle | None = None
        self.sock: socket.socket | None = None      # our end of the socketpair
        self.stderr = bytearray()
        self.last_rx = time.time()
        self.watch = False
        self.closing = False
        self.threads: list[threading.Thread] = []
        self.command = ""
        self.workdir = ""
