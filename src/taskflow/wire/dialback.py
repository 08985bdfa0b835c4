"""The dial-back handshake, shared by the master's server and the agent's connect.

A node agent that dials back (``python -m taskflow.node --connect HOST:PORT``)
proves it holds the run's secret before anything is unpickled:

    master -> agent   MAGIC + NONCE random bytes (the challenge)
    agent  -> master  HMAC-SHA256(secret, challenge) (32 bytes)
                      + 4-byte length + JSON meta (job id, node name, cpus)
    master -> agent   b"OK" (or the connection is closed)

The secret is handed to agents in a file readable only by the user
(``SECRET_FILE_ENV``) or in the environment (``SECRET_ENV``).
"""
from __future__ import annotations

import hashlib
import hmac
import socket

MAGIC = b"TFDB1"
NONCE = 32
MAX_META = 64 * 1024
AUTH_TIMEOUT = 5.0
SECRET_ENV = "TASKFLOW_DIALBACK_SECRET"
SECRET_FILE_ENV = "TASKFLOW_DIALBACK_SECRET_FILE"


def answer(secret: str, nonce: bytes) -> bytes:
    """What a holder of ``secret`` answers to the challenge ``nonce``."""
    return hmac.new(secret.encode(), nonce, hashlib.sha256).digest()


def recv_exact(sock: socket.socket, n: int) -> bytes:
    """Read exactly ``n`` bytes (EOFError when the peer closes first)."""
    parts, left = [], n
    while left:
        b = sock.recv(left)
        if not b:
            raise EOFError("connection closed during the handshake")
        parts.append(b)
        left -= len(b)
    return b"".join(parts)
