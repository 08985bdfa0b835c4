"""Dial-back transport, the master's side: node agents connect to it over TCP.

The master listens on 127.0.0.1 (port chosen by the OS) and creates a
per-run secret (``secrets.token_hex``); the handshake, before any pickle is
read, is :mod:`taskflow.wire.dialback` (the agent's side is
:mod:`taskflow.agent.dialback`). Anything else (wrong secret, garbage,
silence) is refused and closed, and logged once per address a minute (a
stranger's flood is one line, then a count: :mod:`taskflow.netguard.summary`).
Then the connection carries the one framed protocol (HELLO -> READY), over
the socket fd for both directions, like every other transport.

Strangers cannot hold the port: a connection has ``AUTH_TIMEOUT`` s for its
whole handshake, TLS included (not per read); at most ``PER_ADDRESS``
connections of one address are in their handshake at once and at most
``MAX_HANDSHAKES`` overall, and one more closes the *oldest* of them (of its
address first): a real agent's handshake takes milliseconds, so it is never
the oldest, and it is admitted while strangers hold connections from any
address, its own included. One thread per handshake, so at most
``MAX_HANDSHAKES`` of them.
"""
from __future__ import annotations

import hmac
import json
import logging
import os
import secrets
import socket
import ssl
import struct
import threading
import time
from collections import OrderedDict, deque
from typing import TYPE_CHECKING, Any, Callable

from ..errors import NodeStartError
from ..netguard.summary import Summary
from ..wire.tlschannel import TlsChannel
from ..wire.dialback import (AUTH_TIMEOUT, MAGIC, MAX_META, NONCE, PROOF, SECRET_ENV,
                             SECRET_FILE_ENV, certificate_binding, proof, recv_exact, send_all,
                             tls_handshake)
from .handle import NodeHandle
from .tls import server_context

MAX_HANDSHAKES = 32      # connections in their handshake at once; one more closes the oldest
PER_ADDRESS = 4          # ... of one source address
REFUSALS_KEPT = 1000     # refusal reasons kept in memory (the last ones)

if TYPE_CHECKING:
    from ..wire.messages import Hello

log = logging.getLogger(__name__)

__all__ = ["DialbackServer", "write_secret", "SECRET_ENV", "SECRET_FILE_ENV"]


def write_secret(path: str, secret: str) -> str:
    """Write the secret to a new file of mode 0600; return its path."""
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.fchmod(fd, 0o600)
        os.write(fd, secret.encode())
    finally:
        os.close(fd)
    return path


