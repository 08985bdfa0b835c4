"""The write side of a framed stream: :class:`FrameWriter`, the counterpart of
:class:`~.protocol.FrameReader`.

Every loop that writes frames (the master's dispatcher to each node, a node
agent to the master, the agent to each of its executors) queues whole frames
here and flushes them without blocking; what the stream does not take now
waits, and the loop is told to watch the descriptor for room.
"""
from __future__ import annotations

import functools
import os
import selectors
from collections import deque
from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from .channel import Channel
    from .protocol import Part

_READ = selectors.EVENT_READ
_WRITE = selectors.EVENT_WRITE


class FrameWriter:
    """Frames queued for one non-blocking byte stream, written as it takes them.

    ``sink`` is a descriptor (an executor's pipe) or a
    :class:`~.channel.Channel` (a pipe pair, a socket, a TLS connection).

    What it guarantees:

    - **Order.** Bytes leave in the order they were queued, frame after
      frame, whether a frame went in as bytes (:meth:`queue`) or as pieces
      (:meth:`queue_parts`); the bytes are those of the frames as encoded
      (:func:`~.protocol.encode`, :func:`~.protocol.encode_parts`), nothing
      is added.
    - **Batching.** Frames queued one after the other are appended to one
      buffer and leave in as few writes as the stream allows: queue a
      round's frames, then :meth:`flush` once. A frame with out-of-band
      buffers (a :class:`~.messages.Packed` value) is not copied: its pieces
      are written from the value's own memory, which the writer references
      (and so keeps alive) until they are written; the caller must not
      change a value's buffers meanwhile (values are not changed once
      pickled). Small frames queued before it are written first.
    - **Short writes and EAGAIN.** :meth:`flush` writes until the stream
      takes no more (a short write, or ``BlockingIOError``: a full pipe, a
      TLS record that wants the socket writable); the rest stays queued, cut
      where the stream stopped, and goes on at the next :meth:`flush`. It
      never blocks on a non-blocking stream.
    - **Watching for room.** Given a selector (:meth:`attach`), the writer
      registers the descriptor for writability while bytes wait and
      unregisters it when none do, so the loop calls :meth:`flush` when the
      stream has room and is not woken otherwise. A descriptor read as well
      (a socket) keeps its read registration, whose data must be the one
      given here.
    - **A closed peer.** Any other ``OSError`` (``EPIPE``, ``ECONNRESET``, a
      TLS error) means the stream is broken: :meth:`flush` drops what waits,
      stops watching, and raises the error; the caller decides what a broken
      stream means (a node lost, an agent that stops, a dead executor whose
      reader reports it). Frames queued later are attempted again at the
      next :meth:`flush`, as if nothing had been queued before.

    Not thread-safe: one loop thread owns a writer.
    """

    __slots__ = ("_send", "_out", "_parts", "_fd", "_shared", "_sel", "_data", "watching")

    def __init__(self, sink: int | Channel) -> None:
        if isinstance(sink, int):
            self._send: Callable[[Part], int] = functools.partial(os.write, sink)
            self._fd = sink
            self._shared = False
        else:
            self._send = sink.send
            self._fd = sink.wfd
            self._shared = sink.wfd == sink.rfd   # one descriptor both ways (a socket)
        self._out = bytearray()                   # whole frames, after _parts
        self._parts: deque[memoryview] = deque()  # pieces to write from where they are
        self._sel: selectors.BaseSelector | None = None
        self._data: Any = None
        self.watching = False       # the selector watches the descriptor for room

    # -- queueing -------------------------------------------------------------
    def queue(self, frame: bytes) -> None:
        """One or more whole frames (:func:`~.protocol.encode`), after what waits."""
        self._out += frame

    def queue_parts(self, parts: list[Part]) -> None:
        """One frame as pieces (:func:`~.protocol.encode_parts`): the buffers of its
        values are written from where they are, not copied."""
        if len(parts) == 1 and not self._parts:
            self._out += parts[0]
            return
        if self._out:                   # what was queued before goes first
            self._parts.append(memoryview(self._out))
            self._out = bytearray()
        self._parts.extend(memoryview(p).cast("B") for p in parts)

    def pending(self) -> int:
        """Bytes queued and not written yet."""
        return len(self._out) + sum(len(p) for p in self._parts)

    def __bool__(self) -> bool:
        """Bytes wait to be written."""
        return bool(self._out) or bool(self._parts)

    def __len__(self) -> int:
        return self.pending()

    # -- writing --------------------------------------------------------------
    def flush(self) -> bool:
        """Write what the stream takes now; True when nothing is left.

        Raises ``OSError`` (never ``BlockingIOError``) when the stream is
        broken, after dropping what waited (see the class's docstring).
        """
        send = self._send
        try:
            if self._parts and not self._send_parts(send):
                if not self.watching:
                    self._watch(True)
                return False
            out = self._out
            if out:
                try:
                    done = send(out)
                except BlockingIOError:
                    done = 0
                if done == len(out):            # all of it at once: the usual case
                    out.clear()
                else:
                    if done:
                        done += self._send_rest(send, out, done)
                        del out[:done]
                    if out:
                        if not self.watching:
                            self._watch(True)
                        return False
        except OSError:
            self.discard()
            self._watch(False)
            raise
        if self.watching:
            self._watch(False)
        return True

    @staticmethod
    def _send_rest(send: Callable[[Part], int], out: bytearray, done: int) -> int:
        """After a short write: what more of ``out`` from ``done`` the stream takes now.
        (A TLS send takes one 16 KiB record at a time: the buffer is cut once, after.)"""
        more = 0
        with memoryview(out) as view:
            try:
                while done + more < len(view):
                    more += send(view[done + more:])
            except BlockingIOError:
                pass
        return more

    def _send_parts(self, send: Callable[[Part], int]) -> bool:
        """Write the pieces while the stream takes them; a piece written in part
        stays as its rest. True when all went."""
        parts = self._parts
        while parts:
            view = parts[0]
            try:
                n = send(view)
            except BlockingIOError:
                return False
            if n < len(view):
                parts[0] = view[n:]
                return False
            parts.popleft()
        return True

    def drain(self) -> None:
        """Write everything that waits, blocking: the stream must be in blocking mode
        (an agent's last words before it exits). Raises ``OSError`` like ``flush``."""
        parts = self._parts
        try:
            while parts or self._out:
                if self._out:           # after the pieces, in order
                    parts.append(memoryview(self._out))
                    self._out = bytearray()
                self._send_parts(self._send)
        except OSError:
            self.discard()
            raise

    def discard(self) -> None:
        """Drop what waits (the peer is gone, or a test pretends it was written)."""
        self._parts.clear()
        self._out = bytearray()

    # -- watching for room ------------------------------------------------------
    def attach(self, sel: selectors.BaseSelector, data: Any) -> None:
        """Watch the descriptor for room in ``sel`` while bytes wait, with ``data``
        as its key's data (for a socket: the data it is registered with for reading)."""
        self._sel = sel
        self._data = data

    def detach(self) -> None:
        """Stop watching (the stream is being closed)."""
        self._watch(False)
        self._sel = None

    def _watch(self, want: bool) -> None:
        sel = self._sel
        if want == self.watching or sel is None:
            return
        try:
            if self._shared:
                sel.modify(self._fd, _READ | (_WRITE if want else 0), self._data)
            elif want:
                sel.register(self._fd, _WRITE, self._data)
            else:
                sel.unregister(self._fd)
        except (KeyError, ValueError, OSError):
            return          # not registered (any more) for reading, or closed: leave it
        self.watching = want
