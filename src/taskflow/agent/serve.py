"""What ``python -m taskflow.node`` does on a node: be an agent, or reach one.

- ``--stdio`` (:func:`serve_stdio`, local and SSH nodes): the master started
  the agent and holds its stdin and stdout.
- ``--connect HOST:PORT`` (:func:`serve_connect`, Slurm's batch and pilot
  jobs): the agent dials back to the master (:mod:`.dialback`, the connection
  itself, which an orphaned agent also uses to dial a resumed master:
  :mod:`.redial`).
- ``--adopt RUN_ID NODE`` (:func:`relay`): not an agent but a relay to one. A
  master runs it over SSH on the host of an agent that outlived its master
  (:mod:`.orphan`): a resumed master adopting it, or its own master reaching
  it again after a cut link. It connects to the agent's Unix socket
  (:func:`taskflow.wire.adoption.socket_path`), says so with one byte on
  stdout (:data:`~taskflow.wire.adoption.CONNECTED`), then copies bytes both
  ways until either side ends. It reads no frame: the master and the agent
  prove the run's secret to each other through it. With no agent waiting
  there it exits with status :data:`~taskflow.wire.adoption.NO_SOCKET` before
  writing anything (the master's shell then starts a fresh agent).

An agent reads the master's HELLO (:meth:`~.agent.Agent.handshake`) and runs.
The imports are deferred: a ``--connect`` agent dials before it loads the
agent, a ``--stdio`` one never loads ``ssl``, a relay loads neither.
"""
from __future__ import annotations

import os
import selectors
import socket
import sys


def serve_stdio() -> None:
    """Run an agent on stdin/stdout; stray prints by tasks go to stderr."""
    from .agent import Agent
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


def serve_connect(address: str) -> None:
    """Dial back, then be an agent."""
    from ..wire.tlschannel import TlsChannel
    from .dialback import connect, read_secret
    try:
        sock = connect(address, read_secret())
    except (OSError, EOFError) as exc:
        print(f"taskflow.node: cannot join the master at {address}: {exc}", file=sys.stderr)
        raise SystemExit(3) from None
    from .agent import Agent
    chan = TlsChannel(sock)
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdout = sys.stderr
    agent = Agent(chan.rfd, chan.wfd, channel=chan)    # executors close the socket's fd
    agent.handshake()
    agent.run()


def relay(run_id: str, node: str) -> None:
    """Copy bytes between stdin/stdout and the Unix socket of the agent of (run, node)
    that waits for a master, until either side ends."""
    from ..wire import adoption
    try:
        path = adoption.socket_path(run_id, node)
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.connect(path)
    except OSError as exc:
        print(f"taskflow.node --adopt: no agent of run {run_id} waits for node {node} here "
              f"({exc})", file=sys.stderr)
        raise SystemExit(adoption.NO_SOCKET) from None
    os.write(1, adoption.CONNECTED)
    sel = selectors.DefaultSelector()
    sel.register(0, selectors.EVENT_READ, "in")
    sel.register(sock, selectors.EVENT_READ, "sock")
    while True:
        for key, _ in sel.select():
            if key.data == "in":
                data = os.read(0, 1 << 20)
                if not data:                # the master is gone: so is this relay
                    sock.close()
                    return
                sock.sendall(data)
            else:
                try:
                    data = sock.recv(1 << 20)
                except OSError:
                    data = b""
                if not data:
                    return
                view = memoryview(data)
                while view:
                    view = view[os.write(1, view):]
