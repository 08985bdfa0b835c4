"""A task's memory limit, enforced in its executor with RLIMIT_AS.

``@constraint(memory_size=..., memory_limit=True)`` (or ``Runtime(memory_limit=
True)`` for every task with a ``memory_size``) sends the task with the option
``mem_limit`` (GB, as ``memory_size``; 1 GB = 2**30 bytes here). While the task
runs, the executor's address space may grow by that much over what it was when
the task began (``setrlimit(RLIMIT_AS)``; the previous limit comes back after
the task): an allocation past it fails, which Python and numpy raise as
``MemoryError``, and the task ends with
:class:`~taskflow.errors.TaskMemoryExceeded`, naming its limit and its peak
resident memory (``VmHWM``, reset when the task begins).

Why RLIMIT_AS and not a cgroup: it needs no privilege and no delegated cgroup
(tasks run in long-lived executors, any user, any machine with setrlimit),
and it stops the one allocation that crosses the line instead of killing the
whole executor. What it counts is address space, not resident memory: memory
a task maps and does not touch counts too, as do the stacks of the threads it
starts. A program the task runs (``@binary``, ``@mpi``) inherits the limit.
"""
from __future__ import annotations

import os
from typing import Any

try:
    import resource
except ImportError:             # pragma: no cover - not a POSIX system: no limits
    resource = None  # type: ignore[assignment]

GB = 2**30


def _status(field: str) -> int:
    """A ``/proc/self/status`` figure in bytes (0 when unknown)."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _reset_peak() -> None:
    """Start VmHWM again from the current resident size (Linux >= 4.0)."""
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:
        pass


class MemoryLimit:
    """``with MemoryLimit(gb):`` around one task's call."""

    __slots__ = ("limit", "saved", "base_rss", "peak")

    def __init__(self, gb: float) -> None:
        self.limit = int(gb * GB)
        self.saved: tuple[int, int] | None = None
        self.base_rss = 0
        self.peak = 0

    def __enter__(self) -> MemoryLimit:
        if resource is None:
            return self
        soft, hard = resource.getrlimit(resource.RLIMIT_AS)
        cap = _status("VmSize:") + self.limit
        if hard != resource.RLIM_INFINITY:
            cap = min(cap, hard)
        _reset_peak()
        self.base_rss = _status("VmRSS:")
        resource.setrlimit(resource.RLIMIT_AS, (cap, hard))
        self.saved = (soft, hard)
        return self

    def __exit__(self, *exc: Any) -> None:
        if self.saved is not None and resource is not None:
            resource.setrlimit(resource.RLIMIT_AS, self.saved)
            self.saved = None
        self.peak = _status("VmHWM:")

    def message(self, name: str, exc: BaseException) -> str:
        """Why the task was stopped: its limit, its peak, what it asked for."""
        asked = f" ({type(exc).__name__}: {exc})" if str(exc) else ""
        return (f"task {name} grew past its memory limit of {self.limit / GB:g} GB "
                f"(memory_size, enforced with RLIMIT_AS on the growth of its executor's "
                f"address space, pid {os.getpid()}): peak {self.peak / 1e6:.0f} MB resident, "
                f"{self.base_rss / 1e6:.0f} MB of it there before the task; an allocation "
                f"past the limit failed{asked}. Raise memory_size or process the data in "
                f"smaller pieces")
