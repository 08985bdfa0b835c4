"""The resume log's frames on disk: each one checked, a damage told from a truncated end.

The log (:mod:`.log` writes it, :mod:`.restore` reads it) starts with
:data:`MAGIC` (its version: a log another version wrote is not read, but for
those in :data:`READS`), then a
frame per write: a head of :data:`HEAD` ``.size`` bytes, the pickled header (the
records) and the body (the values, in record order). The head is
:data:`SYNC`, the header's length, the body's length, the header's CRC-32 and
the CRC-32 of those 20 bytes; each value's CRC-32 is in its record (checked
when the value is read: a resume reads only the values it restores).

So a damage is never read as data: a head whose checksum fails is a damage
(not the end of the log, as a length read as "past the end" was), and reading
goes on at the next intact frame: the next :data:`SYNC` whose head and header
match their checksums (:func:`read_frames`). Only a head that is intact and
says its frame goes past the end of the file, or a file that ends inside a
head, is a truncated end: the master died while writing its last frame.
"""
from __future__ import annotations

import struct
import zlib
from typing import Any, Iterator, NamedTuple

# the version is the last figure: a log another version wrote is refused as a whole;
# 4 added the "c" record (log.py) to 3's: this version reads both
MAGIC = b"taskflow resume log 4\n"
READS = (MAGIC, b"taskflow resume log 3\n")
SYNC = b"\xd7TFr"           # a frame starts here (reading resumes at one after a damage)
HEAD = struct.Struct(">4sIQII")     # SYNC, header length, body length, header CRC, head CRC
_FIRST = struct.Struct(">4sIQI")    # the head but its own CRC
_SCAN = 1 << 20                     # bytes read at a time while looking for the next frame


def head(header: bytes, body_size: int) -> bytes:
    """The head of a frame whose pickled header is ``header``."""
    first = _FIRST.pack(SYNC, len(header), body_size, zlib.crc32(header))
    return first + zlib.crc32(first).to_bytes(4, "big")


class Frame(NamedTuple):
    pos: int            # where its head starts
    header: bytes       # the pickled records (their checksum matched)
    body: int           # where its values start
    end: int            # where the next frame starts


class Damage(NamedTuple):
    pos: int                # where the damaged frame starts
    why: str
    resumed: int | None     # where reading went on (None: no intact frame after it)


def read_frames(f: Any, size: int, damages: list[Damage]) -> Iterator[Frame]:
    """The intact frames of a log file ``f`` of ``size`` bytes (after :data:`MAGIC`), in
    order; each damage is appended to ``damages``, and reading goes on after it."""
    pos = len(MAGIC)
    while pos + HEAD.size <= size:
        got = frame_at(f, pos, size)
        if got is None:
            return                      # truncated by the master's death
        if isinstance(got, Frame):
            yield got
            pos = got.end
            continue
        nxt = next_frame(f, pos + 1, size)
        damages.append(Damage(pos, got, nxt))
        if nxt is None:
            return
        pos = nxt


def frame_at(f: Any, pos: int, size: int) -> Frame | str | None:
    """The frame whose head starts at ``pos``; None: the file ends inside it (a truncated
    end); a str: why it is damaged."""
    f.seek(pos)
    raw = f.read(HEAD.size)
    if len(raw) < HEAD.size:
        return None
    sync, hlen, blen, hcrc, crc = HEAD.unpack(raw)
    if sync != SYNC or zlib.crc32(raw[:_FIRST.size]) != crc:
        return "a frame's head does not match its checksum"
    body = pos + HEAD.size + hlen
    if body + blen > size:
        return None
    header = f.read(hlen)
    if zlib.crc32(header) != hcrc:
        return "a frame's records do not match their checksum"
    return Frame(pos, header, body, body + blen)


def next_frame(f: Any, start: int, size: int) -> int | None:
    """Where the next intact frame at or after ``start`` begins (None: there is none)."""
    pos: int = start
    while pos < size:
        f.seek(pos)
        chunk = f.read(_SCAN)
        if not chunk:
            return None
        i = chunk.find(SYNC)
        while i >= 0:
            if isinstance(frame_at(f, pos + i, size), Frame):
                return int(pos + i)
            i = chunk.find(SYNC, i + 1)
        if len(chunk) < _SCAN:
            return None
        pos += len(chunk) - (len(SYNC) - 1)
    return None
