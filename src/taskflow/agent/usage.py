"""CPU time and peak memory of one task, measured in the executor that runs it.

Only tasks whose function is not known to be short are measured (the first
call of each function, and those whose mean here is at least
:data:`~taskflow.wire.thresholds.USAGE_MIN`): a measurement costs two
``getrusage`` calls, a write to ``/proc/self/clear_refs`` and a read of
``/proc/self/status`` (tens of microseconds), which a no-op task must not pay.

- CPU time: the executor's user + system time during the task, plus that of
  the children it waited for (a program, ``mpirun`` and the ranks it waited
  for).
- Peak memory: for a program task, the peak resident set of its largest
  process (the child's own ``wait4`` usage, :mod:`.invokers.process`); for a
  Python task, the executor's peak resident set while the task ran (Linux:
  the peak is reset first through ``clear_refs``; elsewhere it is the
  executor's lifetime peak, an upper bound). Either way in bytes.
"""
from __future__ import annotations

import resource
import sys

from .invokers import process

Start = tuple[float, float]


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")       # resets VmHWM, the peak resident set (Linux >= 4.0)
    except OSError:
        pass


def _peak_self() -> int:
    """The executor's peak resident set in bytes."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return int(peak if sys.platform == "darwin" else peak * 1024)


def start() -> Start:
    """Before the task: the CPU times so far (and the peak reset)."""
    _reset_peak()
    process.last_peak = 0
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime)


def stop(before: Start) -> tuple[float, int]:
    """After the task: (CPU seconds, peak resident bytes)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    mine, theirs = before
    cpu = (me.ru_utime + me.ru_stime - mine) + (kids.ru_utime + kids.ru_stime - theirs)
    peak = process.last_peak or _peak_self()
    return (max(cpu, 0.0), peak)
