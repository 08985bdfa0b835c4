"""Plain sequential loop: the physical floor of the work itself.

``submit`` calls the function at once and returns the value itself, so a
"future" is just the value and there is nothing to wait for.
"""
from __future__ import annotations

import platform
from typing import Any, Callable

NAME = "seq"
LABEL = "sequential loop"
#: D on one slot would be 10 s of sleeping that measures nothing.
SKIP = frozenset({"D"})


class SeqHandle:
    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        return fn(*args)

    def gather(self, futs: list[Any]) -> list[Any]:
        return futs

    def result(self, fut: Any) -> Any:
        return fut


def version() -> str | None:
    return platform.python_version()


def start(workers: int) -> SeqHandle:
    return SeqHandle()


def stop(handle: SeqHandle) -> None:
    pass
