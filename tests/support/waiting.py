"""Waiting in tests for something another process or thread does."""
from __future__ import annotations

import time
from typing import Callable


def until(cond: Callable[[], object], timeout: float, what: str, every: float = 0.05) -> None:
    """Return once ``cond()`` is true; fail naming ``what`` after ``timeout`` seconds."""
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}")
        time.sleep(every)
