"""Starting and stopping the service: workdir, token, socket, uvicorn, the run manager.

The workdir (0700) holds ``service.db`` (the runs), ``service.token`` (0600,
kept across restarts unless ``new_token``), ``service.json`` (0600: url and
pid of the service now running), ``service.lock`` (one service per workdir)
and ``runs/<id>/`` per run. The socket is bound before anything is printed,
so the URL printed is one that answers; port 0 takes any free port. uvicorn
serves it behind :mod:`taskflow.netguard` (deadlines for a request's head and
body, bounds per client, TCP_NODELAY).
"""
from __future__ import annotations

import contextlib
import fcntl
import json
import logging
import os
import secrets
import signal
import sys
from typing import IO, Any, Iterator

from .app import Service, create_app
from .runs import RunManager
from .store import Store

log = logging.getLogger("taskflow.serve")


class ServiceBusy(RuntimeError):
    """Another service uses this workdir."""


def _private(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    os.fchmod(fd, 0o600)
    with os.fdopen(fd, "w") as f:
        f.write(text)


def token_for(workdir: str, new: bool) -> str:
    path = os.path.join(workdir, "service.token")
    if not new and os.path.isfile(path):
        os.chmod(path, 0o600)
        token = open(path).read().strip()
        if len(token) >= 16:
            return token
    token = secrets.token_urlsafe(32)
    _private(path, token + "\n")
    return token


def lock_workdir(workdir: str) -> IO[str]:
    f = open(os.path.join(workdir, "service.lock"), "w")
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        f.close()
        raise ServiceBusy(f"another taskflow serve uses {workdir} (see "
                          f"{os.path.join(workdir, 'service.json')}); stop it or give "
                          f"another --workdir") from None
    return f


def _server_class() -> Any:
    from ..netguard.protocol import server_class

    class Server(server_class()):  # type: ignore[misc]
        """uvicorn's server, whose SIGINT / SIGTERM end ``serve()`` normally: uvicorn re-raises
        the signal after its shutdown, which would kill the process before the runs are
        interrupted and recorded (``RunManager.stop``)."""

        @contextlib.contextmanager
        def capture_signals(self) -> Iterator[None]:
            old = {s: signal.signal(s, self.handle_exit) for s in (signal.SIGINT, signal.SIGTERM)}
            try:
                yield
            finally:
                for s, h in old.items():
                    signal.signal(s, h)

    return Server


def serve(host: str, port: int, workdir: str, max_runs: int, max_queued: int, max_body: int,
          max_streams: int, new_token: bool = False) -> None:
    """Run the service until SIGINT / SIGTERM (blocks)."""
    from .. import netguard
    workdir = os.path.abspath(workdir)
    os.makedirs(os.path.join(workdir, "runs"), mode=0o700, exist_ok=True)
    os.chmod(workdir, 0o700)
    lock = lock_workdir(workdir)
    store = Store(os.path.join(workdir, "service.db"))
    manager = RunManager(workdir, store, max_runs, max_queued)
    interrupted = manager.recover()
    token = token_for(workdir, new_token)
    svc = Service(workdir, store, manager, token, max_body, max_streams)
    app = create_app(svc)
    sock = netguard.listen(host, port)
    bound = sock.getsockname()[1]
    shown = f"[{host}]" if ":" in host else host
    url = f"http://{shown}:{bound}{'/api/v1'}"
    _private(os.path.join(workdir, "service.json"),
             json.dumps({"url": url, "host": host, "port": bound, "pid": os.getpid()}))
    print(f"taskflow serve: {url}  (workdir {workdir})", file=sys.stderr)
    print(f"taskflow serve: token {token}  (kept in {os.path.join(workdir, 'service.token')}, "
          f"mode 0600; send it as 'Authorization: Bearer <token>')", file=sys.stderr)
    if host not in ("127.0.0.1", "::1", "localhost"):
        print(f"taskflow serve: listening on {host}, not only this machine: anyone who can "
              f"reach it and has the token can run programs as {os.getuid()}", file=sys.stderr)
    if interrupted:
        print(f"taskflow serve: {len(interrupted)} run(s) were going on when the service "
              f"stopped; marked interrupted: {', '.join(interrupted)}", file=sys.stderr)
    sys.stderr.flush()
    manager.start()
    config = netguard.config(app, netguard.Guard(), timeout_graceful_shutdown=3)
    server = _server_class()(config)
    try:
        server.run(sockets=[sock])
    finally:
        manager.stop()
        store.close()
        try:
            os.unlink(os.path.join(workdir, "service.json"))
        except OSError:
            pass
        lock.close()
