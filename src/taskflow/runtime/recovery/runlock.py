"""A run directory's lock: how ``taskflow clean`` tells a run in use from one that is over.

The master holds an exclusive ``flock`` on ``<run dir>/run.lock`` from the
moment it creates the directory until the run has stopped; a run resumed
from an earlier one holds a shared lock on the earlier run's file while it
reads it. The kernel drops a lock when its holder dies, however it dies
(``kill -9``, an OOM kill, a node that reboots: NFS gives back the locks of a
client that is gone), so a lock that can be taken means nobody is using the
run, and one that cannot means somebody is, on this host or another that
shares the file system. A pid in the journal says neither: it may be reused,
and it means nothing on another host. The file holds the holder's pid and
host, for the message. The lock is taken before the journal exists and the
file is removed when the run ends.
"""
from __future__ import annotations

import fcntl
import logging
import os
import socket

log = logging.getLogger(__name__)

LOCK_NAME = "run.lock"


class RunLock:
    """A lock on one run directory, held until :meth:`release` (or the process ends)."""

    def __init__(self, fd: int, path: str) -> None:
        self.fd = fd
        self.path = path

    @classmethod
    def take(cls, run_dir: str, shared: bool = False) -> RunLock | None:
        """The run's lock, exclusive (the run itself, ``taskflow clean``) or shared (a run
        resumed from it); None when somebody else holds it. OSError when it cannot be
        locked at all (a file system without locks, a directory not ours)."""
        path = os.path.join(run_dir, LOCK_NAME)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        try:
            fcntl.flock(fd, (fcntl.LOCK_SH if shared else fcntl.LOCK_EX) | fcntl.LOCK_NB)
        except BlockingIOError:
            os.close(fd)
            return None
        except OSError:
            os.close(fd)
            raise
        return cls(fd, path)

    @classmethod
    def hold_for_run(cls, run_dir: str) -> RunLock | None:
        """The lock a starting run holds for its life, with its pid and host written in
        (None, said once, where the file system has no locks: the run goes on)."""
        try:
            lock = cls.take(run_dir)
        except OSError as exc:
            log.warning("no lock on the run directory %s (%s): taskflow clean cannot tell "
                        "that this run is going on", run_dir, exc)
            return None
        if lock is not None:    # (a new directory's new file: no truncation, which costs
            # ext4 a flush at close, ~1 ms)
            try:
                os.pwrite(lock.fd, f"{os.getpid()} {socket.gethostname()}\n".encode(), 0)
            except OSError:     # a full disk: the lock holds without its text, and the
                pass            # journal, written next, fails the start naming the disk
        return lock

    @classmethod
    def hold_shared(cls, run_dir: str) -> RunLock | None:
        """A shared hold on an earlier run this one reads (None if it cannot be had)."""
        try:
            return cls.take(run_dir, shared=True)
        except OSError:
            return None

    def release(self, remove: bool = False) -> None:
        """Give the lock back (``remove``: and delete the file: the run is over)."""
        if self.fd < 0:
            return
        if remove:
            try:
                os.unlink(self.path)
            except OSError:
                pass
        os.close(self.fd)       # closing drops the flock
        self.fd = -1


def holder(run_dir: str) -> str:
    """Who holds the run's lock, as its file says ("pid 123 on host"), or ""."""
    try:
        with open(os.path.join(run_dir, LOCK_NAME)) as f:
            pid, _, host = f.read(200).strip().partition(" ")
    except OSError:
        return ""
    return f"pid {pid} on {host}" if pid.isdigit() else ""


def has_lock_file(run_dir: str) -> bool:
    return os.path.exists(os.path.join(run_dir, LOCK_NAME))
