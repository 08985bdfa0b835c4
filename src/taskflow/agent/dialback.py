"""Dial-back transport, the agent's side: join the master over TCP.

``python -m taskflow.node --connect HOST:PORT`` opens the connection, passes
the handshake of :mod:`taskflow.wire.dialback` with the run's secret, then
runs an ordinary agent over the socket.
"""
from __future__ import annotations

import json
import os
import socket
import struct
import sys
from typing import Any

from ..wire.dialback import MAGIC, NONCE, SECRET_ENV, SECRET_FILE_ENV, answer, recv_exact


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
            timeout: float = 30.0) -> socket.socket:
    """Open the TCP connection and pass the handshake; return the socket."""
    host, _, port = address.rpartition(":")
    sock = socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout)
    head = recv_exact(sock, len(MAGIC) + NONCE)
    if head[:len(MAGIC)] != MAGIC:
        raise ConnectionError(f"{address} is not a taskflow master")
    mac = answer(secret, head[len(MAGIC):])
    body = json.dumps(meta if meta is not None else agent_meta()).encode()
    sock.sendall(mac + struct.pack(">I", len(body)) + body)
    if recv_exact(sock, 2) != b"OK":
        raise ConnectionError(f"{address} refused the handshake")
    sock.settimeout(None)
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return sock


def serve_connect(address: str) -> None:
    """``python -m taskflow.node --connect HOST:PORT``: dial back, then be an agent."""
    from .agent import Agent
    try:
        sock = connect(address, read_secret())
    except (OSError, EOFError) as exc:
        print(f"taskflow.node: cannot join the master at {address}: {exc}", file=sys.stderr)
        raise SystemExit(3) from None
    fd = sock.detach()
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    agent = Agent(fd, os.dup(fd))   # two fds on one socket: the agent closes both in executors
    agent.handshake()
    agent.run()
