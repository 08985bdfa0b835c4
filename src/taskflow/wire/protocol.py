"""The one framed protocol every transport speaks (pipes, SSH channels, TCP).

A frame is a 4-byte big-endian length followed by a pickled ``(op, body)``
pair; :mod:`.messages` names the ops and says what each body holds. Frames
are written whole (:class:`~.framewriter.FrameWriter` queues them for a
non-blocking stream); readers buffer partial reads (:class:`FrameReader`).
Pickles are read only from peers that proved themselves (a pipe to a child,
an SSH channel, a dial-back connection after its handshake).

A frame that carries large values (:class:`~.messages.Packed`) keeps their
buffers out of the pickle (protocol 5, out of band): its length word has the
top bit set and is followed by the number of buffers and their sizes (4 and
8 bytes each), then the pickle, then the buffers. :func:`encode_parts` gives
the pieces to write as they are (the buffers are the values' own memory);
the reader allocates each buffer once and reads straight into it. So a
100 MB array crosses a pipe with no copy in user space on either side.
"""
from __future__ import annotations

import functools
import mmap
import os
import pickle
import struct
from typing import TYPE_CHECKING, Any, Callable, Union

from ..errors import ProtocolError

if TYPE_CHECKING:
    from .channel import Channel

_LEN = struct.Struct(">I")
_SIZE = struct.Struct(">Q")
PROTOCOL = pickle.HIGHEST_PROTOCOL
MAX_FRAME = 1 << 31
_OOB = 1 << 31              # in the length word: out-of-band buffers follow
MAX_BUFFERS = 1 << 16

Part = Union[bytes, bytearray, memoryview]


def encode(op: int, body: Any) -> bytes:
    """One frame: length prefix plus the pickled ``(op, body)`` (values in band)."""
    blob = pickle.dumps((op, body), PROTOCOL)
    return _LEN.pack(len(blob)) + blob


def encode_parts(op: int, body: Any) -> list[Part]:
    """One frame as the pieces to write in order; large values' buffers out of band.

    Without any :class:`~.messages.Packed` in ``body`` this is ``[encode(op, body)]``.
    """
    bufs: list[pickle.PickleBuffer] = []
    blob = pickle.dumps((op, body), PROTOCOL, buffer_callback=bufs.append)
    if not bufs:
        return [_LEN.pack(len(blob)) + blob]
    if len(bufs) > MAX_BUFFERS:
        raise ValueError(f"a frame of {len(bufs)} buffers (at most {MAX_BUFFERS})")
    views = [b.raw() for b in bufs]
    head = b"".join([_LEN.pack(len(blob) | _OOB), _LEN.pack(len(views))]
                    + [_SIZE.pack(v.nbytes) for v in views])
    return [head, blob, *views]


BIG = 256 * 1024      # bytes: a buffer at least this large is a fresh anonymous mapping


def buffer(n: int) -> bytearray | mmap.mmap:
    """A writable buffer of ``n`` bytes to read into. A large one is an anonymous mapping:
    its pages come zeroed from the kernel as the read fills them (a ``bytearray`` is
    zeroed by a pass of its own first), and go back to it the moment the buffer is
    freed."""
    return mmap.mmap(-1, n) if n >= BIG else bytearray(n)


class _Big:
    """A frame with out-of-band buffers, being read: its pickle, its buffers, how far."""

    __slots__ = ("blob", "bufs", "index", "done")

    def __init__(self, blob: bytes, sizes: list[int]) -> None:
        self.blob = blob
        self.bufs = [buffer(n) for n in sizes]
        self.index = 0          # the buffer being filled
        self.done = 0           # bytes of it filled

    def fill(self, data: memoryview) -> int:
        """Copy what of ``data`` belongs to the buffers; return how much was used."""
        used = 0
        while used < len(data) and self.index < len(self.bufs):
            buf = self.bufs[self.index]
            n = min(len(buf) - self.done, len(data) - used)
            buf[self.done:self.done + n] = data[used:used + n]
            used += n
            self._advance(n)
        return used

    def _advance(self, n: int) -> None:
        self.done += n
        while self.index < len(self.bufs) and self.done >= len(self.bufs[self.index]):
            self.index += 1
            self.done = 0

    def target(self) -> memoryview | None:
        """Where the next bytes go (None: complete)."""
        if self.index >= len(self.bufs):
            return None
        return memoryview(self.bufs[self.index])[self.done:]

    def message(self) -> tuple[int, Any]:
        try:
            msg: tuple[int, Any] = pickle.loads(self.blob, buffers=self.bufs)
        except Exception as exc:  # garbage on the stream
            raise ProtocolError(f"undecodable frame: {exc!r}") from exc
        return msg


