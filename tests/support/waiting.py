"""Waiting in tests for something another process or thread does."""
from __future__ import annotations

import time
from typing import Callable


def until(cond: Callable[[], object], timeout: float = 30.0, what: str | None = None,
          every: float = 0.05) -> None:
    """Return once ``cond()`` is true; after ``timeout`` seconds fail, naming ``what`` when
    given (``timed out`` alone otherwise)."""
    deadline = time.time() + timeout
    while not cond():
        if time.time() > deadline:
            raise AssertionError(f"timed out after {timeout:g} s waiting for {what}"
                                 if what is not None else "timed out")
        time.sleep(every)
