"""concurrent.futures.ProcessPoolExecutor: a process pool with no dependency tracking.

A future passed as an argument is resolved in the submitting thread before
the dependent task is submitted, which is what a user of a bare pool does;
this is the floor for a runtime that ships tasks to worker processes.
"""
from __future__ import annotations

import platform
from concurrent.futures import Future, ProcessPoolExecutor, wait
from typing import Any, Callable

NAME = "ppe"
LABEL = "ProcessPoolExecutor"
SKIP: frozenset[str] = frozenset()


class PPEHandle:
    def __init__(self, workers: int) -> None:
        self.pool = ProcessPoolExecutor(max_workers=workers)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        args = tuple(a.result() if isinstance(a, Future) else a for a in args)
        return self.pool.submit(fn, *args)

    def gather(self, futs: list[Future]) -> list[Any]:
        wait(futs)
        return [f.result() for f in futs]

    def result(self, fut: Future) -> Any:
        return fut.result()


def version() -> str | None:
    return platform.python_version()


def start(workers: int) -> PPEHandle:
    return PPEHandle(workers)


def stop(handle: PPEHandle) -> None:
    handle.pool.shutdown(wait=True, cancel_futures=True)
