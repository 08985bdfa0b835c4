"""The values a node holds: in memory, or spilled to the node's disk.

The agent keeps a value when it is too large to travel with its result, when
the master pushed it for a task, or when a task queued here waits for it.
:class:`ValueStore` keeps them in memory in the order they came, and on the
word of :class:`~.memory.NodeMemory` writes the oldest large ones to files in
its spill directory (user-only, under the run's data directory): a value
there is read back when a task, another node or the master needs it, and
its file goes when the master drops the value. A spilled value's file holds
its pickle and its out-of-band buffers one after the other (written from
where they are, read straight into their own buffers).

A value its executors made may be held over a file of the agent's shared
directory (:mod:`.executor.sharedfiles`: ``Packed.file`` is set): it counts in
:attr:`ValueStore.shared` (RAM that is no process's own), spilling it is a
move (its shared file goes once it is on disk), and its file goes with the
value's last reference.

A spill that fails (the disk holding the run's directory is full) loses
nothing: the value stays in memory, the node reports it (:attr:`ValueStore.failed`,
a "full" memory event the master turns into one warning naming the run's
directory), and spilling is tried again after :data:`FULL_WAIT` seconds.
"""
from __future__ import annotations

import mmap
import os
import pickle
import shutil
import struct
import time
from typing import Any, BinaryIO, Iterator

from ..context import private_dir
from ..wire.messages import Packed, Payload
from ..wire.protocol import buffer
from .executor import sharedfiles

SPILL_MIN = 64 * 1024        # bytes: smaller values are not worth a file
FULL_WAIT = 10.0             # s between spills after one failed (a full disk)
_HEAD = struct.Struct(">4sII")     # magic, pickle length (or 0 for plain bytes), buffer count
_SIZE = struct.Struct(">Q")
_PLAIN = b"TFv1"
_PACKED = b"TFp1"


class ValueStore:
    """data id -> value (``bytes`` or :class:`~taskflow.wire.messages.Packed`)."""

    __slots__ = ("mem", "large", "disk", "nbytes", "spilled", "dir", "nspills", "nreads",
                 "failed", "_retry_at", "shared")

    def __init__(self, spill_dir: str | None = None) -> None:
        self.mem: dict[int, Payload] = {}            # in memory, oldest first
        self.large: dict[int, None] = {}             # those worth spilling, oldest first
        self.disk: dict[int, tuple[str, int]] = {}   # spilled: (file, bytes)
        self.nbytes = 0          # bytes of the values in memory
        self.spilled = 0         # bytes of the values on disk
        self.dir = spill_dir
        self.nspills = 0
        self.nreads = 0
        self.failed: tuple[int, int] | None = None   # a spill failed: (errno, bytes free)
        self._retry_at = 0.0        # no spill before this (monotonic) after a failed one
        self.shared = 0          # bytes of those in memory that are in shared files
        #                          (executor.sharedfiles: in no process's memory but in RAM)

    # -- the mapping the agent's parts use ------------------------------------------------
    def __contains__(self, did: object) -> bool:
        return did in self.mem or did in self.disk

    def __len__(self) -> int:
        return len(self.mem) + len(self.disk)

    def __iter__(self) -> Iterator[int]:
        yield from list(self.mem)
        yield from list(self.disk)

    def __getitem__(self, did: int) -> Payload:
        v = self.get(did)
        if v is None:
            raise KeyError(did)
        return v

    def __setitem__(self, did: int, payload: Payload) -> None:
        self.pop(did)
        self.mem[did] = payload
        n = len(payload)
        self.nbytes += n
        if n >= SPILL_MIN:
            self.large[did] = None
            if type(payload) is Packed and payload.file is not None:
                self.shared += n

    def get(self, did: int) -> Payload | None:
        """The value (read back from its file when spilled: it stays there too)."""
        v = self.mem.get(did)
        if v is None and did in self.disk:
            v = self._read(did)
        return v

    def pop(self, did: int, default: None = None) -> Payload | None:
        """Forget a value, in memory or on disk."""
        v = self.mem.pop(did, None)
        if v is not None:
            self.nbytes -= len(v)
            if self.large.pop(did, 0) is None and type(v) is Packed and v.file is not None:
                self.shared -= len(v)       # (its file goes with its last reference)
            return v
        entry = self.disk.pop(did, None)
        if entry is not None:
            path, size = entry
            self.spilled -= size
            try:
                os.unlink(path)
            except OSError:
                pass
        return default

    # -- spilling --------------------------------------------------------------------------
    def spill(self, want: int) -> list[tuple[int, int]]:
        """Write the oldest large values to disk until ``want`` bytes have left memory;
        return [(data id, bytes)] of those written."""
        out: list[tuple[int, int]] = []
        freed = 0
        if self._retry_at and time.monotonic() < self._retry_at:
            return out
        for did in list(self.large):
            if freed >= want:
                break
            v = self.mem[did]
            n = len(v)
            try:
                path = self._write(did, v)
            except OSError as exc:      # it stays in memory; the master is told
                self._retry_at = time.monotonic() + FULL_WAIT
                try:
                    free = shutil.disk_usage(self.dir or ".").free
                except OSError:
                    free = -1
                self.failed = (exc.errno or 0, free)
                break
            self.disk[did] = (path, n)
            if type(v) is Packed and v.file is not None:
                self.shared -= n            # (a move: its shared file goes now)
            del self.mem[did]
            del self.large[did]
            self.nbytes -= n
            self.spilled += n
            self.nspills += 1
            freed += n
            out.append((did, n))
        return out

    def _path(self, did: int) -> str:
        if self.dir is None:
            import tempfile
            self.dir = tempfile.mkdtemp(prefix="taskflow-spill-")
        private_dir(self.dir)
        return os.path.join(self.dir, f"d{did}")

    def _write(self, did: int, v: Payload) -> str:
        path = self._path(did)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        try:
            for view in flat(v):
                while view:
                    n = os.write(fd, view)
                    view = view[n:]
        except BaseException:
            os.close(fd)
            os.unlink(path)             # (a part of a value is no value)
            raise
        os.close(fd)
        return path

    def _read(self, did: int) -> Payload:
        path, _ = self.disk[did]
        self.nreads += 1
        with open(path, "rb", buffering=0) as f:
            buf = buffer(os.fstat(f.fileno()).st_size)
            _readinto_all(f, memoryview(buf))
        return unflat(buf)

    def read_range(self, did: int, off: int, n: int) -> tuple[int, Any] | None:
        """Bytes [off, off + n) of a value's flat layout (see :func:`flat`) and its whole
        size, without reading the rest (a spilled value: from its file); None: not here."""
        v = self.mem.get(did)
        if v is not None:
            views = flat(v)
            total = sum(x.nbytes for x in views)
            return total, _cut(views, off, n)
        entry = self.disk.get(did)
        if entry is None:
            return None
        path, _ = entry
        fd = os.open(path, os.O_RDONLY)
        try:
            total = os.fstat(fd).st_size
            return total, os.pread(fd, max(0, min(n, total - off)), off)
        finally:
            os.close(fd)

    def close(self) -> None:
        """The agent leaves: its spill files and shared files go."""
        if self.dir is not None:
            shutil.rmtree(self.dir, ignore_errors=True)
        sharedfiles.cleanup()


