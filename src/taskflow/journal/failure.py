"""Why a write of a run's record failed, in one line that names the file and the disk.

Used for the journal (here and in its writer process: standard library only),
the resume log, and the values a node writes into the run's directory
(spills, file versions). "journal /scratch/runs/R/journal.db: the disk is
full (database or disk is full; 0 B free on /scratch)" tells the user what
to free and where; ``OperationalError('cannot rollback ...')`` did not.
"""
from __future__ import annotations

import errno
import os
import shutil

# seconds a write waits for a journal that another process holds locked before the run
# fails (TASKFLOW_JOURNAL_LOCK_WAIT: tests shorten it)
LOCK_WAIT = float(os.environ.get("TASKFLOW_JOURNAL_LOCK_WAIT", "30"))


def mount_of(path: str) -> str:
    """The mount point of the file system holding ``path`` (or the folder it would be in)."""
    p = os.path.abspath(path)
    while not os.path.exists(p) and os.path.dirname(p) != p:
        p = os.path.dirname(p)
    while not os.path.ismount(p) and os.path.dirname(p) != p:
        p = os.path.dirname(p)
    return p


def free_text(path: str) -> str:
    """'12 MB free on /scratch' for the file system holding ``path`` ('' if unknown)."""
    where = mount_of(path)
    try:
        free = shutil.disk_usage(where).free
    except OSError:
        return f"on {where}"
    for unit, size in (("GB", 1e9), ("MB", 1e6), ("kB", 1e3)):
        if free >= size:
            return f"{free / size:.1f} {unit} free on {where}"
    return f"{free} B free on {where}"


def is_full(exc: BaseException) -> bool:
    """A full disk (or quota), as an OSError or as SQLite says it."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return "disk is full" in str(exc) or "disk quota" in str(exc).lower()


def describe(what: str, path: str, exc: BaseException) -> str:
    """``what`` (journal, resume log, ...) at ``path`` could not be written: why, one line."""
    text = str(exc) or type(exc).__name__
    low = text.lower()
    if is_full(exc):
        return f"{what} {path}: the disk is full ({text}; {free_text(path)})"
    if "locked" in low or "busy" in low:
        return (f"{what} {path}: locked by another process for more than {LOCK_WAIT:g} s "
                f"({text}); the run's record cannot wait longer")
    if "not a database" in low or "malformed" in low or "corrupt" in low:
        return f"{what} {path}: the file is damaged ({text})"
    if "readonly" in low or "read-only" in low or \
            (isinstance(exc, OSError) and exc.errno == errno.EROFS):
        return f"{what} {path}: the file system is read-only ({text})"
    return f"{what} {path}: {type(exc).__name__}: {text}"
