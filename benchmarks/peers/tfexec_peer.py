"""taskflow.Executor: the concurrent.futures interface over taskflow's runtime.

The same plain workload functions the process pool runs (no decoration), given
to ``Executor.submit``; futures passed as arguments are dependencies the
runtime tracks (not resolved in the submitting thread, as the pool's are).
"""
from __future__ import annotations

import concurrent.futures as cf
import os
from typing import Any, Callable

import taskflow
from taskflow import Executor

NAME = "taskflow-executor"
LABEL = "taskflow.Executor"
SKIP: frozenset[str] = frozenset()


class ExecutorHandle:
    def __init__(self, workers: int) -> None:
        resumable = os.environ.get("TASKFLOW_BENCH_RESUMABLE")   # run.py --resumable on|off
        kw = {} if resumable is None else {"resumable": resumable == "on"}
        self.ex = Executor(max_workers=workers, **kw)

    def submit(self, fn: Callable[..., Any], *args: Any) -> cf.Future:  # type: ignore[type-arg]
        return self.ex.submit(fn, *args)

    def gather(self, futs: list[Any]) -> list[Any]:
        return [f.result() for f in futs]

    def result(self, fut: Any) -> Any:
        return fut.result()


def version() -> str | None:
    return str(getattr(taskflow, "__version__", "")) or None


def start(workers: int) -> ExecutorHandle:
    return ExecutorHandle(workers)


def stop(handle: ExecutorHandle) -> None:
    handle.ex.shutdown(wait=True)
