"""A stream's items at the master: in memory up to a bound, then on disk; in a
resumable run, every item kept in the run directory for a resumed run.

Items are numbered from 0 in the order they arrived; a consumer group reads
them by number, and the items every group has read are dropped from the
front. Above :data:`MEMORY` bytes held in memory a new item is read back from
disk instead: a fast producer and a slow consumer cost the master disk, not
memory, as values left on nodes do.

Two files, one per stream:

- a *spill* file (a run that is not resumable): only the items beyond the
  memory bound, written once, read once per group, deleted with the stream;
- a *kept* file (a resumable run: ``<run dir>/streams/``): every item, in
  checked frames (:data:`FRAME`: a kind, the number of the producer that
  published it, the length, the CRC-32 of the producer's number and the
  bytes), and, when the stream closed well with only tasks as producers, a
  close frame (its item count and producers, :class:`Closed`); before or after
  it, a *took* frame per consumer task that ended well (:meth:`Items.took`: which
  items each of its consumer groups took). A resumed run reads it
  with :func:`read_closed`: a stream whose file has the close frame and whose
  every frame matches its checksum is replayed (runtime/streams.py); a damage,
  a missing close or a count that does not match is never read as items.
"""
from __future__ import annotations

import os
import pickle
import struct
import zlib
from array import array
from collections import deque
from typing import BinaryIO, NamedTuple, Union

MEMORY = 32 * 2**20      # bytes of one stream's items kept in memory
BUFFER = 256 * 2**10     # bytes of a kept file's frames written at once (or at a read, a close)
MAGIC = b"taskflow stream items 1\n"
FRAME = struct.Struct(">cHII")      # kind (b"i" an item, b"c" the close, b"t" a consumer's
#                                     items), producer, length, CRC
ITEM, CLOSE, TOOK = b"i", b"c", b"t"
_Entry = Union[bytes, tuple[int, int]]      # the item, or (offset, length) in the file
# a consumer task's items: (group, first, end) ranges of item numbers, in the order taken
Ranges = tuple[tuple[str, int, int], ...]


class Closed(NamedTuple):
    """A kept file's close frame: the stream closed well."""

    sid: str                                    # the stream's id
    items: int                                  # how many items it had
    producers: tuple[tuple[int, str, bytes], ...]   # its producer tasks: (number, name,
    #                                                 resume key); an item frame has the number
    files: tuple[tuple[str, int, int], ...] = ()    # a FileStream's: (path, size, mtime_ns)


