"""The master's side of one node: a framed byte stream plus bookkeeping.

Only the runtime's loop thread reads and writes a connection, so nothing
here takes a lock. Writes are non-blocking: what the pipe does not take now
waits in ``out`` (a :class:`~taskflow.wire.framewriter.FrameWriter`) and is
flushed when the descriptor is writable again, so a slow node can never
stall the master.
"""
from __future__ import annotations

import select
import sys
import time
import subprocess
from typing import TYPE_CHECKING, Any, cast

from .._version import DIST_NAME, __version__
from ..errors import NodeStartError, ProtocolError, VersionMismatch
from ..wire import messages as M
from ..wire import protocol as P
from ..wire.channel import Channel, FdChannel
from ..wire.framewriter import FrameWriter

if TYPE_CHECKING:
    from ..graph.task import Task
    from .base import Provider
    from .staging import Stager


def check_version(where: str, theirs: str | None, python: str = "python",
                  describe: str = "") -> None:
    """Raise :class:`VersionMismatch` unless ``theirs`` is the master's version."""
    if theirs is not None and theirs != __version__:
        raise VersionMismatch(
            f"{where}: {python} runs taskflow {theirs} but the master runs taskflow "
            f"{__version__}: install the same version there (`{python} -m pip install "
            f"{DIST_NAME}=={__version__}`, or pip install your checkout) or point python: at an "
            f"interpreter that has it{describe}")


def check_python(where: str, theirs: str | None, describe: str = "") -> None:
    """Raise :class:`VersionMismatch` unless the agent's Python (``theirs``, e.g. "3.11.2")
    is the master's major.minor: functions and values pickled by one Python do not load in
    another (their bytecode differs)."""
    mine = "%d.%d" % sys.version_info[:2]
    if theirs and ".".join(theirs.split(".")[:2]) != mine:
        raise VersionMismatch(
            f"{where}: the agent runs Python {theirs} but the master runs Python "
            f"{sys.version.split()[0]}: tasks and values pickled by one do not load in the "
            f"other; point python: at a Python {mine} there (or run the master with the "
            f"node's Python){describe}")


class NodeHandle:
    """One node agent as the master holds it: its stream, its capacity, its work.

    Every field a provider or the runtime reads is declared here; providers
    fill in what they know (an SSH host's address, a Slurm job's id and end).
    """

    def __init__(self, name: str, rfd: int, wfd: int, *, slots: int, memory_gb: float,
                 provider: Provider | None = None, shared_fs: bool = True,
                 channel: Channel | None = None) -> None:
        self.name = name
        self.rfd = rfd
        self.wfd = wfd
        self.channel: Channel = channel if channel is not None else FdChannel(rfd, wfd)
        self.reader = P.FrameReader(self.channel)
        self.out = FrameWriter(self.channel)     # frames for the node (the loop attaches it)
        P.grow_pipe(rfd)
        P.grow_pipe(wfd)
        self.slots = slots
        self.memory_gb = memory_gb
        self.provider = provider
        self.shared_fs = shared_fs
        self.info: dict[str, Any] = {}           # the agent's READY, plus what providers add
        self.funcs: set[bytes] = set()           # function digests the node has
        self.inflight: dict[int, Task] = {}      # task id -> task sent there, not ended
        self.used = 0            # computing units of placed, unfinished tasks (release)
        self.mem_used = 0.0
        self.io_slots = 0        # its I/O executors (@IO tasks, which hold no unit)...
        self.io_used = 0         # ...and the @IO tasks placed there, unfinished
        self.alive = True
        self.paused = False      # above its memory pause mark: no new producing task there
        self.memory: M.MemoryReport | None = None   # its last memory report
        self.lost_reason = ""
        self.leaving: str | None = None   # the agent drains (SIGTERM, idle): no new work there
        # its last load sample (agent.sampler): what placement reads; the journal keeps
        # the history (one deque of 720 per node was 0.4 GB of a 1,024-node master)
        self.sample: dict[str, Any] | None = None
        self.sample_logged = 0.0                 # when the journal last got one of its samples
        self.joined = time.time()
        # Where the node is (SSH): ``address`` reachable from the other nodes; ``host`` the
        # name MPI hostfiles use; a node without the master's filesystem has a ``stager``.
        self.address = "127.0.0.1"
        self.host: str | None = None
        self.ssh_port: int | None = None
        self.ssh_user: str | None = None
        self.stager: Stager | None = None
        self.gpus: int | None = None             # None: what the agent reported
        # named resources it declares ({"license": 4, "gpu": [0, 1]}: providers.nodeconfig)
        self.resources: dict[str, Any] | None = None
        self.proc: subprocess.Popen[bytes] | None = None   # a local agent's process
        # Slurm: the job the agent runs in, and when that job ends.
        self.meta: dict[str, Any] = {}           # what a dial-back agent said about itself
        self.job_id: str | None = None
        self.walltime_end: float | None = None
        self.drain_margin = 0.0
        self.slurm_state: str | None = None     # how that job ended, once Slurm says

    @property
    def hostname(self) -> str:
        """The node's own hostname, as its agent reported it."""
        return str(self.info.get("hostname", self.name))

    # -- start-up -----------------------------------------------------------
    def handshake(self, config: M.Hello, timeout: float, describe: str = "") -> dict[str, Any]:
        P.write_all(self.channel, P.encode(M.HELLO, config))
        deadline = time.time() + timeout
        poll = select.poll()        # (select.select fails on descriptors past 1023)
        poll.register(self.rfd, select.POLLIN)
        while True:
            left = deadline - time.time()
            if left <= 0:
                raise NodeStartError(f"node {self.name}: no answer from the agent within "
                                     f"{timeout:g} s{describe}")
            if not poll.poll(left * 1000):
                continue
            msgs = self.reader.feed()
            if msgs is None:
                raise NodeStartError(f"node {self.name}: the agent exited during start-up"
                                     f"{describe}")
            for op, body in msgs:
                if op == M.READY:
                    check_version(f"node {self.name}", body.get("version"),
                                  describe=describe)
                    check_python(f"node {self.name}", body.get("python"), describe)
                    self.info = dict(body)
                    self.io_slots = int(body.get("io_executors") or 0)
                    self.channel.set_blocking(False)
                    return self.info
                if op == M.FATAL:
                    raise NodeStartError(f"node {self.name}: {body}{describe}")

    # -- I/O (loop thread only) ---------------------------------------------
    def pending_out(self) -> int:
        """Bytes queued for the node and not written yet."""
        return self.out.pending()

    def flush(self) -> bool:
        """Write what the node takes now (``out`` watches for room while bytes wait);
        a broken stream makes the node not alive, with the reason: False (the caller
        has the node lost: the loop's Dispatcher)."""
        try:
            self.out.flush()
        except OSError as exc:
            self.alive = False
            self.lost_reason = f"write failed: {exc}"
            return False
        return True

    def read(self) -> list[tuple[int, Any]] | None:
        try:
            return self.reader.feed()
        except BlockingIOError:         # a readiness event with nothing left to read
            return []
        except (OSError, ProtocolError) as exc:
            self.lost_reason = f"read failed: {exc}"
            return None

    def close(self) -> None:
        self.channel.close()

    # -- slots (loop thread, runtime lock held) ----------------------------------
    # The scheduler takes a task's computing units and memory on the node it places the
    # task on; they come back once, by one of these two. The caller then tells the
    # scheduler the node has room (``scheduler.freed``), where and as often as it needs:
    # the RESULTS handler once per frame, not per task.
    def release(self, task_id: int) -> Task | None:
        """The task sent here as ``task_id`` ended or is taken back: it leaves ``inflight``
        and gives back what it held; returned. None, and nothing changes, when it is not
        in flight here (released already, or the node was lost): calling twice is safe."""
        task = self.inflight.pop(task_id, None)
        if task is not None:            # (unplace's lines, inline: once per result)
            cus = task.cus
            if cus:
                self.used -= cus
            else:                       # an @IO task: an I/O executor's
                self.io_used -= 1
            self.mem_used -= task.mem
        return task

    def unplace(self, task: Task) -> None:
        """``task`` was placed here this round but is not sent (it waits for data): give
        back what it was given. It is not in ``inflight``: call once."""
        if task.cus:
            self.used -= task.cus
        else:
            self.io_used -= 1
        self.mem_used -= task.mem

    @property
    def usable(self) -> bool:
        """Alive and taking new work."""
        return self.alive and self.leaving is None

    @property
    def load(self) -> float:
        return self.used / self.slots if self.slots else 1.0

    def __repr__(self) -> str:
        return f"<node {self.name} {self.used}/{self.slots}>"


def placed_on(task: Task) -> NodeHandle | None:
    """The node ``task`` was sent to, as the master holds it: the graph knows
    ``Task.node`` by its name only (:class:`~taskflow.graph.task.NodeRef`), and every node
    the master sends a task to is a :class:`NodeHandle`."""
    return cast("NodeHandle | None", task.node)
