"""Dask distributed on a LocalCluster of single-threaded worker processes.

Fair configuration from shared/BENCHMARKS.md: ``LocalCluster(n_workers=W,
threads_per_worker=1, processes=True, dashboard_address=None)`` and
``client.submit(f, x, pure=False)`` so identical calls are not merged.
"""
from __future__ import annotations

import logging
from typing import Any, Callable

import dask
import distributed
from distributed import Client, Future, LocalCluster

NAME = "dask"
LABEL = "Dask LocalCluster"
SKIP: frozenset[str] = frozenset()


class DaskHandle:
    def __init__(self, workers: int) -> None:
        self.cluster = LocalCluster(
            n_workers=workers,
            threads_per_worker=1,
            processes=True,
            dashboard_address=None,
            host="127.0.0.1",
            silence_logs=logging.ERROR,
        )
        self.client = Client(self.cluster)
        self.client.wait_for_workers(workers)

    def submit(self, fn: Callable[..., Any], *args: Any) -> Future:
        return self.client.submit(fn, *args, pure=False)

    def gather(self, futs: list[Future]) -> list[Any]:
        return self.client.gather(futs)

    def result(self, fut: Future) -> Any:
        return fut.result()


def version() -> str | None:
    return f"dask {dask.__version__}, distributed {distributed.__version__}"


def start(workers: int) -> DaskHandle:
    return DaskHandle(workers)


def stop(handle: DaskHandle) -> None:
    handle.client.close()
    handle.cluster.close()