class Items:
    """One stream's items not yet read by every group.

    ``kept``: a resumable run's file of every item (see the module); else items
    beyond the memory bound go to ``spill_path``, deleted by :meth:`close`.
    """

    def __init__(self, spill_path: str, memory: int = MEMORY, kept: bool = False) -> None:
        self.spill_path = spill_path
        self.memory = memory
        self.kept = kept
        self.entries: deque[_Entry] = deque()
        self.first = 0          # the number of entries[0]
        self.held = 0           # bytes in memory
        self.spilled = 0        # items written to the spill file in all
        self._fd = -1
        self._end = 0           # the file's size (kept: with the buffer's bytes)
        self._buf: list[bytes] = []     # kept: frames not written yet ...
        self._buffered = 0              # ... their size
        self.tags: array[int] | None = None     # read back (read_closed): each one's producer
        # ... and the consumer tasks that ended well: their key -> what they took (None: two
        # had that key, their shares cannot be told apart)
        self.consumers: dict[bytes, Ranges | None] | None = None
        self.after_close: set[bytes] = set()    # ... those that ended after the close

    @property
    def end(self) -> int:
        """The number the next item gets (items published so far)."""
        return self.first + len(self.entries)

    def _open(self) -> None:
        self._fd = os.open(self.spill_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        if self.kept:
            os.write(self._fd, MAGIC)
            self._end = len(MAGIC)

    def append(self, blob: bytes, producer: int = 0) -> None:
        """A new item; ``producer``: its producer's number in the stream (a kept file
        keeps it: a resumed run gives back a restored producer's items by it)."""
        if self.kept:
            if self._fd < 0:
                self._open()
            head = FRAME.pack(ITEM, producer, len(blob), zlib.crc32(blob, producer))
            self._buf += (head, blob)
            self._buffered += len(head) + len(blob)
            self._end += len(head)
            at = self._end
            self._end += len(blob)
            if self._buffered >= BUFFER:
                self.flush()
            if self.held + len(blob) <= self.memory:
                self.entries.append(blob)
                self.held += len(blob)
            else:
                self.entries.append((at, len(blob)))
            return
        if self.held + len(blob) <= self.memory:
            self.entries.append(blob)
            self.held += len(blob)
            return
        if self._fd < 0:
            self._open()
        os.pwrite(self._fd, blob, self._end)
        self.entries.append((self._end, len(blob)))
        self._end += len(blob)
        self.spilled += 1

    def flush(self) -> None:
        """A kept file's buffered frames on disk (the OS's: a killed master loses none)."""
        if self._buf:
            data = b"".join(self._buf)
            self._buf = []
            self._buffered = 0
            os.pwrite(self._fd, data, self._end - len(data))

    def get(self, n: int) -> bytes:
        e = self.entries[n - self.first]
        if type(e) is bytes:
            return e
        off, size = e
        if self._buf:
            self.flush()
        return os.pread(self._fd, size, off)

    def drop_before(self, n: int) -> None:
        """Forget the items numbered below ``n`` (every group read them)."""
        entries = self.entries
        while self.first < n and entries:
            e = entries.popleft()
            if type(e) is bytes:
                self.held -= len(e)
            self.first += 1
        if not entries and self._fd >= 0 and not self.kept:     # (the file restarts empty)
            os.ftruncate(self._fd, 0)
            self._end = 0

    def closed(self, record: Closed | None) -> None:
        """The stream closed: a kept file gets its close frame (``record``; None: it
        closed with an error, or the program produced it: not replayable), on disk."""
        if not self.kept:
            return
        if self._fd < 0:
            self._open()
        if record is not None:
            blob = pickle.dumps(tuple(record), 4)
            self._buf += (FRAME.pack(CLOSE, 0, len(blob), zlib.crc32(blob)), blob)
            self._end += FRAME.size + len(blob)
        self.flush()
        if record is not None:
            os.fsync(self._fd)

    def took(self, key: bytes, name: str, ranges: Ranges) -> None:
        """A kept file: consumer task ``name`` (its call's resume ``key``) ended well after
        taking ``ranges`` (a resumed run restores it only with them: runtime/streamreplay.py);
        on the OS's disk at once. Nothing once the run let go of the file."""
        if not self.kept or (self._fd < 0 and self._end):
            return
        if self._fd < 0:
            self._open()
        blob = pickle.dumps((key, name, ranges), 4)
        self._buf += (FRAME.pack(TOOK, 0, len(blob), zlib.crc32(blob)), blob)
        self._buffered += FRAME.size + len(blob)
        self._end += FRAME.size + len(blob)
        self.flush()

    def close(self) -> None:
        """The run ends: memory let go; a spill file goes, a kept file stays."""
        self.entries.clear()
        self.held = 0
        if self._fd >= 0:
            if self.kept:
                self.flush()
            os.close(self._fd)
            self._fd = -1
            if not self.kept:
                try:
                    os.unlink(self.spill_path)
                except OSError:
                    pass


def read_closed(path: str, sid: str, into: str, memory: int = MEMORY
                ) -> tuple[Items, Closed] | str:
    """An earlier run's kept file ``path`` of stream ``sid``, copied to ``into`` (this
    run's kept file) as it is checked: (its items, its close) when every frame matches its
    checksum and it has a close frame for ``sid`` whose count matches; else why it cannot
    be replayed (one line), and nothing is left at ``into``."""
    try:
        with open(path, "rb") as f:
            got = _copy(f, os.fstat(f.fileno()).st_size, sid, into, memory)
    except OSError as exc:
        got = f"it cannot be read ({exc})"
    if isinstance(got, str):
        try:
            os.unlink(into)
        except OSError:
            pass
    return got


def _copy(f: BinaryIO, size: int, sid: str, into: str, memory: int
          ) -> tuple[Items, Closed] | str:
    if f.read(len(MAGIC)) != MAGIC:
        return "its file is not a stream file this taskflow can read"
    items = Items(into, memory, kept=True)
    items.tags = array("H")
    items.consumers = {}
    got = _frames(f, size, sid, items, items.tags, items.consumers, items.after_close)
    if isinstance(got, str):
        items.close()
        return got
    return items, got


def _frames(f: BinaryIO, size: int, sid: str, items: Items, tags: array[int],
            consumers: dict[bytes, Ranges | None], after: set[bytes]) -> Closed | str:
    """The frames of a kept file: its items (copied to ``items``), its consumers' took
    frames (into ``consumers``), then its close frame, after which only took frames."""
    pos = len(MAGIC)
    closed: Closed | None = None
    while pos < size:
        head = f.read(FRAME.size)
        if len(head) < FRAME.size:
            break
        kind, producer, n, crc = FRAME.unpack(head)
        if pos + FRAME.size + n > size:
            break
        blob = f.read(n)
        if len(blob) != n or zlib.crc32(blob, producer) != crc or \
                kind not in (ITEM, CLOSE, TOOK) or (closed is not None and kind != TOOK):
            return f"its file is damaged at byte {pos} (a frame does not match its checksum)"
        pos += FRAME.size + n
        if kind == ITEM:
            items.append(blob, producer)
            tags.append(producer)
        elif kind == TOOK:
            key, _, ranges = pickle.loads(blob)
            consumers[key] = None if key in consumers else ranges
            if closed is not None:
                after.add(key)
        else:
            closed = Closed(*pickle.loads(blob))
            if closed.sid != sid or closed.items != items.end:
                return (f"its file's close frame does not match it ({closed.items} item(s) "
                        f"said, {items.end} read, stream {closed.sid!r})")
            items.closed(closed)
    if closed is not None:      # (a took frame cut short after it: that consumer runs again)
        return closed
    return f"it was not closed in that run ({items.end} item(s) were kept)"
