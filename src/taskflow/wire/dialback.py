"""The dial-back handshake, shared by the master's server and the agent's connect.

A node agent that dials back (``python -m taskflow.node --connect HOST:PORT``)
and the master prove to each other that they hold the run's secret before
anything is unpickled, over TLS (the master's certificate is made for the
run; the agent does not need to know it in advance):

    TLS 1.3 handshake; each side takes F = SHA-256 of the master's certificate
    master -> agent   MAGIC + nonce_m (32 random bytes)
    agent  -> master  nonce_a (32 bytes) + proof("agent", nonce_m, nonce_a, F)
                      + 4-byte length + JSON meta (job id, node name, cpus)
    master -> agent   b"OK" + proof("master", nonce_a, nonce_m, F)
                      (or the connection is closed: wrong secret)

The whole handshake, TLS included, has one deadline (``AUTH_TIMEOUT`` s from
the connection), not one per read: a peer that sends a byte now and then is
dropped at the deadline all the same (:func:`tls_handshake`, :func:`recv_exact`
and :func:`send_all` wait for the socket against it).

``proof`` is HMAC-SHA256 keyed by the secret. Binding F into both proofs
means a listener in the middle, which must show its own certificate, can
neither use an agent's proof with the real master nor answer the agent
itself; neither side unpickles a frame before the other's proof checked out,
and every frame then travels inside TLS. The secret reaches agents in a file
readable only by the user (``SECRET_FILE_ENV``) or in the environment
(``SECRET_ENV``).
"""
from __future__ import annotations

import select
import socket
import time
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    import ssl

MAGIC = b"TFDB2"
NONCE = 32
PROOF = 32
MAX_META = 64 * 1024
AUTH_TIMEOUT = 5.0       # s for the whole handshake of one connection, TLS included
SECRET_ENV = "TASKFLOW_DIALBACK_SECRET"
SECRET_FILE_ENV = "TASKFLOW_DIALBACK_SECRET_FILE"


def proof(secret: str, role: bytes, first: bytes, second: bytes, binding: bytes) -> bytes:
    """What the holder of ``secret`` sends as ``role`` for these nonces and certificate."""
    import hashlib          # (here: every agent imports this module, few dial back)
    import hmac
    return hmac.new(secret.encode(), role + b"\0" + first + second + binding,
                    hashlib.sha256).digest()


def certificate_binding(der: bytes) -> bytes:
    """F: the SHA-256 of the master's certificate as seen on this connection."""
    import hashlib
    return hashlib.sha256(der).digest()


def client_context() -> ssl.SSLContext:
    """The agent's TLS: any certificate (the run's is new); the proofs authenticate it."""
    import ssl          # (ssl is imported where TLS is used: a local agent never loads it)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
    ctx.minimum_version = ssl.TLSVersion.TLSv1_3
    ctx.check_hostname = False
    ctx.verify_mode = ssl.CERT_NONE
    return ctx


def _wait(sock: socket.socket, write: bool, deadline: float) -> None:
    """Wait until ``sock`` is readable (writable) or the deadline passed (TimeoutError)."""
    left = deadline - time.monotonic()
    if left <= 0:
        raise TimeoutError("the handshake took longer than its deadline")
    p = select.poll()
    p.register(sock.fileno(), select.POLLOUT if write else select.POLLIN)
    if not p.poll(left * 1000):
        raise TimeoutError("the handshake took longer than its deadline")


def tls_handshake(sock: ssl.SSLSocket, deadline: float) -> None:
    """The TLS handshake of a socket wrapped with ``do_handshake_on_connect=False``."""
    import ssl
    sock.setblocking(False)
    while True:
        try:
            sock.do_handshake()
            return
        except ssl.SSLWantReadError:
            _wait(sock, False, deadline)
        except ssl.SSLWantWriteError:
            _wait(sock, True, deadline)


def recv_exact(sock: socket.socket, n: int, deadline: float | None = None) -> bytes:
    """Read exactly ``n`` bytes (EOFError when the peer closes first; TimeoutError past
    ``deadline``, a ``time.monotonic()`` value, on a non-blocking socket)."""
    import ssl          # (its exceptions: a TLS socket's; a Unix socket never raises them)
    parts, left = [], n
    while left:
        try:
            b = sock.recv(left)
        except (ssl.SSLWantReadError, BlockingIOError):
            if deadline is None:
                raise
            _wait(sock, False, deadline)
            continue
        except ssl.SSLWantWriteError:
            if deadline is None:
                raise
            _wait(sock, True, deadline)
            continue
        if not b:
            raise EOFError("connection closed during the handshake")
        parts.append(b)
        left -= len(b)
    return b"".join(parts)


def send_all(sock: socket.socket, data: bytes, deadline: float) -> None:
    """Write all of ``data`` to a non-blocking socket before ``deadline``."""
    import ssl
    view = memoryview(data)
    while view:
        try:
            view = view[sock.send(view):]
        except (ssl.SSLWantWriteError, BlockingIOError):
            _wait(sock, True, deadline)
        except ssl.SSLWantReadError:
            _wait(sock, False, deadline)
