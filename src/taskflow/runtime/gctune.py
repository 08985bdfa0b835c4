"""The master's cyclic garbage collector while a runtime runs: collected by memory growth.

A workflow's master allocates several container objects per task call (the
task, its futures, its argument tuples, its journal events), and every one
of them is traversed by the young generations' collections whatever their
threshold: on 1,000,000 no-op tasks that was 2.7-3.7 s of a ~20 s run. The
runtime's own objects need no cyclic collection (tasks, futures and lineage
records form no cycle; values are freed by reference counts: a test checks
it with the collector off). So while a runtime runs the automatic collector
is off, and the loop thread runs a full collection when the master's
resident memory has grown by :data:`GROWTH` (and at least :data:`GROWTH_MIN`
bytes) since the last one: cycles the program itself makes are still
collected, by the memory they take rather than by allocation counts, so the
master's memory stays within about 1.5x of its live data plus 128 MiB. The
previous state comes back at ``stop``. ``TASKFLOW_GC=default`` leaves the
collector alone; ``TASKFLOW_GC=threshold`` only raises the first threshold
to :data:`GEN0` (the policy before this one).
"""
from __future__ import annotations

import gc
import os
import time

GEN0 = 50_000
GROWTH = 0.5             # a full collection once resident memory grew by this share ...
GROWTH_MIN = 128 * 2**20  # ... and at least this many bytes since the last one
CHECK = 1.0              # s between two looks at the resident memory
_PAGE = os.sysconf("SC_PAGE_SIZE") if hasattr(os, "sysconf") else 4096

_saved: list[tuple[tuple[int, int, int], bool]] = []


class _Watch:
    __slots__ = ("on", "next_check", "limit", "collections")

    def __init__(self) -> None:
        self.on = False          # collections by memory growth are this module's job now
        self.next_check = 0.0
        self.limit = 0           # bytes of resident memory that start the next collection
        self.collections = 0


WATCH = _Watch()


def _rss() -> int:
    try:
        with open("/proc/self/statm", "rb") as f:
            return int(f.read().split()[1]) * _PAGE
    except (OSError, ValueError, IndexError):
        return 0                 # not Linux: a collection every CHECK * 30 s instead


def _arm(rss: int) -> None:
    WATCH.limit = max(int(rss * (1 + GROWTH)), rss + GROWTH_MIN) if rss else 0
    WATCH.next_check = time.monotonic() + (CHECK if rss else CHECK * 30)


def tune() -> None:
    """Turn the automatic collector off for the run (pair with :func:`restore`)."""
    _saved.append((gc.get_threshold(), gc.isenabled()))
    how = os.environ.get("TASKFLOW_GC", "").lower()
    if how == "default" or not gc.isenabled():
        return
    if how == "threshold":
        if gc.get_threshold()[0] < GEN0:
            gc.set_threshold(GEN0, *gc.get_threshold()[1:])
        return
    gc.disable()
    WATCH.on = True
    _arm(_rss())


def tick() -> None:
    """The loop thread's round: a full collection when memory grew enough (cheap when not)."""
    w = WATCH
    if not w.on or time.monotonic() < w.next_check:
        return
    rss = _rss()
    if rss and rss < w.limit:
        w.next_check = time.monotonic() + CHECK
        return
    gc.collect()
    w.collections += 1
    _arm(_rss())


def restore() -> None:
    if not _saved:
        return
    threshold, enabled = _saved.pop()
    gc.set_threshold(*threshold)
    if enabled and not gc.isenabled():
        gc.enable()
    if not _saved:
        WATCH.on = False
