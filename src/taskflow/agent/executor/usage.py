"""CPU time and peak memory of one task, measured in the executor that runs it.

Only tasks whose function is not known to be short are measured (the first
call of each function, and those whose mean here is at least
:data:`~taskflow.wire.thresholds.USAGE_MIN`): a measurement costs four
``getrusage`` calls, a write to ``/proc/self/clear_refs`` and reads of
``/proc/self/io`` and ``/proc/self/status`` (about 35 µs on a 2-core machine, 65
through Python's ``open``: the files are read with ``os.read``), which a no-op
task must not pay.

- CPU time: the executor's user + system time during the task, plus that of
  the children it waited for (a program, ``mpirun`` and the ranks it waited
  for).
- Peak memory, in bytes, from the kernel (never sampled), with how it was
  measured (:data:`HOW`, the trace's ``peak_rss_measure``):

  * ``wait4``: a program task: the peak resident set of the largest process
    of its tree (the program's own ``wait4`` usage, :mod:`.invokers.process`,
    which takes in the children it waited for: ``/usr/bin/time``'s figure);
  * ``vmhwm``: a Python task: the executor's peak resident set while it ran
    (``VmHWM``, reset at the task's start through ``/proc/self/clear_refs``,
    Linux >= 4.0);
  * ``children``: a Python task whose child process, reaped while it ran,
    peaked higher than the executor: that child's peak, from the ``wait4``
    that reaped it (the executor's ``os.waitpid`` is ``os.wait4`` keeping the
    child's peak, :func:`install`: ``subprocess``, ``multiprocessing``), or
    from ``RUSAGE_CHILDREN``'s ``ru_maxrss`` where that grew;
  * ``at-least``: a Python task whose children were reaped otherwise
    (``os.system``, C code) and peaked no higher than a child of an earlier
    task of this executor: the kernel's children peak is a maximum over the
    executor's life, never reset, so theirs cannot be told apart; the figure
    is the executor's own (or its known children's), a lower bound;
  * ``at-most``: no ``/proc/self/status`` (not Linux): the executor's
    lifetime peak, an upper bound;
  * ``engine-client``: a task in a podman or docker container: the engine
    client's ``wait4`` figure, not the container's (whose processes are not
    the executor's descendants); apptainer containers are ``wait4``.
- Bytes read and written: what the executor and the children it waited for
  passed through read and write calls (``rchar`` and ``wchar`` of
  ``/proc/self/io``, which takes in a child's counts when it is reaped; the
  figures Nextflow reports), files, pipes and sockets alike; -1 where there
  is no ``/proc/self/io``.
"""
from __future__ import annotations

import os
import resource
import sys

from .invokers import process

_wait4 = getattr(os, "wait4", None)


class _Reaped:
    """The children reaped through ``os.waitpid`` (:func:`install`) since the task began."""

    peak = 0            # their largest ru_maxrss
    faults = 0          # the sum of their ru_minflt


def install() -> None:
    """In the executor: ``os.waitpid`` reaps through ``os.wait4`` (the same call with the
    child's usage; Linux's waitpid is wait4 without it) and keeps the peak of the
    children a task reaps, which ``RUSAGE_CHILDREN`` cannot give once an earlier task's
    child peaked higher. Code that calls ``os.waitpid`` (``subprocess.run``,
    ``Popen.wait``, ``multiprocessing``) sees no difference."""
    wait4 = _wait4
    if wait4 is None or getattr(os.waitpid, "__wrapped__", None) is not None:
        return
    plain = os.waitpid

    def waitpid(pid: int, options: int, /) -> tuple[int, int]:
        got, status, ru = wait4(pid, options)
        if got and (os.WIFEXITED(status) or os.WIFSIGNALED(status)):
            if ru.ru_maxrss > _Reaped.peak:
                _Reaped.peak = ru.ru_maxrss
            _Reaped.faults += ru.ru_minflt
        return got, status

    waitpid.__wrapped__ = plain  # type: ignore[attr-defined]
    waitpid.__doc__ = plain.__doc__
    os.waitpid = waitpid

