"""Which disk a task's full-disk error is about, and the room left on it.

An ``OSError`` of a write that found no room (ENOSPC, or a quota: EDQUOT)
names its file when it comes from ``open``, but not when it comes from a
``write`` or a ``close`` of a file already open: ``f.write(...)`` says only
"No space left on device". Then the disk meant is the fullest of those the
task writes: the files open for writing in the frames the error went
through (``with open(p, "wb") as f: f.write(...)`` leaves ``f`` there), the
folders of its file outputs (the run's file versions), the run's data
directory on this node, and its working directory; not the working
directory alone, which is often another, roomy disk. When even the fullest
of them has room (a quota, or a file none of them holds), the words say so
rather than call a roomy disk full.
"""
from __future__ import annotations

import errno
import io
import os
import shutil
from types import TracebackType
from typing import Callable, Iterable

# the run's data directory on this node (file versions, spills): set by the agent before
# it forks its executors
DATA_DIR: list[str] = []
ROOMY = 64e6        # bytes: a disk with more free than this (and 1 % of it) is not full

def is_full(exc: BaseException) -> bool:
    return isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT)


def room(n: float) -> str:
    """``n`` bytes in the unit a person reads: '75.3 GB', '12.0 kB', '0 B'."""
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if n >= size:
            return f"{n / size:.1f} {unit}"
    return f"{int(n)} B"


def full_disk(exc: OSError, written: Callable[[], Iterable[str]] | None = None) -> str:
    """'the disk holding DIR is full: N free' for a write that found no room; ``written``:
    the paths of the files the task writes (asked only when the error names no file)."""
    named = [f for f in (exc.filename, exc.filename2) if isinstance(f, (str, os.PathLike))]
    if named:
        paths = [os.fspath(f) for f in named]
    else:
        paths = _open_for_writing(exc.__traceback__)
        if written is not None:
            try:
                paths += list(written())
            except Exception:  # noqa: BLE001 - the error's words must not raise
                pass
        paths += [os.path.join(d, "-") for d in DATA_DIR] + [os.path.join(os.getcwd(), "-")]
    free: list[tuple[int, int, str, int]] = []
    for i, d in enumerate(dict.fromkeys(os.path.dirname(os.path.abspath(p)) for p in paths)):
        try:
            use = shutil.disk_usage(_existing(d))
        except OSError:
            continue
        free.append((use.free, i, d, use.total))
    if not free:
        return "the disk is full"
    left, _, where, total = min(free)      # the fullest (of equals: the likeliest)
    if left > max(ROOMY, total / 100):
        return (f"no room where it wrote, though the disk holding {where} has {room(left)} "
                f"free: a quota, or a disk the run's and the task's folders are not on")
    return f"the disk holding {where} is full: {room(left)} free"


def _open_for_writing(tb: TracebackType | None) -> list[str]:
    """Files open for writing (or just closed) in the frames a traceback went through,
    innermost first."""
    out: list[str] = []
    while tb is not None:
        for v in list(tb.tb_frame.f_locals.values()):
            if isinstance(v, io.IOBase):
                name, mode = getattr(v, "name", None), str(getattr(v, "mode", ""))
                if isinstance(name, str) and any(c in mode for c in "wax+"):
                    out.insert(0, name)
        tb = tb.tb_next
    return out


def _existing(path: str) -> str:
    """``path``, or the nearest folder above it that exists."""
    while not os.path.exists(path) and os.path.dirname(path) != path:
        path = os.path.dirname(path)
    return path
