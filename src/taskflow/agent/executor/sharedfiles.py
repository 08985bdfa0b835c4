"""Large values between an agent and its own executors: a file each, not a pipe copy.

An executor that made a value of at least :data:`SHARE_MIN` bytes with large
buffers (a :class:`~taskflow.wire.messages.Packed`) writes it once into a file
of its agent's shared directory and sends its name
(:class:`~taskflow.wire.messages.Shared`) instead of its bytes. The agent maps
the file (read only) and holds the value as a ``Packed`` over that mapping: it
counts against the node's memory budget as before (:mod:`taskflow.agent.memory`),
spilling copies it to disk and drops the file, and sending it to the master or
another node reads it from the mapping. A local executor that reads it is sent
the name again and maps the file copy-on-write: a task gets arrays over the
file's pages, writable, and what it changes stays its own.

Where: ``$TASKFLOW_SHM_DIR`` (default ``/dev/shm``) / ``taskflow-<uid>`` (0700,
this user's, else nothing is shared) / one directory per agent, named after
its process and the time it started. The file goes when the agent drops the
value (its :class:`Owner` is the last reference), the directory when the agent
ends; the directories of agents that are gone (killed) are removed by the next
agent that sets up on the machine. A file that cannot be written (the
directory's file system is full: ``ENOSPC``) is no error: the value goes down
the pipe, as it did before.

Nothing here is unpickled: the files are written and read by the agent's own
child processes, in a directory only this user can enter.
"""
from __future__ import annotations

import itertools
import mmap
import os
import shutil
import struct
from typing import Any

from ...context import own_dir
from ...wire import messages as M
from ...wire.values import raw

SHARE_MIN = 64 * 1024       # bytes: smaller values go down the pipes, as always
ENV = "TASKFLOW_SHM_DIR"    # where the per-user directory is made (default /dev/shm)
DEFAULT_BASE = "/dev/shm"
DIR = ""                    # this agent's directory (set before its executors fork); "": off
_HEAD = struct.Struct(">4sIQ")      # magic, buffer count, pickle length
_SIZE = struct.Struct(">Q")
_MAGIC = b"TFs1"
_ALIGN = 64                 # each buffer starts on a 64-byte boundary (aligned arrays)
_seq = itertools.count()


# -- the agent's directory ----------------------------------------------------------------
def setup() -> str | None:
    """Make this agent's directory (before its executors fork) and remove those of agents
    that are gone; None: values are not shared here (no such base, not this user's)."""
    global DIR
    if DIR:
        return DIR
    base = os.environ.get(ENV) or DEFAULT_BASE
    root = os.path.join(base, f"taskflow-{os.getuid()}")
    try:
        try:
            own_dir(root)
        except PermissionError:
            return None
        _scavenge(root)
        mine = os.path.join(root, f"a{os.getpid()}-{_started(os.getpid())}")
        os.mkdir(mine, 0o700)
    except OSError:
        return None
    DIR = mine
    return mine


def cleanup() -> None:
    """The agent ends: its directory and every file left in it go."""
    global DIR
    if DIR:
        shutil.rmtree(DIR, ignore_errors=True)
        DIR = ""


def _started(pid: int) -> str:
    """When process ``pid`` started (clock ticks since boot; "" when unknown): with the pid,
    it names one process, whatever pids are reused."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError):
        return ""


def _scavenge(root: str) -> None:
    """Remove the directories of agents that are not running any more."""
    for name in os.listdir(root):
        pid, _, started = name[1:].partition("-")
        if not name.startswith("a") or not pid.isdigit() or not started:
            continue
        if _started(int(pid)) != started:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)


# -- executors write, the agent and executors map ---------------------------------------
def put(v: M.Packed) -> M.Packed | M.Shared:
    """An executor's output: written to a file of the agent's directory, its name to send;
    ``v`` itself when it is small, sharing is off, or the file cannot be written."""
    if not DIR or v.size < SHARE_MIN:
        return v
    name = f"v{os.getpid()}-{next(_seq)}"
    path = os.path.join(DIR, name)
    pickled = memoryview(v.head)
    views = [raw(b) for b in v.bufs]
    head = _HEAD.pack(_MAGIC, len(views), pickled.nbytes) + \
        b"".join(_SIZE.pack(x.nbytes) for x in views)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except OSError:
        return v
    try:
        pos = _write(fd, 0, memoryview(head))
        pos = _write(fd, pos, pickled)
        for view in views:
            pos = _write(fd, _aligned(pos), view)
    except OSError:             # (ENOSPC: the pipe takes it)
        os.close(fd)
        os.unlink(path)
        return v
    os.close(fd)
    return M.Shared(name, v.size)


def _write(fd: int, pos: int, view: memoryview) -> int:
    if view.format != "B" or view.ndim != 1:
        view = view.cast("B")
    while view.nbytes:
        n = os.pwrite(fd, view, pos)
        view = view[n:]
        pos += n
    return pos


def _aligned(pos: int) -> int:
    return -(-pos // _ALIGN) * _ALIGN


def _path(s: M.Shared) -> str:
    name = s.name
    if not DIR or "/" in name or name.startswith("."):
        raise FileNotFoundError(f"no shared value {name!r} here")
    return os.path.join(DIR, name)


def _unpack(m: mmap.mmap) -> M.Packed:
    magic, nbufs, nhead = _HEAD.unpack_from(m, 0)
    if magic != _MAGIC:
        raise ValueError("not a taskflow shared value")
    sizes = [_SIZE.unpack_from(m, _HEAD.size + 8 * i)[0] for i in range(nbufs)]
    pos = _HEAD.size + 8 * nbufs
    view = memoryview(m)
    head = bytes(view[pos:pos + nhead])
    pos += nhead
    bufs = []
    for n in sizes:
        pos = _aligned(pos)
        bufs.append(view[pos:pos + n])
        pos += n
    return M.Packed(head, bufs)


def read(s: M.Shared) -> M.Packed:
    """An executor's input: the value over a copy-on-write mapping of its file (a task may
    change its arrays: the file does not change). FileNotFoundError: it was dropped."""
    with open(_path(s), "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_COPY)
    return _unpack(m)


class Owner:
    """A shared value's file, as long as the agent holds the value (then unlinked; only by
    the agent that made it: a forked executor holds copies of these objects too)."""

    __slots__ = ("path", "pid", "marker")

    def __init__(self, path: str, marker: M.Shared) -> None:
        self.path = path
        self.pid = os.getpid()
        self.marker = marker

    def exists(self) -> bool:
        return os.path.exists(self.path)

    def __del__(self) -> None:
        if os.getpid() == self.pid:
            try:
                os.unlink(self.path)
            except OSError:
                pass


def adopt(s: M.Shared) -> M.Packed:
    """The agent's side: an executor's shared output, held as a ``Packed`` over a read-only
    mapping of its file, which it owns (sent to a local executor by name:
    :func:`marker`)."""
    path = _path(s)
    try:
        with open(path, "rb") as f:
            m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
        v = _unpack(m)
    except BaseException:
        try:
            os.unlink(path)
        except OSError:
            pass
        raise
    v.file = Owner(path, s)
    return v


def marker(v: Any) -> Any:
    """What goes down a pipe to a local executor for payload ``v``: its file's name when
    it has one, else ``v``."""
    if type(v) is M.Packed and v.file is not None:
        return v.file.marker
    return v
