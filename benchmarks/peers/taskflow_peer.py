"""taskflow, through its public API only.

The task functions are declared here with ``@task(returns=1)``, at module
level so they pickle by reference, with the same bodies as the plain ones in
``benchmarks.workloads``; ``submit`` maps a plain function to its task by
``__name__``.
"""
from __future__ import annotations

import os
from typing import Any, Callable

import taskflow
from taskflow import task, wait_on

NAME = "taskflow"
LABEL = "taskflow"
SKIP: frozenset[str] = frozenset()


@task(returns=1)
def noop(x):  # type: ignore[no-untyped-def]
    return x


@task(returns=1)
def inc(x):  # type: ignore[no-untyped-def]
    return x + 1


@task(returns=1)
def source():  # type: ignore[no-untyped-def]
    from benchmarks.workloads import C_SOURCE_LEN

    return list(range(C_SOURCE_LEN))


@task(returns=1)
def middle(src, i):  # type: ignore[no-untyped-def]
    return src[i % len(src)] + i


@task(returns=1)
def total(*xs):  # type: ignore[no-untyped-def]
    return sum(xs)


@task(returns=1)
def sleep_task(seconds):  # type: ignore[no-untyped-def]
    import time

    time.sleep(seconds)
    return seconds


TASKS: dict[str, Any] = {
    "noop": noop,
    "inc": inc,
    "source": source,
    "middle": middle,
    "total": total,
    "sleep_task": sleep_task,
}


class TaskflowHandle:
    def __init__(self, workers: int) -> None:
        # run.py --resumable on|off (else the runtime's default)
        resumable = os.environ.get("TASKFLOW_BENCH_RESUMABLE")
        kw = {} if resumable is None else {"resumable": resumable == "on"}
        self.rt = taskflow.Runtime(workers=workers, **kw)
        self.rt.start()

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        return TASKS[fn.__name__](*args)

    def gather(self, futs: list[Any]) -> list[Any]:
        return wait_on(futs)

    def result(self, fut: Any) -> Any:
        return wait_on(fut)


def version() -> str | None:
    v = getattr(taskflow, "__version__", None)
    if v:
        return str(v)
    try:
        from importlib.metadata import version as _v

        return _v("taskflow")
    except Exception:
        return None


def start(workers: int) -> TaskflowHandle:
    return TaskflowHandle(workers)


def stop(handle: TaskflowHandle) -> None:
    handle.rt.stop()
