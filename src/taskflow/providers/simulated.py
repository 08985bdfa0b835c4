"""Simulated nodes: the real master against many node agents served by a few processes.

``SimulatedProvider(nodes=1024)`` gives the runtime 1,024 ordinary
:class:`~.handle.NodeHandle` objects, each the master's end of a socket pair
whose other end a simulated agent (:mod:`taskflow.providers.simnode`) serves:
the handshake, task and result frames, STARTED, load samples (the nodes'
heartbeats) are the real wire's, but no task runs; a task takes
``task_seconds`` and returns its first positional argument. One process
serves up to ``per_process`` nodes, so a two-core machine can hold the
master of a thousand-node cluster and measure what the master costs per
task as nodes are added (``benchmarks/scale_bench.py --simulated``).

``kill(handle)`` makes a node's agent drop its stream, as a host that dies
does: the master's node-loss path runs (its tasks go elsewhere).
"""
from __future__ import annotations

import os
import socket
import subprocess
import sys
from typing import TYPE_CHECKING

from ..context import PYTHON
from ..errors import NodeStartError, UsageError
from .base import Provider
from .handle import NodeHandle

if TYPE_CHECKING:
    from ..wire.messages import Hello


class SimulatedProvider(Provider):
    """``nodes`` simulated agents of ``slots`` slots each (see the module docstring)."""

    name = "simulated"

    def __init__(self, nodes: int, *, slots: int = 1, task_seconds: float = 0.0,
                 per_process: int = 1024, memory_gb: float = 4.0,
                 sample_interval: float = 2.0, name: str = "sim") -> None:
        for what, v in (("nodes", nodes), ("slots", slots), ("per_process", per_process)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 1:
                raise UsageError(f"SimulatedProvider({what}={v!r}): give an int >= 1")
        if task_seconds < 0:
            raise UsageError(f"SimulatedProvider(task_seconds={task_seconds!r}): give >= 0")
        self.count = nodes
        self.slots = slots
        self.task_seconds = float(task_seconds)
        self.per_process = per_process
        self.memory_gb = memory_gb
        self.sample_interval = sample_interval
        self.node_name = name
        self.procs: list[subprocess.Popen[bytes]] = []
        self.controls: list[int] = []                 # each process's control pipe
        self.handles: list[NodeHandle] = []
        self.ends: list[tuple[str, int, int]] = []    # (name, master's fd, process index)
        self.owner: dict[str, int] = {}               # node name -> process index

    def launch(self) -> None:
        """Make the socket pairs and start the processes that serve their far ends."""
        if self.procs:
            return
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [p for p in sys.path if p] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        width = len(str(self.count - 1))
        for first in range(0, self.count, self.per_process):
            theirs: list[int] = []
            index = len(self.procs)
            for i in range(first, min(self.count, first + self.per_process)):
                ours, far = socket.socketpair()
                name = f"{self.node_name}-{i:0{width}d}"
                self.ends.append((name, ours.detach(), index))
                self.owner[name] = index
                theirs.append(far.detach())
            ctl_r, ctl_w = os.pipe()
            cmd = [PYTHON, "-m", "taskflow.providers.simnode",
                   "--fds", ",".join(map(str, theirs)), "--control", str(ctl_r),
                   "--task-seconds", repr(self.task_seconds)]
            try:
                proc = subprocess.Popen(cmd, env=env, pass_fds=[*theirs, ctl_r],
                                        stdin=subprocess.DEVNULL, start_new_session=True)
            finally:
                for fd in (*theirs, ctl_r):
                    os.close(fd)
            self.procs.append(proc)
            self.controls.append(ctl_w)

    def start(self, config: Hello, timeout: float = 30.0, *, adoptable: bool = False) -> list[NodeHandle]:
        self.launch()
        handles: list[NodeHandle] = []
        try:
            for name, fd, _ in self.ends:
                h = NodeHandle(name, fd, fd, slots=self.slots, memory_gb=self.memory_gb,
                               provider=self)
                cfg: Hello = {**config, "name": name, "slots": self.slots,
                              "memory_gb": self.memory_gb,
                              "sample_interval": self.sample_interval}
                h.handshake(cfg, timeout, describe=" (a simulated node: taskflow.providers.simnode)")
                handles.append(h)
                self.handles.append(h)
        except NodeStartError:
            self.stop()
            raise
        self.ends = []
        return handles

    def kill(self, handle: NodeHandle) -> None:
        """The node's agent drops its stream at once, as when its host dies."""
        index = self.owner.get(handle.name)
        if index is None or index >= len(self.controls):
            return
        try:
            os.write(self.controls[index], f"lose {handle.name}\n".encode())
        except OSError:
            pass

    def stop(self, timeout: float = 5.0) -> None:
        for _, fd, _ in self.ends:        # never handshaken (a failed start)
            try:
                os.close(fd)
            except OSError:
                pass
        self.ends = []
        for ctl in self.controls:         # end of the control pipe: every node ends
            try:
                os.close(ctl)
            except OSError:
                pass
        self.controls = []
        for h in self.handles:
            h.close()
        self.handles = []
        for proc in self.procs:
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        self.procs = []