Start = tuple[float, float, int, int, int, int]
# CPU seconds, peak resident bytes, bytes read, bytes written, how the peak was measured
Used = tuple[float, int, int, int, str]
HOW = ("wait4", "vmhwm", "children", "at-least", "at-most", "engine-client")


def _proc(name: str, size: int, data: bytes | None = None) -> bytes:
    """Read ``size`` bytes of ``/proc/self/<name>`` (or write ``data`` there), os-level:
    Python's ``open`` takes four system calls and three objects more, and a measured task
    reads or writes three of these files. Raises OSError."""
    fd = os.open("/proc/self/" + name, (os.O_RDONLY if data is None else os.O_WRONLY)
                 | os.O_CLOEXEC)
    try:
        if data is not None:
            os.write(fd, data)
            return b""
        return os.read(fd, size)
    finally:
        os.close(fd)


def _io() -> tuple[int, int]:
    """(bytes read, bytes written) so far by this process and its reaped children."""
    try:
        text = _proc("io", 256)
        r = text.index(b"rchar: ") + 7
        w = text.index(b"wchar: ") + 7
        return int(text[r:text.index(b"\n", r)]), int(text[w:text.index(b"\n", w)])
    except (OSError, ValueError):
        return -1, -1


def _reset_peak() -> None:
    try:
        _proc("clear_refs", 0, b"5")    # resets VmHWM, the peak resident set (Linux >= 4.0)
    except OSError:
        pass


_KB = 1 if sys.platform == "darwin" else 1024     # ru_maxrss's unit in bytes


def _peak_self() -> tuple[int, bool]:
    """The executor's peak resident set in bytes since the reset; False: its lifetime's."""
    try:
        text = _proc("status", 8192)
        i = text.index(b"VmHWM:") + 6
        return int(text[i:text.index(b"kB", i)]) * 1024, True
    except (OSError, ValueError):
        pass
    return int(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * _KB), False


def start() -> Start:
    """Before the task: the CPU times so far (and the peak reset)."""
    _reset_peak()
    process.last_peak = 0
    process.client_only = False
    _Reaped.peak = _Reaped.faults = 0
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    rd, wr = _io()
    return (me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime, rd, wr,
            kids.ru_maxrss, kids.ru_minflt)


def stop(before: Start) -> Used:
    """After the task: (CPU seconds, peak resident bytes, bytes read, bytes written, how
    the peak was measured: one of :data:`HOW`)."""
    me = resource.getrusage(resource.RUSAGE_SELF)
    kids = resource.getrusage(resource.RUSAGE_CHILDREN)
    rd, wr = _io()
    mine, theirs, rd0, wr0, kids_peak0, kids_faults0 = before
    cpu = (me.ru_utime + me.ru_stime - mine) + (kids.ru_utime + kids.ru_stime - theirs)
    peak, how = _peak(kids_peak0, kids_faults0, kids)
    if rd < 0 or rd0 < 0:
        return (max(cpu, 0.0), peak, -1, -1, how)
    return (max(cpu, 0.0), peak, max(rd - rd0, 0), max(wr - wr0, 0), how)


def _peak(kids_peak0: int, kids_faults0: int, kids: resource.struct_rusage) -> tuple[int, str]:
    """The task's peak resident bytes and how it was measured (module docstring)."""
    if process.last_peak:                   # a program: its own wait4 figure
        return process.last_peak, "engine-client" if process.client_only else "wait4"
    mine, reset = _peak_self()
    if not reset:
        return mine, "at-most"
    known, seen_faults = _Reaped.peak, _Reaped.faults
    if kids.ru_maxrss > kids_peak0:         # a child reaped during the task set a new high
        known = max(known, kids.ru_maxrss)
    theirs = int(known * _KB)
    peak, how = (theirs, "children") if theirs > mine else (mine, "vmhwm")
    unseen = kids.ru_minflt - kids_faults0 - seen_faults     # faults of children reaped
    if unseen > 0 and kids.ru_maxrss <= kids_peak0 and kids_peak0 * _KB > peak:
        return peak, "at-least"             # otherwise; theirs hides under an old high
    return peak, how
