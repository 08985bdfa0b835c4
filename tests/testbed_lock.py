"""One test session at a time per testbed: an exclusive file lock, waited for."""
from __future__ import annotations

import fcntl
import time
from typing import IO

import pytest


def acquire(path: str, what: str, timeout: float = 240.0) -> IO:
    """Hold ``path`` locked (keep the returned file open); skip if busy past ``timeout``."""
    lock = open(path, "w")
    deadline = time.time() + timeout
    while True:
        try:
            fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
            return lock
        except BlockingIOError:
            if time.time() > deadline:
                lock.close()
                pytest.skip(f"the {what} testbed is in use by another test session")
            time.sleep(0.5)
