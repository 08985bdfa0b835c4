"""A stream's items at the master: in memory up to a bound, then on disk.

Items are numbered from 0 in the order they arrived; a consumer group reads
them by number, and the items every group has read are dropped from the
front. Above :data:`MEMORY` bytes held in memory a new item goes to the
stream's spill file instead (written once, read once per group, deleted when
the stream is forgotten): a fast producer and a slow consumer cost the master
disk, not memory, as values left on nodes do.
"""
from __future__ import annotations

import os
from collections import deque
from typing import Union

MEMORY = 32 * 2**20      # bytes of one stream's items kept in memory
_Entry = Union[bytes, tuple[int, int]]      # the item, or (offset, length) in the spill file


class Items:
    """One stream's items not yet read by every group."""

    def __init__(self, spill_path: str, memory: int = MEMORY) -> None:
        self.spill_path = spill_path
        self.memory = memory
        self.entries: deque[_Entry] = deque()
        self.first = 0          # the number of entries[0]
        self.held = 0           # bytes in memory
        self.spilled = 0        # items written to disk in all
        self._fd = -1
        self._end = 0           # the spill file's size

    @property
    def end(self) -> int:
        """The number the next item gets (items published so far)."""
        return self.first + len(self.entries)

    def append(self, blob: bytes) -> None:
        if self.held + len(blob) <= self.memory:
            self.entries.append(blob)
            self.held += len(blob)
            return
        if self._fd < 0:
            self._fd = os.open(self.spill_path, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
        os.pwrite(self._fd, blob, self._end)
        self.entries.append((self._end, len(blob)))
        self._end += len(blob)
        self.spilled += 1

    def get(self, n: int) -> bytes:
        e = self.entries[n - self.first]
        if type(e) is bytes:
            return e
        off, size = e
        return os.pread(self._fd, size, off)

    def drop_before(self, n: int) -> None:
        """Forget the items numbered below ``n`` (every group read them)."""
        entries = self.entries
        while self.first < n and entries:
            e = entries.popleft()
            if type(e) is bytes:
                self.held -= len(e)
            self.first += 1
        if not entries and self._fd >= 0:       # (the file restarts empty)
            os.ftruncate(self._fd, 0)
            self._end = 0

    def close(self) -> None:
        self.entries.clear()
        self.held = 0
        if self._fd >= 0:
            os.close(self._fd)
            self._fd = -1
            try:
                os.unlink(self.spill_path)
            except OSError:
                pass
