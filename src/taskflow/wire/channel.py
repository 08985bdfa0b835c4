"""The byte stream under the frames: a pair of descriptors, or a TLS connection.

The loops (the master's dispatcher, the node's agent) wait on a descriptor
with ``selectors`` and then read and write what is there without blocking.
:class:`FdChannel` is a pipe pair or a socket (local agents, SSH channels
bridged to a socketpair); :class:`TlsChannel` is a dial-back connection
protected by TLS (:mod:`.tlschannel`, apart so that a node agent on pipes
does not import ``ssl``: ~10 ms of its start-up). Both raise :class:`BlockingIOError` when nothing can move
now and give ``b""`` at the end of the stream, like ``os.read``.
"""
from __future__ import annotations

import os
from typing import Protocol


class Channel(Protocol):
    rfd: int                  # watched for reading
    wfd: int                  # watched for writing (the same descriptor for a socket)

    def recv(self, n: int) -> bytes:
        """Up to ``n`` bytes; b"" at the end; BlockingIOError when none is there yet."""

    def recv_into(self, view: memoryview) -> int:
        """Like recv, into ``view``: bytes read (0 at the end)."""

    def send(self, data: bytes | bytearray | memoryview) -> int:
        """Bytes taken (BlockingIOError when none can be now)."""

    def pending(self) -> int:
        """Bytes already received and decoded, waiting beyond the descriptor's readiness."""

    def set_blocking(self, blocking: bool) -> None:
        """Blocking for handshakes, non-blocking in the loops."""

    def close(self) -> None:
        """Close the descriptors."""


class FdChannel:
    __slots__ = ("rfd", "wfd")

    def __init__(self, rfd: int, wfd: int) -> None:
        self.rfd = rfd
        self.wfd = wfd

    def recv(self, n: int) -> bytes:
        return os.read(self.rfd, n)

    def recv_into(self, view: memoryview) -> int:
        return os.readv(self.rfd, [view])

    def send(self, data: bytes | bytearray | memoryview) -> int:
        return os.write(self.wfd, data)

    def pending(self) -> int:
        return 0

    def set_blocking(self, blocking: bool) -> None:
        # Both ends: a loop must never block in a read either. A frame's large buffers are
        # read until the stream has nothing more (protocol.FrameReader._feed_big); a read
        # that blocked there, while the peer waited for the rest of a frame of ours, hung
        # both loops (two local nodes copying 30 MB values both ways: 8 runs in 10).
        os.set_blocking(self.wfd, blocking)
        if self.rfd != self.wfd:
            os.set_blocking(self.rfd, blocking)

    def close(self) -> None:
        for fd in {self.rfd, self.wfd}:
            try:
                os.close(fd)
            except OSError:
                pass
