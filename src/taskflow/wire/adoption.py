"""Adoption: a resumed master takes over the agents its dead predecessor left running.

An agent of an adoptable run (``Hello.adopt_grace`` > 0) that loses its
master (the stream closed without SHUTDOWN, or the master silent for the
heartbeat timeout) keeps its running tasks, holds their results, starts
nothing new, and listens on a Unix socket at :func:`socket_path` (in a
directory of its own user, mode 0700) for ``adopt_grace`` seconds. A
resumed master reaches it there: directly for a local node, through
``python -m taskflow.node --adopt PATH`` over SSH for an SSH node (a relay:
stdin/stdout to the socket, :func:`taskflow.agent.serve.relay`).

Before either side unpickles anything, both prove they hold the run's
secret, as the dial-back handshake does (:mod:`.dialback`), with the run
id and node name in place of a certificate::

    agent  -> master  MAGIC + nonce_a (32 random bytes)
    master -> agent   nonce_m + proof("master", nonce_a, nonce_m, B)
    agent  -> master  b"OK" + proof("agent", nonce_m, nonce_a, B)
                      or b"NO" and the connection closed: wrong secret

where B names the run and the node (:func:`binding`): a master of another
run, or one given another cluster file (another node name), cannot pass, and
an agent's proof is good for this one connection only. The whole handshake
has one deadline (:data:`AUTH_TIMEOUT` s). The socket's directory is the
user's alone and the agent checks the peer's uid (``SO_PEERCRED``), so only
the user reaches the socket at all; the proofs make sure it is this run's
master.

Every agent imports this module (its constants), but only an orphaned agent or a
resuming master runs its handshake: ``hashlib``, ``hmac``, ``secrets`` and
``tempfile`` are imported by the functions that use them, not at an agent's start.
"""
from __future__ import annotations

import os
import socket
import struct
import time

from ..context import own_dir
from .dialback import AUTH_TIMEOUT, NONCE, PROOF, proof, recv_exact, send_all

MAGIC = b"TFAD1"
ADOPT_GRACE = 600.0      # s an agent waits for a new master (``--adopt-grace``; 0: it exits)
HEARTBEAT_TIMEOUT = 15.0 # s of silence after which an agent takes its master for lost
PING_EVERY = 2.0         # s between the master's PINGs


def silence_limit(heartbeat_timeout: float) -> float:
    """How long an agent hears nothing before it takes its master for lost: the heartbeat
    time-out, but at least three PINGs' time (a short time-out is the master's, for
    noticing an agent; a busy master's loop may be a PING late)."""
    return max(heartbeat_timeout, 3 * PING_EVERY)
SECRET_NAME = "adopt.secret"     # the run's secret, in its directory (mode 0600)
NODES_NAME = "adopt.json"        # the run's nodes a resumed master looks for
LOCK_NAME = "adopt.lock"         # held by the master resuming the run
NO_SOCKET = 4                    # exit status of the bridge when no agent waits there
CONNECTED = b"A"                 # the bridge's first byte on stdout: relaying to the agent
FRESH = b"N"                     # (the shell's, when it starts a new agent instead)


class Refused(Exception):
    """The other side did not prove the run's secret (message: why, for the user)."""


def socket_dir() -> str:
    """The user's own directory for adoption sockets on this host (made 0700 if needed;
    refused when it is another user's or open to others)."""
    import tempfile
    path = os.path.join(tempfile.gettempdir(), f"taskflow-adopt-{os.getuid()}")
    try:
        return own_dir(path)
    except PermissionError as exc:
        raise PermissionError(f"{exc}: no adoption socket there") from None


def socket_name(run_id: str, node: str) -> str:
    """The socket's file name for ``node`` of run ``run_id`` (short: a Unix socket's path
    holds at most 107 bytes)."""
    import hashlib
    return hashlib.blake2b(f"{run_id}\0{node}".encode(), digest_size=12).hexdigest() + ".sock"


def socket_path(run_id: str, node: str) -> str:
    return os.path.join(socket_dir(), socket_name(run_id, node))


def binding(run_id: str, node: str) -> bytes:
    """B: what both proofs are bound to (the run and the node)."""
    import hashlib
    return hashlib.sha256(f"taskflow adopt\0{run_id}\0{node}".encode()).digest()


def new_secret() -> str:
    """32 random bytes from the OS, in hex (what ``secrets.token_hex(32)`` gives, without
    loading ``secrets``, ``random`` and ``hmac`` into every master's start)."""
    return os.urandom(32).hex()


def peer_uid(sock: socket.socket) -> int:
    """The uid of the process at the other end of a Unix socket."""
    creds = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
    return int(struct.unpack("3i", creds)[1])


def agent_side(sock: socket.socket, secret: str, run_id: str, node: str) -> None:
    """The agent's half on a non-blocking socket: return when the master proved the
    secret (and the agent answered with its own proof); :class:`Refused` otherwise."""
    import hmac
    import secrets
    deadline = time.monotonic() + AUTH_TIMEOUT
    b = binding(run_id, node)
    nonce_a = secrets.token_bytes(NONCE)
    try:
        send_all(sock, MAGIC + nonce_a, deadline)
        got = recv_exact(sock, NONCE + PROOF, deadline)
        nonce_m, theirs = got[:NONCE], got[NONCE:]
        if not hmac.compare_digest(theirs, proof(secret, b"master", nonce_a, nonce_m, b)):
            send_all(sock, b"NO", deadline)
            raise Refused("the master did not prove the run's secret")
        send_all(sock, b"OK" + proof(secret, b"agent", nonce_m, nonce_a, b), deadline)
    except (EOFError, TimeoutError, OSError) as exc:
        raise Refused(f"the handshake did not finish: {exc}") from None


def master_side(sock: socket.socket, secret: str, run_id: str, node: str,
                where: str) -> None:
    """The master's half (blocking or not): return when the agent accepted this master and
    proved the secret in turn; :class:`Refused` with the reason otherwise."""
    import hmac
    import secrets
    deadline = time.monotonic() + AUTH_TIMEOUT
    b = binding(run_id, node)
    sock.setblocking(False)
    try:
        head = recv_exact(sock, len(MAGIC) + NONCE, deadline)
        if head[:len(MAGIC)] != MAGIC:
            raise Refused(f"{where}: what answers there is not a taskflow agent waiting for "
                          f"adoption (of this version)")
        nonce_a = head[len(MAGIC):]
        nonce_m = secrets.token_bytes(NONCE)
        send_all(sock, nonce_m + proof(secret, b"master", nonce_a, nonce_m, b), deadline)
        reply = recv_exact(sock, 2, deadline)
        if reply != b"OK":
            raise Refused(f"{where}: the agent refused this master: it does not hold the "
                          f"secret of run {run_id} for node {node} (another run's secret, or "
                          f"another cluster file?)")
        theirs = recv_exact(sock, PROOF, deadline)
        if not hmac.compare_digest(theirs, proof(secret, b"agent", nonce_m, nonce_a, b)):
            raise Refused(f"{where}: the agent did not prove the run's secret: refusing it")
    except EOFError:
        raise Refused(f"{where}: the agent closed the connection during the handshake "
                      f"(it refused this master: another run's secret?)") from None
    except TimeoutError:
        raise Refused(f"{where}: no handshake within {AUTH_TIMEOUT:g} s") from None
    sock.setblocking(True)
