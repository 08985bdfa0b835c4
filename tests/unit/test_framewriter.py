"""The write side of a framed stream (wire.framewriter) on real pipes and sockets:
order and bytes, short writes and EAGAIN, watching for room, a peer that closes,
and frames whose values' buffers travel out of band."""
from __future__ import annotations

import os
import selectors
import socket
import threading

import pytest

from taskflow.wire import messages as M
from taskflow.wire import protocol as P
from taskflow.wire import values as V
from taskflow.wire.channel import FdChannel
from taskflow.wire.framewriter import FrameWriter


def _pipe() -> tuple[int, int]:
    r, w = os.pipe()
    os.set_blocking(r, False)
    os.set_blocking(w, False)
    return r, w


def _read_all(fd: int) -> bytes:
    out = bytearray()
    while True:
        try:
            b = os.read(fd, 1 << 20)
        except BlockingIOError:
            return bytes(out)
        if not b:
            return bytes(out)
        out += b


def _frames() -> list[tuple[int, object]]:
    """Small frames, frames with out-of-band buffers between them, and a large in-band one."""
    big = V.dump(bytes(range(256)) * 4096)           # 1 MiB: a Packed value
    assert type(big) is M.Packed
    return [(M.LOG, [(1, 0.5, "STDOUT", "line")]), (M.DATA, [(7, big)]),
            (M.RESULTS, [(1, M.OK, [b"x"], None, (0.0, 1.0))]), (M.DATA, [(8, big), (9, big)]),
            (M.SAMPLE, {"cpu": 1.0, "pad": "y" * 300_000}), (M.STARTED, [(2, 3.0)])]


def _queue(w: FrameWriter, frames: list[tuple[int, object]]) -> bytes:
    """Queue each frame as the loops do (values' frames in pieces); the bytes expected."""
    expected = []
    for op, body in frames:
        if op == M.DATA:
            parts = P.encode_parts(op, body)
            w.queue_parts(parts)
        else:
            parts = [P.encode(op, body)]
            w.queue(parts[0])
        expected += [bytes(memoryview(p).cast("B")) for p in parts]
    return b"".join(expected)


def test_frames_leave_whole_and_in_order_through_short_writes_and_eagain():
    r, w = _pipe()
    sel = selectors.DefaultSelector()
    writer = FrameWriter(w)
    writer.attach(sel, "room")
    expected = _queue(writer, _frames())
    assert writer.pending() == len(expected) and writer
    got = bytearray()
    rounds = 0
    while not writer.flush():              # the pipe (64 KiB) takes part of it each time
        assert writer.watching and sel.get_key(w).data == "room"
        assert writer.pending() == len(expected) - len(got) - _in_pipe(r)
        got += _read_all(r)
        rounds += 1
    got += _read_all(r)
    assert rounds > 10                      # it did stop short, many times
    assert bytes(got) == expected           # the bytes of the frames, nothing else
    assert not writer.watching and w not in sel.get_map() and not writer
    reader = P.FrameReader(r)
    msgs = reader.feed_bytes(bytes(got))
    assert [op for op, _ in msgs] == [op for op, _ in _frames()]
    assert V.load(msgs[1][1][0][1]) == bytes(range(256)) * 4096
    os.close(r)
    os.close(w)


def _in_pipe(fd: int) -> int:
    import fcntl
    import termios
    buf = bytearray(4)
    fcntl.ioctl(fd, termios.FIONREAD, buf)
    return int.from_bytes(buf, "little")


def test_a_values_buffers_are_written_from_its_own_memory():
    r, w = _pipe()
    value = bytearray(1 << 20)
    packed = M.Packed(b"head", [value])
    writer = FrameWriter(w)
    writer.queue(P.encode(M.LOG, []))
    writer.queue_parts(P.encode_parts(M.DATA, [(1, packed)]))
    value[-1] = 42                          # not copied: the change goes out too
    got = bytearray()
    while not writer.flush():
        got += _read_all(r)
    got += _read_all(r)
    (_, _), (op, [(did, back)]) = P.FrameReader(r).feed_bytes(bytes(got))
    assert op == M.DATA and did == 1 and back.head == b"head" and back.bufs[0][-1] == 42
    os.close(r)
    os.close(w)


def test_a_socket_keeps_its_read_registration_while_watched_for_room():
    a, b = socket.socketpair()
    a.setblocking(False)
    a.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 4096)
    sel = selectors.DefaultSelector()
    sel.register(a.fileno(), selectors.EVENT_READ, "node")
    writer = FrameWriter(FdChannel(a.fileno(), a.fileno()))
    writer.attach(sel, "node")
    expected = _queue(writer, _frames())
    assert not writer.flush()
    key = sel.get_key(a.fileno())
    assert key.events == selectors.EVENT_READ | selectors.EVENT_WRITE and key.data == "node"
    got = bytearray()
    b.setblocking(False)
    while True:
        done = writer.flush()
        try:
            while True:
                got += b.recv(1 << 20)
        except BlockingIOError:
            pass
        if done:
            break
    assert bytes(got) == expected
    assert sel.get_key(a.fileno()).events == selectors.EVENT_READ
    a.close()
    b.close()


def test_a_peer_that_closes_breaks_the_stream_once_and_nothing_waits():
    r, w = _pipe()
    sel = selectors.DefaultSelector()
    writer = FrameWriter(w)
    writer.attach(sel, "room")
    _queue(writer, _frames())
    assert not writer.flush() and writer.watching
    os.close(r)
    with pytest.raises(BrokenPipeError):
        writer.flush()
    assert not writer and writer.pending() == 0
    assert not writer.watching and w not in sel.get_map()
    writer.queue(P.encode(M.LOG, []))       # a later frame is tried again, and fails again
    with pytest.raises(BrokenPipeError):
        writer.flush()
    assert not writer
    os.close(w)


def test_drain_writes_everything_on_a_blocking_stream():
    r, w = os.pipe()
    os.set_blocking(w, False)
    writer = FrameWriter(w)
    expected = _queue(writer, _frames())
    assert not writer.flush()               # part of it went; the rest waits, cut somewhere
    got = bytearray()
    reading = threading.Thread(target=lambda: got.extend(_read_until_eof(r)))
    reading.start()
    os.set_blocking(w, True)
    writer.drain()
    os.close(w)
    reading.join(10)
    assert bytes(got) == expected and not writer
    os.close(r)


def _read_until_eof(fd: int) -> bytes:
    out = bytearray()
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return bytes(out)
        out += b


class _Records:
    """A stream that takes one 16 KiB record per send, as a TLS socket does."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.rfd = self.wfd = sock.fileno()
        self.sends = 0

    def send(self, data) -> int:
        self.sends += 1
        return self.sock.send(memoryview(data)[:16384])


def test_a_stream_that_takes_a_record_at_a_time_gets_every_byte_in_order():
    a, b = socket.socketpair()
    a.setblocking(False)
    b.setblocking(False)
    chan = _Records(a)
    writer = FrameWriter(chan)
    expected = _queue(writer, _frames())
    got = bytearray()
    while True:
        done = writer.flush()
        try:
            while True:
                got += b.recv(1 << 20)
        except BlockingIOError:
            pass
        if done:
            break
    assert bytes(got) == expected and chan.sends > len(expected) // 16384
    a.close()
    b.close()
