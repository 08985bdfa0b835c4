"""The master's cyclic garbage collector, tuned while a runtime runs.

A workflow's master allocates several container objects per task call
(the task, its futures, its argument tuples, its journal events) and keeps
many of them alive until the end. With CPython's default first-generation
threshold (700 allocations) the collector then runs every few dozen tasks
and, as the heap of live objects grows, its older generations are traversed
again and again: on the no-op benchmark with the journal on this cost a
quarter of the throughput. While a runtime runs the first threshold is
raised to :data:`GEN0` (collections become rarer, each stays short), and
the previous thresholds come back at ``stop``. ``TASKFLOW_GC=default``
leaves the collector alone.
"""
from __future__ import annotations

import gc
import os

GEN0 = 50_000
_saved: list[tuple[int, int, int]] = []


def tune() -> None:
    """Raise the first threshold (idempotent per runtime: pair with :func:`restore`)."""
    old = gc.get_threshold()
    _saved.append(old)
    if os.environ.get("TASKFLOW_GC", "").lower() == "default" or old[0] == 0 or old[0] >= GEN0:
        return
    gc.set_threshold(GEN0, *old[1:])


def restore() -> None:
    if _saved:
        gc.set_threshold(*_saved.pop())
