"""One test session at a time per testbed: an exclusive lock, waited for.

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

import pytest


class Held:
    """The testbed's lock, held until :meth:`close`."""

    def __init__(self, file, sock: socket.socket) -> None:
        self._file, self._sock = file, sock

    def close(self) -> None:
        self._sock.close()
        self._file.close()          # closing the file releases its flock


def _bind(name: str) -> socket.socket | None:
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        s.bind("\0" + name)
        return s
    except OSError:
        s.close()
        return None


def acquire(path: str, what: str, timeout: float = 240.0) -> Held:
    """Hold the lock named by ``path`` (file lock + abstract socket); skip if busy past ``timeout``."""
    name = "taskflow-testbed-" + os.path.basename(path).lstrip(".")
    lock = open(path, "w")
    deadline = time.time() + timeout
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            sock = _bind(name)
            if sock is not None:
                return Held(lock, sock)
            fcntl.flock(lock, fcntl.LOCK_UN)
        except BlockingIOError:
            pass
        if time.time() > deadline:
            lock.close()
            pytest.skip(f"the {what} testbed is in use by another test session")
        time.sleep(0.5)