class FrameReader:
    """Incremental frame decoder over a file descriptor or a :class:`~.channel.Channel`.

    ``feed`` reads what is available (one read, plus what a TLS channel has
    decoded already) and returns the complete messages; it returns ``None``
    at end of stream. The buffers of a frame with out-of-band values are read
    straight into their own memory (:class:`_Big`).
    """

    __slots__ = ("fd", "_buf", "chunk", "_recv", "_pending", "_recv_into", "_big")

    def __init__(self, source: int | Channel, chunk: int = 1 << 16) -> None:
        self._buf = bytearray()
        self.chunk = chunk
        self._big: _Big | None = None
        if isinstance(source, int):
            self.fd = source
            self._recv: Callable[[int], bytes] = functools.partial(os.read, source)
            self._pending: Callable[[], int] | None = None
            fd = source
            self._recv_into: Callable[[memoryview], int] = lambda v: os.readv(fd, [v])
        else:
            self.fd = source.rfd
            self._recv = source.recv
            self._pending = source.pending
            self._recv_into = source.recv_into

    def feed(self) -> list[tuple[int, Any]] | None:
        if self._big is not None:
            return self._feed_big()
        # os.read allocates its whole size up front: asking for 1 MB per read cost
        # ~15 us each (vs ~1 us for 64 KB). Read big only to finish a big frame.
        want = self.chunk
        buf = self._buf
        if len(buf) >= 4:
            size = _LEN.unpack_from(buf, 0)[0]
            need = size + 4 - len(buf)
            if need > want and not size & _OOB:
                want = min(need, 1 << 26)
        data = self._recv(want)
        if not data:
            return None
        pending = self._pending
        if pending is not None:          # TLS: decoded bytes the descriptor will not announce
            left = pending()
            if left:
                parts = [data]
                while left:
                    parts.append(self._recv(left))
                    left = pending()
                data = b"".join(parts)
        return self.feed_bytes(data)

    def _feed_big(self) -> list[tuple[int, Any]] | None:
        """Read into the buffers of the frame being read, until they are full or the
        stream has nothing more now; then carry on with the frames after it."""
        big = self._big
        assert big is not None
        out: list[tuple[int, Any]] = []
        while True:
            target = big.target()
            if target is None:
                self._big = None
                out.append(big.message())
                pending = self._pending
                left = pending() if pending is not None else 0
                if left:            # TLS: decoded bytes the descriptor will not announce
                    out.extend(self.feed_bytes(self._recv(left)))
                return out
            try:
                n = self._recv_into(target)
            except BlockingIOError:
                return out
            if not n:
                return None
            big._advance(n)
            if self._pending is None and n < len(target):
                return out      # a pipe or socket: nothing more now (next readiness event)

    def feed_bytes(self, data: bytes) -> list[tuple[int, Any]]:
        out: list[tuple[int, Any]] = []
        big = self._big
        if big is not None:         # the buffers of a frame being read come first
            used = big.fill(memoryview(data))
            if big.target() is not None:
                return out
            self._big = None
            out.append(big.message())
            data = data[used:]
        buf = self._buf
        buf += data
        pos = 0
        n = len(buf)
        while n - pos >= 4:
            (size,) = _LEN.unpack_from(buf, pos)
            if size & _OOB:
                big, end = self._start_big(buf, pos, n, size & ~_OOB)
                if big is None:
                    break
                pos = end
                if big.target() is not None:     # the rest is read into its buffers
                    self._big = big
                    break
                out.append(big.message())
                continue
            if size > MAX_FRAME:
                raise ProtocolError(f"frame of {size} bytes: not a taskflow peer")
            end = pos + 4 + size
            if end > n:
                break
            try:
                out.append(pickle.loads(memoryview(buf)[pos + 4:end]))
            except Exception as exc:  # garbage on the stream
                raise ProtocolError(f"undecodable frame: {exc!r}") from exc
            pos = end
        if pos:
            del buf[:pos]
        return out

    @staticmethod
    def _start_big(buf: bytearray, pos: int, n: int, size: int) -> tuple[_Big | None, int]:
        """A frame with out-of-band buffers starts at ``pos``: once its head and pickle
        are in ``buf``, its buffers (and what of them ``buf`` holds); else (None, pos)."""
        if n - pos < 8:
            return None, pos
        (count,) = _LEN.unpack_from(buf, pos + 4)
        if count > MAX_BUFFERS:
            raise ProtocolError(f"frame of {count} buffers: not a taskflow peer")
        start = pos + 8 + 8 * count
        end = start + size
        if end > n:
            return None, pos
        sizes = [_SIZE.unpack_from(buf, pos + 8 + 8 * i)[0] for i in range(count)]
        big = _Big(bytes(buf[start:end]), sizes)
        end += big.fill(memoryview(buf)[end:n])
        return big, end

    def pending(self) -> int:
        return len(self._buf)


def read_frame_blocking(source: int | Channel) -> tuple[int, Any]:
    """Read exactly one frame (used for handshakes)."""
    recv = functools.partial(os.read, source) if isinstance(source, int) else source.recv
    head = _read_exact(recv, 4)
    (size,) = _LEN.unpack(head)
    if size > MAX_FRAME:
        raise ProtocolError(f"frame of {size} bytes: not a taskflow peer")
    frame: tuple[int, Any] = pickle.loads(_read_exact(recv, size))
    return frame


def _read_exact(recv: Callable[[int], bytes], n: int) -> bytes:
    parts = []
    while n:
        b = recv(n)
        if not b:
            raise EOFError("stream closed")
        parts.append(b)
        n -= len(b)
    return b"".join(parts)


def grow_pipe(fd: int, size: int = 1 << 20) -> None:
    """Ask for a 1 MiB pipe buffer (fewer wake-ups for batches); no-op elsewhere."""
    try:
        import fcntl
        fcntl.fcntl(fd, getattr(fcntl, "F_SETPIPE_SZ", 1031), size)
    except (OSError, ImportError, ValueError):
        pass


def write_all(sink: int | Channel, data: Part) -> None:
    """Blocking write of a whole buffer."""
    send = functools.partial(os.write, sink) if isinstance(sink, int) else sink.send
    view = memoryview(data).cast("B")
    while view:
        n = send(view)
        view = view[n:]


def write_parts(sink: int | Channel, parts: list[Part]) -> None:
    """Blocking write of a frame's pieces (:func:`encode_parts`), in order."""
    for p in parts:
        write_all(sink, p)

