"""The master's side of adoption: what a run records, and reaching the agents it left.

An adoptable run (resumable, ``adopt_grace`` > 0) writes two user-only files
in its directory: ``adopt.secret`` (the secret its agents will ask a new
master to prove, :mod:`taskflow.wire.adoption`) and ``adopt.json`` (its nodes:
name, provider, host). A run resumed from it (:class:`AdoptFrom`) reads them,
takes ``adopt.lock`` (one master resumes a run at a time: a second is refused
with the first one's pid and host) and gives its providers the earlier run's id and
secret: a local provider connects to each node's socket itself, an SSH
provider runs ``taskflow.node --adopt`` on the host (:mod:`taskflow.agent.bridge`).
"""
from __future__ import annotations

import fcntl
import json
import logging
import os
import socket
import threading
from typing import TYPE_CHECKING, Any

from ..context import private_file
from ..errors import UsageError
from ..wire import adoption
from ..wire.dialback import AUTH_TIMEOUT
from .base import AdoptFrom as AdoptFrom     # (defined with the Provider, which holds one)

if TYPE_CHECKING:
    from ..wire.messages import Hello
    from .handle import NodeHandle

log = logging.getLogger(__name__)


def record(run_dir: str, run_id: str, grace: float, config: Hello) -> str:
    """An adoptable run's secret, made and kept in its directory (mode 0600); ``config``
    (the agents' HELLO) gets it."""
    secret = adoption.new_secret()
    path = private_file(os.path.join(run_dir, adoption.SECRET_NAME))
    with open(path, "w") as f:
        f.write(secret)
    config["adopt_grace"] = grace
    config["adopt_secret"] = secret
    config["adopt_run"] = run_id
    config["heartbeat_timeout"] = adoption.HEARTBEAT_TIMEOUT
    return secret


def record_nodes(run_dir: str, nodes: list[NodeHandle]) -> None:
    """The run's nodes, for a resumed master to check its cluster file against."""
    path = private_file(os.path.join(run_dir, adoption.NODES_NAME))
    with open(path, "w") as f:
        json.dump({"nodes": [{"name": n.name, "provider": _kind(n), "host": n.host or ""}
                             for n in nodes]}, f)


def _kind(n: NodeHandle) -> str:
    return n.provider.name if n.provider is not None else ""


def source(run_dir: str) -> tuple[AdoptFrom | None, str]:
    """The earlier run's adoption record, or None and why there is nothing to adopt."""
    run_id = os.path.basename(os.path.normpath(run_dir))
    try:
        with open(os.path.join(run_dir, adoption.SECRET_NAME)) as f:
            secret = f.read().strip()
        with open(os.path.join(run_dir, adoption.NODES_NAME)) as f:
            nodes = {n["name"]: (n["provider"], n["host"]) for n in json.load(f)["nodes"]}
    except (OSError, ValueError, KeyError, TypeError) as exc:
        return None, (f"run {run_id} left no agents to adopt (it kept no adoption record: "
                      f"{exc.__class__.__name__})")
    return AdoptFrom(run_id, secret, nodes, os.path.abspath(run_dir)), ""


def lock(run_dir: str) -> int:
    """Hold ``adopt.lock`` of the run being resumed (a descriptor, closed when the run
    ends); :class:`UsageError` naming the holder when another master resumes it."""
    path = os.path.join(run_dir, adoption.LOCK_NAME)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        pid, _, host = os.pread(fd, 200, 0).decode(errors="replace").strip().partition(" ")
        os.close(fd)
        holder = f"pid {pid} on {host}" if pid.isdigit() else "another master"
        raise UsageError(f"run {os.path.basename(os.path.normpath(run_dir))} is being "
                         f"resumed already, by {holder}: one master resumes a run at a time "
                         f"(wait for it, or stop it)") from None
    except OSError:
        os.close(fd)
        return -1
    os.ftruncate(fd, 0)
    os.pwrite(fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
    return fd


def mismatch(src: AdoptFrom, provider: str, nodes: dict[str, str]) -> str:
    """Why no node of ``provider`` (name -> host) is adoptable from ``src`` ("" if some is)."""
    theirs = {n: h for n, (p, h) in src.nodes.items() if p == provider}
    if not theirs:
        return ""
    if not any(theirs.get(n) == h for n, h in nodes.items()):
        return (f"adopts nothing from run {src.run_id}: its {provider} nodes "
                f"({', '.join(sorted(theirs))}) are not this run's (another cluster file?)")
    return ""


def connect_local(src: AdoptFrom, node: str) -> tuple[int | None, str]:
    """A local node's waiting agent: the connected socket's descriptor after the mutual
    proof (None, and why not, when there is none or it refused)."""
    try:
        path = adoption.socket_path(src.run_id, node)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(AUTH_TIMEOUT)
        sock.connect(path)
    except OSError:
        return None, ""             # none waits there: a fresh agent
    try:
        adoption.master_side(sock, src.secret, src.run_id, node, f"node {node}")
    except (adoption.Refused, OSError) as exc:
        sock.close()
        return None, str(exc)
    return sock.detach(), ""


def handshake_over(fd: int, src: AdoptFrom, node: str, where: str) -> None:
    """The mutual proof on an already connected stream (an SSH channel's socketpair)."""
    sock = socket.socket(fileno=os.dup(fd))
    try:
        adoption.master_side(sock, src.secret, src.run_id, node, where)
    finally:
        sock.close()


def relay(chan: Any, sock: socket.socket) -> None:
    """Both ways between an SSH channel and a socket, until either ends (a short talk)."""
    def back() -> None:
        try:
            while True:
                data = sock.recv(65536)
                if not data:
                    return
                chan.sendall(data)
        except (OSError, EOFError):
            pass
    threading.Thread(target=back, daemon=True).start()
    try:
        while True:
            data = chan.recv(65536)
            if not data:
                return
            sock.sendall(data)
    except (OSError, EOFError, socket.timeout):
        pass
