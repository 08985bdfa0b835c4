"""Plain functions (no decoration) that tests submit through taskflow.Executor."""
from __future__ import annotations

import os
import time


def square(x):
    return x * x


def divide(a, b):
    return a / b


class Refused(Exception):
    """An exception class of the application's own, with a field of its own."""

    def __init__(self, code: int, detail: str) -> None:
        super().__init__(code, detail)
        self.code = code


def refuse(code):
    raise Refused(code, "not today")


def open_missing(path):
    with open(path) as f:
        return f.read()


def wait_for_file(path, limit=120.0):
    """Say it started (``path``.started), then return once ``path`` exists (the test makes it
    when it is ready), at most ``limit`` s."""
    open(path + ".started", "w").close()
    end = time.monotonic() + limit
    while not os.path.exists(path):
        if time.monotonic() > end:
            raise TimeoutError(f"{path} never appeared")
        time.sleep(0.02)
    return "released"
