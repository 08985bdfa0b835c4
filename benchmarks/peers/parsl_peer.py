"""Parsl HighThroughputExecutor on a LocalProvider with one block.

Fair configuration from shared/BENCHMARKS.md: ``HighThroughputExecutor(
address="127.0.0.1", max_workers_per_node=W, cores_per_worker=cores/W)`` on
``LocalProvider(init_blocks=1, min_blocks=1, max_blocks=1)``. On top of it,
choices that only help Parsl on a loopback-only run: no DFK debug log file
(``initialize_logging=False``), no CurveZMQ encryption (``encrypted=False``)
and no scaling strategy thread (``strategy="none"``). The run dir goes under
benchmarks/results/parsl/ (gitignored).
"""
from __future__ import annotations

import os
import time
import uuid
from pathlib import Path
from typing import Any, Callable

import parsl
from parsl import python_app
from parsl.config import Config
from parsl.executors import HighThroughputExecutor
from parsl.providers import LocalProvider

from benchmarks import workloads
from benchmarks.peers import descendants, reap

NAME = "parsl"
LABEL = "Parsl HTEX"
SKIP: frozenset[str] = frozenset()

RUN_ROOT = Path(__file__).resolve().parents[1] / "results" / "parsl"


class ParslHandle:
    def __init__(self, workers: int) -> None:
        cores = os.cpu_count() or 1
        # Unique per session: lets stop() find the worker pool by its own command line.
        self.run_dir = str(RUN_ROOT / f"{time.strftime('%Y%m%d-%H%M%S')}-{uuid.uuid4().hex[:6]}")
        self.before = descendants()
        htex = HighThroughputExecutor(
            label="htex",
            address="127.0.0.1",
            loopback_address="127.0.0.1",
            max_workers_per_node=workers,
            cores_per_worker=cores / workers,
            encrypted=False,
            provider=LocalProvider(init_blocks=1, min_blocks=1, max_blocks=1),
        )
        config = Config(
            executors=[htex],
            run_dir=self.run_dir,
            strategy="none",
            initialize_logging=False,
            usage_tracking=0,
        )
        self.dfk = parsl.load(config)
        self.apps: dict[Callable[..., Any], Any] = {
            fn: python_app(fn, executors=["htex"]) for fn in workloads.TASK_FUNCTIONS
        }

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any:
        return self.apps[fn](*args)

    def gather(self, futs: list[Any]) -> list[Any]:
        return [f.result() for f in futs]

    def result(self, fut: Any) -> Any:
        return fut.result()


def version() -> str | None:
    return parsl.__version__


def start(workers: int) -> ParslHandle:
    return ParslHandle(workers)


def stop(handle: ParslHandle) -> None:
    try:
        handle.dfk.cleanup()
    finally:
        parsl.clear()
        # The worker pool runs under a shell the provider started; find leftovers
        # by this session's unique run dir in their command line.
        reap(handle.before, token=handle.run_dir, grace=5.0)
