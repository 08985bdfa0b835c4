"""A dial-back connection's byte stream: a TLS socket (see :mod:`.channel`)."""
from __future__ import annotations

import ssl


class TlsChannel:
    """A TLS socket; its descriptor serves both directions."""

    __slots__ = ("sock", "rfd", "wfd")

    def __init__(self, sock: ssl.SSLSocket) -> None:
        self.sock = sock
        self.rfd = self.wfd = sock.fileno()

    def recv(self, n: int) -> bytes:
        try:
            return self.sock.recv(n)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise BlockingIOError from None
        except ssl.SSLZeroReturnError:
            return b""

    def recv_into(self, view: memoryview) -> int:
        try:
            return self.sock.recv_into(view)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            raise BlockingIOError from None
        except ssl.SSLZeroReturnError:
            return 0

    def send(self, data: bytes | bytearray | memoryview) -> int:
        try:
            return self.sock.send(data)
        except (ssl.SSLWantWriteError, ssl.SSLWantReadError):
            raise BlockingIOError from None

    def pending(self) -> int:
        return self.sock.pending()

    def set_blocking(self, blocking: bool) -> None:
        self.sock.setblocking(blocking)

    def close(self) -> None:
        try:
            self.sock.close()
        except OSError:
            pass
