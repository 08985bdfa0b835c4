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

An agent reads the master's HELLO (:meth:`~.agent.Agent.handshake`) and runs
(a ``--stdio`` one loads the task API for its executors until the HELLO comes:
:func:`preload_while_waiting`).
The imports are deferred: a ``--connect`` agent dials before it loads the
agent, a ``--stdio`` one never loads ``ssl``, a relay loads neither.
"""
from __future__ import annotations

import importlib
import os
import select
import selectors
import socket
import sys

# What an agent loads while it waits for its master's HELLO (preload_while_waiting), in
# the order they import each other, the deepest first (each step stays short).
PRELOAD = ("inspect", "dataclasses", "concurrent.futures", "taskflow.graph.decl",
           "taskflow.graph.spec", "taskflow.future", "taskflow.api.task", "taskflow.api.sync",
           "cloudpickle")


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
    preload_while_waiting(rfd)      # the task API, for the executors, until the HELLO comes
    agent.handshake()
    agent.run()
    # Its run is over and it has let go of all it held (Agent._shutdown: executors reaped,
    # store and sockets closed, last frames written): exit now, not through the teardown
    # of every module the interpreter loaded, which the master's stop waited for (~20-40 ms
    # on a 2-core machine). The agent opens no file it does not close itself.
    for f in (sys.stderr, sys.__stdout__):
        try:
            if f is not None:
                f.flush()
        except (OSError, ValueError):
            pass
    os._exit(0)


def preload_while_waiting(fd: int) -> None:
    """Import :data:`PRELOAD` one module at a time until ``fd`` (the master's stream) has
    data: the task API, which the module of an executor's first task function imports
    (``from taskflow import task``: ~25-35 ms on a 2-core machine), and ``cloudpickle``,
    which a function of the script itself needs (it comes by value).

    Executors are forked from the agent after the HELLO, so what the agent has loaded by
    then, they have; an agent started before its master needs it (providers/prestart.py,
    a master still importing the script) would otherwise sit idle and the first task pay
    the imports. In the agent's only thread, between two imports: the HELLO waits for
    one import at most, and no thread runs when the executors are forked. The agent only
    loads these modules; it runs nothing of them."""
    for name in PRELOAD:
        try:
            readable, _, _ = select.select([fd], [], [], 0)
        except (OSError, ValueError):
            return
        if readable:
            return
        try:
            importlib.import_module(name)
        except Exception:  # noqa: BLE001 - an executor that needs it says why itself
            return


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
