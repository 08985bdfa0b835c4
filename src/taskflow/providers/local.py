"""The local provider: node agents as child processes on this machine."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
from typing import TYPE_CHECKING

from ..context import total_memory_gb
from ..errors import NodeStartError
from .base import Provider
from .handle import NodeHandle

if TYPE_CHECKING:
    from ..wire.messages import Hello


class LocalProvider(Provider):
    """``nodes`` agents with ``slots`` executors each, talking over pipes."""

    name = "local"

    def __init__(self, slots: int, nodes: int = 1, memory_gb: float | None = None,
                 name: str = "local", gpus: int = 0) -> None:
        if slots < 1 or nodes < 1:
            raise ValueError("workers and nodes must be >= 1")
        self.slots = slots
        self.nodes = nodes
        total = total_memory_gb()
        self.memory_gb = memory_gb if memory_gb is not None else total / nodes
        self.procs: list[subprocess.Popen[bytes]] = []
        self.node_name = name
        self.gpus = gpus            # GPUs each node declares (GPU @constraint placement)

    def start(self, config: Hello, timeout: float = 30.0) -> list[NodeHandle]:
        handles = []
        procs = []
        for i in range(self.nodes):
            name = self.node_name if self.nodes == 1 else f"{self.node_name}-{i}"
            cmd = [sys.executable, "-m", "taskflow.node", "--stdio"]
            env = dict(os.environ)
            env["PYTHONPATH"] = os.pathsep.join(
                [p for p in sys.path if p] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
            proc = subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    env=env, close_fds=True, start_new_session=True)
            self.procs.append(proc)
            procs.append((name, proc))
        for name, proc in procs:
            assert proc.stdout is not None and proc.stdin is not None     # PIPEs
            h = NodeHandle(name, proc.stdout.fileno(), proc.stdin.fileno(), slots=self.slots,
                           memory_gb=self.memory_gb, provider=self)
            h.proc = proc
            h.gpus = self.gpus
            cfg: Hello = {**config, "name": name, "slots": self.slots}
            try:
                h.handshake(cfg, timeout, describe=f" (command: {' '.join(cmd)})")
            except NodeStartError:
                self.stop()
                raise
            handles.append(h)
        return handles

    def kill(self, handle: NodeHandle) -> None:
        """Kill a node's whole process group (used by tests of node loss)."""
        proc = handle.proc
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)

    def stop(self, timeout: float = 5.0) -> None:
        for proc in self.procs:
            try:
                if proc.stdin:
                    proc.stdin.close()
            except OSError:
                pass
        for proc in self.procs:
            try:
                proc.wait(timeout)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait()
            for f in (proc.stdout,):
                try:
                    if f is not None:
                        f.close()
                except (OSError, AttributeError):
                    pass
        self.procs = []
