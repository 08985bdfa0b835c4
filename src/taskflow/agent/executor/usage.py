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
- Bytes read and written: what the executor and the children it waited for
  passed through read and write calls (``rchar`` and ``wchar`` of
  ``/proc/self/io``, which takes in a child's counts when it is reaped; the
  figures Nextflow reports), files, pipes and sockets alike; -1 where there
  is no ``/proc/self/io``.
"""
from __future__ import annotations

import resource
import sys

from .invokers import process

Start = tuple[float, float, int, int]
Used = tuple[float, int, int, int]     # CPU seconds, peak resident bytes, bytes read, written


def _io() -> tuple[int, int]:
    """(bytes read, bytes written) so far by this process and its reaped children."""
    try:
        with open("/proc/self/io", "rb") as fh:
            text = fh.read(256)
        r = text.index(b"rchar: ") + 7
        w = text.index(b"wchar: ") + 7
        return int(text[r:text.index(b"\n", r)]), int(text[w:text.index(b"\n", w)])
    except (OSError, ValueError):
        return -1, -1


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
    rd, wr = _io()
    return (me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime, rd, wr)


def stop(before: Start) -> Used:
    """After the task: (CPU seconds, peak resident bytes, bytes read, bytes written)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    rd, wr = _io()
    mine, theirs, rd0, wr0 = before
    cpu = (me.ru_utime + me.ru_stime - mine) + (kids.ru_utime + kids.ru_stime - theirs)
    peak = process.last_peak or _peak_self()
    if rd < 0 or rd0 < 0:
        return (max(cpu, 0.0), peak, -1, -1)
    return (max(cpu, 0.0), peak, max(rd - rd0, 0), max(wr - wr0, 0))
