"""One session at a time per testbed (tests and benchmarks): an exclusive lock, waited for.

A lock file alone is not enough: a session whose /tmp is private (a CI job
in its own mount namespace on the same machine) does not see another
session's lock file, yet the testbeds share the kernel's network
namespaces, bridges and addresses, so one session's ``down`` would pull the
hosts from under the other. The lock is therefore also an abstract Unix
socket name, which every process in the same network namespace sees whatever
its mounts, and which the kernel frees when the holder dies (no stale lock).
"""
from __future__ import annotations

import fcntl
import os
import socket
import time
from typing import IO


class Held:
    """The testbed's lock, held until :meth:`close`."""

    def __init__(self, file: IO[str], sock: socket.socket) -> None:
        self._file, self._sock = file, sock

    def close(self) -> None:
        self._sock.close()
        self._file.close()          # closing the file releases its flock


def hold(path: str, wait: float) -> Held | None:
    """Hold the lock named by ``path`` (file lock + abstract socket); None if still busy
    after ``wait`` seconds."""
    name = "\0taskflow-testbed-" + os.path.basename(path).lstrip(".")
    f = open(path, "w")
    deadline = time.time() + wait
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.bind(name)
                return Held(f, s)
            except OSError:
                s.close()
                fcntl.flock(f, fcntl.LOCK_UN)
        except BlockingIOError:
            pass
        if time.time() > deadline:
            f.close()
            return None
        time.sleep(0.5)
