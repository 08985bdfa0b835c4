"""Dial-back transport, the agent's side: join the master over TCP.

``python -m taskflow.node --connect HOST:PORT`` (:mod:`.serve`) opens
the connection, passes the handshake of :mod:`taskflow.wire.dialback` with the
run's secret, then runs an ordinary agent over the socket; an orphaned agent
dials a resumed master the same way (:mod:`.redial`).
"""
from __future__ import annotations

import hmac
import json
import os
import secrets
import socket
import ssl
import struct
import time
from typing import Any

from ..wire.dialback import (MAGIC, NONCE, PROOF, SECRET_ENV, SECRET_FILE_ENV,
                             certificate_binding, client_context, proof, recv_exact, send_all,
                             tls_handshake)


def read_secret() -> str:
    path = os.environ.get(SECRET_FILE_ENV)
    if path:
        with open(path) as f:
            return f.read().strip()
    s = os.environ.get(SECRET_ENV)
    if not s:
        raise SystemExit(f"taskflow.node --connect: set {SECRET_FILE_ENV} or {SECRET_ENV}")
    return s


def agent_meta() -> dict[str, Any]:
    """What the agent tells the master about where it runs (Slurm job, node, CPUs)."""
    env = os.environ
    cpus = env.get("SLURM_CPUS_ON_NODE") or env.get("SLURM_CPUS_PER_TASK")
    return {"job_id": env.get("SLURM_JOB_ID"), "slurm_node": env.get("SLURMD_NODENAME"),
            "step_id": env.get("SLURM_STEP_ID"), "procid": env.get("SLURM_PROCID"),
            "cpus": int(cpus) if cpus and cpus.isdigit() else os.cpu_count(),
            "hostname": socket.gethostname(), "pid": os.getpid()}


def connect(address: str, secret: str, meta: dict[str, Any] | None = None,
            timeout: float = 30.0) -> ssl.SSLSocket:
    """Open the TLS connection and pass the mutual handshake; return the socket.

    Nothing is unpickled before the master proved it holds ``secret`` for
    this very connection (:mod:`taskflow.wire.dialback`). ``timeout`` is for
    all of it (connecting, TLS, the proofs), however the master trickles its bytes.
    """
    host, _, port = address.rpartition(":")
    deadline = time.monotonic() + timeout
    raw = socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout)
    try:
        raw.setblocking(False)
        sock = client_context().wrap_socket(raw, do_handshake_on_connect=False)
        tls_handshake(sock, deadline)
    except (ssl.SSLError, OSError) as exc:
        raw.close()
        raise ConnectionError(f"{address}: no TLS connection ({exc}): not a taskflow master "
                              f"of this version") from None
    try:
        der = sock.getpeercert(binary_form=True)
        if not der:
            raise ConnectionError(f"{address} showed no certificate")
        binding = certificate_binding(der)
        head = recv_exact(sock, len(MAGIC) + NONCE, deadline)
        if head[:len(MAGIC)] != MAGIC:
            raise ConnectionError(f"{address} is not a taskflow master (of this version)")
        nonce_m = head[len(MAGIC):]
        nonce_a = secrets.token_bytes(NONCE)
        body = json.dumps(meta if meta is not None else agent_meta()).encode()
        send_all(sock, nonce_a + proof(secret, b"agent", nonce_m, nonce_a, binding)
                 + struct.pack(">I", len(body)) + body, deadline)
        reply = recv_exact(sock, 2 + PROOF, deadline)
        if reply[:2] != b"OK" or not hmac.compare_digest(
                reply[2:], proof(secret, b"master", nonce_a, nonce_m, binding)):
            raise ConnectionError(f"{address} did not prove it holds the run's secret: "
                                  f"refusing it")
    except EOFError:
        sock.close()
        raise ConnectionError(f"{address} closed the connection during the handshake: it "
                              f"refused this agent (is the secret this run's?)") from None
    except TimeoutError:
        sock.close()
        raise ConnectionError(f"{address} did not finish the handshake within {timeout:g} s") \
            from None
    except BaseException:
        sock.close()
        raise
    sock.setblocking(True)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock
