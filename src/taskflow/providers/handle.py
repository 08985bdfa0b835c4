"""The master's side of one node: a framed byte stream plus bookkeeping.

Only the runtime's loop thread reads and writes a connection, so nothing
here takes a lock. Writes are non-blocking: what the pipe does not take now
stays in ``out`` and is flushed when the descriptor is writable again, so a
slow node can never stall the master.
"""
from __future__ import annotations

import os
import select
import time
from collections import deque
from typing import Any

from .._version import __version__
from ..errors import NodeStartError, VersionMismatch
from ..wire import protocol as P


def check_version(where: str, theirs: str | None, python: str = "python",
                  describe: str = "") -> None:
    """Raise :class:`VersionMismatch` unless ``theirs`` is the master's version."""
    if theirs is not None and theirs != __version__:
        raise VersionMismatch(
            f"{where}: {python} runs taskflow {theirs} but the master runs taskflow "
            f"{__version__}: install the same version there (`{python} -m pip install "
            f"taskflow=={__version__}`, or pip install your checkout) or point python: at an "
            f"interpreter that has it{describe}")


class NodeHandle:
    # Set by providers that need them (SSH): where the node is, for MPI hostfiles
    # (``address`` reachable from the other nodes, ``slots`` per host), and the
    # file stager of a node that does not share the master's filesystem.
    address = "127.0.0.1"
    stager = None
    wreg = False       # the loop watches wfd for writability (bytes are waiting in out)
    leaving: str | None = None   # the agent drains (SIGTERM, idle): no new work goes there

    @property
    def hostname(self) -> str:
        """The node's own hostname, as its agent reported it."""
        return self.info.get("hostname", self.name)

    def __init__(self, name: str, rfd: int, wfd: int, *, slots: int, memory_gb: float,
                 provider: Any = None, shared_fs: bool = True) -> None:
        self.name = name
        self.rfd = rfd
        self.wfd = wfd
        self.reader = P.FrameReader(rfd)
        self.out = bytearray()
        P.grow_pipe(rfd)
        P.grow_pipe(wfd)
        self.slots = slots
        self.memory_gb = memory_gb
        self.provider = provider
        self.shared_fs = shared_fs
        self.info: dict = {}
        self.funcs: set = set()
        self.inflight: dict = {}
        self.used = 0            # computing units of dispatched, unfinished tasks
        self.mem_used = 0.0
        self.alive = True
        self.lost_reason = ""
        self.samples: deque = deque(maxlen=720)
        self.joined = time.time()
        self.batch: list = []    # frames queued this loop round

    # -- start-up -----------------------------------------------------------
    def handshake(self, config: dict, timeout: float, describe: str = "") -> dict:
        P.write_all(self.wfd, P.encode((P.HELLO, config)))
        deadline = time.time() + timeout
        while True:
            left = deadline - time.time()
            if left <= 0:
                raise NodeStartError(f"node {self.name}: no answer from the agent within "
                                     f"{timeout:g} s{describe}")
            r, _, _ = select.select([self.rfd], [], [], left)
            if not r:
                continue
            msgs = self.reader.feed()
            if msgs is None:
                raise NodeStartError(f"node {self.name}: the agent exited during start-up"
                                     f"{describe}")
            for m in msgs:
                if m[0] == P.READY:
                    check_version(f"node {self.name}", m[1].get("version"),
                                  describe=describe)
                    self.info = m[1]
                    os.set_blocking(self.wfd, False)
                    return m[1]
                if m[0] == P.FATAL:
                    raise NodeStartError(f"node {self.name}: {m[1]}{describe}")

    # -- I/O (loop thread only) ---------------------------------------------
    def queue(self, data: bytes) -> None:
        self.out += data

    def flush(self) -> bool:
        """Write what the descriptor takes; True when nothing is left."""
        out = self.out
        try:
            while out:
                n = os.write(self.wfd, out)
                del out[:n]
        except BlockingIOError:
            return False
        except OSError as exc:
            self.alive = False
            self.lost_reason = f"write failed: {exc}"
            out.clear()
        return True

    def read(self) -> list | None:
        try:
            return self.reader.feed()
        except (OSError, P.ProtocolError) as exc:
            self.lost_reason = f"read failed: {exc}"
            return None

    def close(self) -> None:
        for fd in {self.rfd, self.wfd}:
            try:
                os.close(fd)
            except OSError:
                pass

    @property
    def usable(self) -> bool:
        """Alive and taking new work."""
        return self.alive and self.leaving is None

    @property
    def load(self) -> float:
        return self.used / self.slots if self.slots else 1.0

    def __repr__(self) -> str:
        return f"<node {self.name} {self.used}/{self.slots}>"