class DialbackServer:
    """Accept agents that prove they hold the run's secret.

    ``on_node(handle)`` is called from a server thread with a handshaken
    :class:`NodeHandle` (HELLO sent, READY received); ``config(meta)`` gives
    the HELLO config for a connecting agent (its name and slots).
    """

    def __init__(self, config: Callable[[dict[str, Any]], Hello], on_node: Callable[[NodeHandle], None],
                 *, host: str = "127.0.0.1", secret: str | None = None,
                 memory_gb: float = 1.0, provider: Any = None,
                 ready_timeout: float = 60.0) -> None:
        self.secret = secret or secrets.token_hex(32)
        self.config = config
        self.on_node = on_node
        self.memory_gb = memory_gb
        self.provider = provider
        self.ready_timeout = ready_timeout
        self.refused: deque[str] = deque(maxlen=REFUSALS_KEPT)   # the last reasons (tests,
        #                                 reports); the log says them once per address a minute
        self.said = Summary(log)
        # a resumed master (providers/slurm/adopt.py): checks an earlier run's agent (meta
        # "adopt") on its connection, before any frame; raises to refuse it
        self.adopt_check: Callable[[ssl.SSLSocket, dict[str, Any]], None] | None = None
        self.failed: list[NodeStartError | OSError | EOFError] = []   # agents that
        #                                 authenticated but failed their start
        self.tls, cert = server_context()
        self.binding = certificate_binding(cert)
        # connections in their handshake, oldest first: descriptor -> source address (a
        # descriptor leaves before it is closed, under the lock: never one reused)
        self._pending: OrderedDict[int, str] = OrderedDict()
        self._dropped: dict[int, str] = {}      # shut to make room: why
        self._lock = threading.Lock()
        self.sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        self.sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        self.sock.bind((host, 0))
        self.sock.listen(128)
        self.host, self.port = self.sock.getsockname()[:2]
        self.closed = False
        self._thread = threading.Thread(target=self._accept_loop, name="taskflow-dialback",
                                        daemon=True)
        self._thread.start()

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    def _accept_loop(self) -> None:
        while not self.closed:
            try:
                conn, peer = self.sock.accept()
            except OSError:
                return
            self._admit(conn.fileno(), peer)
            threading.Thread(target=self._serve, args=(conn, peer), daemon=True,
                             name="taskflow-dialback-auth").start()

    def _admit(self, conn: int, peer: Any) -> None:
        """Make room for a new handshake: shut the oldest of its address past PER_ADDRESS,
        the oldest of all past MAX_HANDSHAKES (their threads see the end and refuse them)."""
        host, *_port = peer             # (host, port[, flow, scope])
        host = str(host)
        with self._lock:
            mine = [c for c, h in self._pending.items() if h == host]
            victims = mine[:len(mine) + 1 - PER_ADDRESS] if len(mine) >= PER_ADDRESS else []
            rest = len(self._pending) - len(victims)
            if rest >= MAX_HANDSHAKES:
                victims += [c for c in self._pending if c not in victims][:rest + 1
                                                                          - MAX_HANDSHAKES]
            for c in victims:
                del self._pending[c]
                self._dropped[c] = f"closed to make room: more than {PER_ADDRESS} " \
                    f"handshakes from {host} at once" if c in mine else \
                    f"closed to make room: more than {MAX_HANDSHAKES} handshakes at once"
            self._pending[conn] = host
            for c in victims:
                try:
                    s = socket.socket(fileno=c)
                    try:
                        s.shutdown(socket.SHUT_RDWR)
                    finally:
                        s.detach()          # (the descriptor stays its thread's)
                except OSError:
                    pass

    def _done(self, fd: int) -> str | None:
        """A handshake ends (before its socket is closed): why it was shut, if it was."""
        with self._lock:
            self._pending.pop(fd, None)
            return self._dropped.pop(fd, None)

    def _refuse(self, conn: socket.socket | ssl.SSLSocket, peer: Any, why: str) -> None:
        host, port = peer[:2]
        msg = f"dial-back connection from {host}:{port} refused: {why}"
        self.refused.append(msg)
        self.said.add(str(host), msg)
        try:
            conn.close()
        except OSError:
            pass

    def _serve(self, raw: socket.socket, peer: Any) -> None:
        """One connection's handshake, then its agent's start (the handshake leaves
        ``_pending`` before its socket may close: its descriptor number is then free)."""
        fd = raw.fileno()
        conn: socket.socket | ssl.SSLSocket = raw
        deadline = time.monotonic() + AUTH_TIMEOUT      # for all of it, TLS included
        try:
            raw.setblocking(False)
            conn = self.tls.wrap_socket(raw, server_side=True, do_handshake_on_connect=False)
            tls_handshake(conn, deadline)
            meta = self._authenticate(conn, deadline)
            if meta.get("adopt") is not None:   # an earlier run's agent: its proof first
                if self.adopt_check is None:
                    raise PermissionError("an agent of an earlier run asks to be adopted, "
                                          "but this master adopts none now (it resumes no "
                                          "run, or its wait for them is over)")
                self.adopt_check(conn, meta)
        except Exception as exc:  # noqa: BLE001 - any failure is a refusal
            why = str(exc) or type(exc).__name__
            if isinstance(exc, TimeoutError):
                why = f"no complete handshake within {AUTH_TIMEOUT:g} s"
            self._refuse(conn, peer, self._done(fd) or why)
            return
        self._done(fd)
        if self.closed:
            conn.close()
            return
        assert isinstance(conn, ssl.SSLSocket)
        conn.setblocking(True)
        conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        chan = TlsChannel(conn)
        cfg = self.config(meta)
        slots = cfg["slots"]
        assert slots is not None        # config() names the slots of a dial-back node
        h = NodeHandle(cfg["name"], chan.rfd, chan.wfd, slots=int(slots),
                       memory_gb=float(meta.get("memory_gb") or self.memory_gb),
                       provider=self.provider, channel=chan)
        h.meta = meta
        h.job_id = meta.get("job_id")
        try:
            peer_host, *_ = peer
            h.handshake(cfg, self.ready_timeout, describe=f" (dial-back from {peer_host})")
        except (NodeStartError, OSError, EOFError) as exc:
            self.failed.append(exc)
            msg = f"dial-back agent {cfg['name']} (job {meta.get('job_id')}) failed its start: {exc}"
            log.warning(msg)
            h.close()
            return
        h.info.update({k: v for k, v in meta.items() if k not in h.info})
        self.on_node(h)

    def _authenticate(self, conn: ssl.SSLSocket, deadline: float) -> dict[str, Any]:
        """The agent proves the secret first; then the master proves it (see wire.dialback)."""
        nonce_m = secrets.token_bytes(NONCE)
        send_all(conn, MAGIC + nonce_m, deadline)
        nonce_a = recv_exact(conn, NONCE, deadline)
        mac = recv_exact(conn, PROOF, deadline)
        if not hmac.compare_digest(mac, proof(self.secret, b"agent", nonce_m, nonce_a,
                                              self.binding)):
            raise PermissionError("wrong secret (HMAC mismatch)")
        (size,) = struct.unpack(">I", recv_exact(conn, 4, deadline))
        if size > MAX_META:
            raise ValueError(f"meta of {size} bytes")
        meta = json.loads(recv_exact(conn, size, deadline).decode())
        if not isinstance(meta, dict):
            raise ValueError("meta is not an object")
        send_all(conn, b"OK" + proof(self.secret, b"master", nonce_a, nonce_m, self.binding),
                 deadline)
        return meta

    def close(self) -> None:
        self.closed = True
        self.said.flush()
        try:
            self.sock.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass
        self.sock.close()
        self._thread.join(2.0)
