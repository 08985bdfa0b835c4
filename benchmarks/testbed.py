"""The SSH testbed as the benchmarks use it: its lock and the hosts it brought up.

The lock is the one tests/testbed_lock.py takes (the same file and the same
abstract Unix socket name), so a benchmark and a test session never bring the
namespace hosts up or down under each other, even when one of them has a
private /tmp.
"""
from __future__ import annotations

import fcntl
import os
import socket
import time
from typing import IO

TB = os.environ.get("TF_TB", "/tmp/taskflow-tb")
LOCK = os.path.join(os.path.dirname(TB), "taskflow-tb.lock")
_NAME = "\0taskflow-testbed-" + os.path.basename(LOCK)


class Busy(RuntimeError):
    """The testbed stayed in use by another session."""


class Lock:
    """Held until :meth:`close`."""

    def __init__(self, file: IO[str], sock: socket.socket) -> None:
        self._file, self._sock = file, sock

    def close(self) -> None:
        self._sock.close()
        self._file.close()


def lock(wait: float = 900.0) -> Lock:
    """Take the SSH testbed's lock, waiting up to ``wait`` seconds (else :class:`Busy`)."""
    os.makedirs(TB, exist_ok=True)
    f = open(LOCK, "w")
    deadline = time.time() + wait
    while True:
        try:
            fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            try:
                s.bind(_NAME)
                return Lock(f, s)
            except OSError:
                s.close()
                fcntl.flock(f, fcntl.LOCK_UN)
        except BlockingIOError:
            pass
        if time.time() > deadline:
            f.close()
            raise Busy(f"the SSH testbed stayed in use ({LOCK})")
        time.sleep(0.5)


def hosts_env(tb: str = TB) -> dict[str, str]:
    """What runtime/testbed/ssh_hosts.sh up wrote: TF_TB_HOSTS, TF_TB_KEY, ..."""
    env = {}
    with open(os.path.join(tb, "hosts.env")) as f:
        for line in f:
            k, _, v = line.strip().partition("=")
            env[k] = v.strip('"')
    return env