class Incoming:
    """A value copied here in parts (runtime.relay): one buffer, filled where each part
    goes (a part sent again, after the copy moved to another source, fills its place
    again)."""

    __slots__ = ("buf", "parts", "got")

    def __init__(self, total: int) -> None:
        self.buf = buffer(total)
        self.parts: dict[int, int] = {}     # offset -> bytes
        self.got = 0

    def add(self, off: int, data: Any) -> bool:
        """Put a part in place; True once every byte is here."""
        view = memoryview(data)
        n = view.nbytes
        self.buf[off:off + n] = view
        old = self.parts.get(off)
        if old is None:
            self.parts[off] = n
            self.got += n
        return self.got >= len(self.buf)


def _raw(buf: Any) -> memoryview:
    view = buf.raw() if type(buf) is pickle.PickleBuffer else memoryview(buf)
    return view if view.format == "B" and view.ndim == 1 else view.cast("B")


def flat(v: Payload) -> list[memoryview]:
    """A value as one run of bytes, in pieces: a header (kind, pickle length, buffer
    sizes), then the pickle (or the plain pickle ``bytes``), then the buffers. Spill
    files hold it; a value copied between nodes travels as slices of it."""
    if type(v) is Packed:
        views = [memoryview(v.head)] + [_raw(b) for b in v.bufs]
        head = _HEAD.pack(_PACKED, len(v.head), len(v.bufs)) + b"".join(
            _SIZE.pack(x.nbytes) for x in views[1:])
        return [memoryview(head)] + views
    return [memoryview(_HEAD.pack(_PLAIN, 0, 0)), memoryview(v)]


def unflat(buf: bytearray | mmap.mmap) -> Payload:
    """The value a :func:`flat` layout holds (its buffers are views of ``buf``)."""
    magic, nhead, nbufs = _HEAD.unpack_from(buf, 0)
    pos = _HEAD.size
    if magic == _PLAIN:
        return bytes(memoryview(buf)[pos:])
    if magic != _PACKED:
        raise ValueError("not a taskflow value")
    sizes = [_SIZE.unpack_from(buf, pos + 8 * i)[0] for i in range(nbufs)]
    pos += 8 * nbufs
    head = bytes(memoryview(buf)[pos:pos + nhead])
    pos += nhead
    bufs = []
    for n in sizes:
        bufs.append(memoryview(buf)[pos:pos + n])
        pos += n
    return Packed(head, bufs)


def _cut(views: list[memoryview], off: int, n: int) -> memoryview | bytes:
    """Bytes [off, off + n) of the pieces ``views`` (a view when inside one piece)."""
    out: list[memoryview] = []
    for v in views:
        size = v.nbytes
        if off >= size:
            off -= size
            continue
        take = v[off:off + n]
        out.append(take)
        n -= take.nbytes
        off = 0
        if n <= 0:
            break
    if len(out) == 1:
        return out[0]
    return b"".join(out)


def _readinto_all(f: BinaryIO, view: memoryview) -> None:
    done = 0
    while done < len(view):
        n = f.readinto(view[done:])  # type: ignore[attr-defined]
        if not n:
            raise OSError("a spill file ended early")
        done += n
