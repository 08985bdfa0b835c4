"""The one framed protocol every transport speaks (pipes, SSH channels, TCP).

A frame is a 4-byte big-endian length followed by a pickled message. A
message is a tuple whose first item is one of the op codes below. Frames are
written whole; readers buffer partial reads. The protocol is deliberately
small: the master sends work and data, the node sends results, data, logs
and samples.

Master -> node
    HELLO      (HELLO, config: dict)                       first frame
    FUNC       (FUNC, digest: bytes, payload: bytes)        a function, once per node
    TASKS      (TASKS, [TaskMsg, ...])                      a batch of work
    DATA       (DATA, [(data_id, payload), ...])            data pushed to the node
    FETCH      (FETCH, [data_id, ...])                      ask for data held there
    DROP       (DROP, [data_id, ...])                       data no longer needed
    CANCEL     (CANCEL, [task_id, ...])                     kill or drop tasks
    SHUTDOWN   (SHUTDOWN,)

Node -> master
    READY      (READY, info: dict)                          answer to HELLO
    RESULTS    (RESULTS, [ResultMsg, ...])
    DATA       (DATA, [(data_id, payload), ...])            answer to FETCH
    LOG        (LOG, [(task_id, t, level, line), ...])
    SAMPLE     (SAMPLE, {cpu, mem, ...})
    FATAL      (FATAL, message: str)                        the node cannot go on
    LEAVING    (LEAVING, reason: str, [task_id, ...])       draining (SIGTERM, idle): takes
               no new work; the listed tasks were not started and go back to the master.
               Sent again for tasks that arrive later; the agent exits once its running
               tasks have reported.

TaskMsg   = (task_id, digest, argv, refs, kwargs, nout, inouts, options, priority,
             computing_units, exclusive, output_data_ids)
ResultMsg = (task_id, status, outputs, error, timing)
"""
from __future__ import annotations

import os
import pickle
import struct
from typing import Any

from ..errors import ProtocolError

HELLO, FUNC, TASKS, DATA, FETCH, DROP, CANCEL, SHUTDOWN = range(8)
READY, RESULTS, LOG, SAMPLE, FATAL, LEAVING = range(10, 16)

# Result statuses.
OK, ERROR, TIMEOUT, LOST, CANCELLED_ON_NODE = range(5)

_LEN = struct.Struct(">I")
PROTOCOL = pickle.HIGHEST_PROTOCOL
MAX_FRAME = 1 << 31


def encode(msg: Any) -> bytes:
    """One frame: length prefix plus pickled message."""
    body = pickle.dumps(msg, PROTOCOL)
    return _LEN.pack(len(body)) + body


class FrameReader:
    """Incremental frame decoder over a file descriptor.

    ``feed`` reads what is available (one ``os.read``) and returns the
    complete messages; it returns ``None`` at end of stream.
    """

    __slots__ = ("fd", "_buf", "chunk")

    def __init__(self, fd: int, chunk: int = 1 << 16) -> None:
        self.fd = fd
        self._buf = bytearray()
        self.chunk = chunk

    def feed(self) -> list | None:
        # os.read allocates its whole size up front: asking for 1 MB per read cost
        # ~15 us each (vs ~1 us for 64 KB). Read big only to finish a big frame.
        want = self.chunk
        buf = self._buf
        if len(buf) >= 4:
            need = _LEN.unpack_from(buf, 0)[0] + 4 - len(buf)
            if need > want:
                want = min(need, 1 << 26)
        data = os.read(self.fd, want)
        if not data:
            return None
        return self.feed_bytes(data)

    def feed_bytes(self, data: bytes) -> list:
        buf = self._buf
        buf += data
        out = []
        pos = 0
        n = len(buf)
        while n - pos >= 4:
            (size,) = _LEN.unpack_from(buf, pos)
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

    def pending(self) -> int:
        return len(self._buf)


def read_frame_blocking(fd: int) -> Any:
    """Read exactly one frame (used for handshakes)."""
    head = _read_exact(fd, 4)
    (size,) = _LEN.unpack(head)
    if size > MAX_FRAME:
        raise ProtocolError(f"frame of {size} bytes: not a taskflow peer")
    return pickle.loads(_read_exact(fd, size))


def _read_exact(fd: int, n: int) -> bytes:
    parts = []
    while n:
        b = os.read(fd, n)
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


def write_all(fd: int, data: bytes) -> None:
    """Blocking write of a whole buffer."""
    view = memoryview(data)
    while view:
        n = os.write(fd, view)
        view = view[n:]
