"""The agent's link to its current master: one stream, its silence, the run's identity.

An agent has one master at a time. The first comes with the agent's own
stream (stdin/stdout, or the dial-back socket: :mod:`.serve`); a later one
comes after the first was lost (:mod:`.orphan`): a resumed master adopting the
agent (``taskflow run --resume``), or its own master reaching it again after a
cut link (a rejoin). Each is taken the same way,
:meth:`~.agent.Agent.attach`, which makes a new :class:`MasterLink` from the
master's HELLO:

- the stream: its channel, the :class:`~taskflow.wire.protocol.FrameReader`
  of what the master sends and the :class:`~taskflow.wire.framewriter.FrameWriter`
  of what it has not taken yet;
- its silence: in an adoptable run the master pings every
  :data:`~taskflow.wire.adoption.PING_EVERY` seconds, and a link that brings no
  frame for ``silence`` seconds is a lost master, as a closed stream is;
- the run's adoption identity (``Hello.adopt_*``): how long the agent outlives
  a lost master (``grace``; 0: it exits at once), and the run and secret a
  later master proves (:mod:`taskflow.wire.adoption`). A later master's HELLO
  that does not restate the run or the secret keeps the earlier link's.

A lost link stays the agent's :attr:`~.agent.Agent.link`, closed, until the
next master: its identity is what that master must prove.
"""
from __future__ import annotations

import selectors
import socket
import struct
import sys
import time
from typing import Any

from ..wire import protocol as P
from ..wire.adoption import silence_limit
from ..wire.channel import Channel
from ..wire.dialback import AUTH_TIMEOUT
from ..wire.framewriter import FrameWriter
from ..wire.messages import Hello


class MasterLink:
    """The agent's stream to one master, and what that master's HELLO said of the run."""

    __slots__ = ("chan", "reader", "writer", "grace", "secret", "run_id", "silence", "last_rx")

    def __init__(self, chan: Channel, hello: Hello | None = None,
                 earlier: MasterLink | None = None) -> None:
        """``hello`` is None for the first master's stream until its HELLO comes."""
        self.chan = chan
        self.reader = P.FrameReader(chan)
        self.writer = FrameWriter(chan)       # frames the master has not taken yet
        h: Hello = hello if hello is not None else {}
        self.grace = float(h.get("adopt_grace") or 0.0)
        self.secret: str = h.get("adopt_secret", earlier.secret if earlier is not None else "")
        self.run_id: str = h.get("adopt_run", earlier.run_id if earlier is not None else "")
        self.silence = silence_limit(h.get("heartbeat_timeout") or 0.0) if self.grace else 0.0
        self.last_rx = time.time()            # the last frame (silence: the master is lost)

    @property
    def fds(self) -> tuple[int, int]:
        return self.chan.rfd, self.chan.wfd

    def same_run(self, hello: Hello) -> bool:
        """``hello`` comes from this link's run (its own master back, not a resumed one)."""
        return hello.get("adopt_run") == self.run_id

    def watch(self, sel: selectors.BaseSelector) -> None:
        """Read the master in ``sel`` (key data None), and watch for room while bytes wait."""
        self.chan.set_blocking(False)
        self.writer.attach(sel, None)
        sel.register(self.chan.rfd, selectors.EVENT_READ, None)

    def receive(self) -> list[tuple[int, Any]] | None:
        """The frames the master sent ([]: none complete yet); None: its stream ended."""
        try:
            msgs = self.reader.feed()
        except BlockingIOError:      # a socket shares O_NONBLOCK with its write side
            return []
        except OSError:
            return None
        if msgs is not None:
            self.last_rx = time.time()
        return msgs

    def silent(self, now: float) -> bool:
        """No frame for longer than the silence limit (never, without one)."""
        return bool(self.silence) and now - self.last_rx > self.silence

    def close(self, sel: selectors.BaseSelector) -> None:
        """The master is lost: stop watching the stream and close it."""
        try:
            sel.unregister(self.chan.rfd)
        except (KeyError, ValueError):
            pass
        self.writer.detach()
        self.chan.close()

    def drain(self) -> None:
        """The agent's last words: write what waits, blocking (nothing if the stream is gone)."""
        try:
            self.chan.set_blocking(True)
            self.writer.drain()
        except OSError:
            pass


def first_frame(sock: socket.socket, chan: Channel) -> tuple[int, Any]:
    """The first frame of a master that proved the run's secret on ``sock`` (``chan`` reads
    it), within :data:`AUTH_TIMEOUT`: a blocking read that gives up."""
    sock.setblocking(True)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", int(AUTH_TIMEOUT), 0))
    try:
        return P.read_frame_blocking(chan)
    finally:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVTIMEO, struct.pack("ll", 0, 0))


def say(text: str) -> None:
    """A line on the agent's stderr (which may be gone with the master's SSH channel)."""
    try:
        print(text, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass
