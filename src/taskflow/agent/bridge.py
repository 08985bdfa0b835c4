"""``python -m taskflow.node --adopt RUN_ID NODE``: reach an agent waiting for a master.

A resumed master runs this over SSH on the host of an agent that outlived
its master (:mod:`taskflow.agent.orphan`): it connects to the agent's Unix
socket (:func:`taskflow.wire.adoption.socket_path`), says so with one byte
on stdout (:data:`~taskflow.wire.adoption.CONNECTED`), then copies bytes
both ways until either side ends. It reads no frame: the master and the
agent prove the run's secret to each other through it. With no agent
waiting there it exits with status :data:`~taskflow.wire.adoption.NO_SOCKET`
before writing anything (the master's shell then starts a fresh agent).
"""
from __future__ import annotations

import os
import selectors
import socket
import sys

from ..wire import adoption


def relay(run_id: str, node: str) -> None:
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
