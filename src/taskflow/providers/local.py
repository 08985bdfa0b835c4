"""The local provider: node agents as child processes on this machine."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
from typing import TYPE_CHECKING

from ..context import total_memory_gb
from ..errors import NodeStartError, UsageError
from .base import Provider
from .handle import NodeHandle

if TYPE_CHECKING:
    from ..wire.messages import Hello


class LocalProvider(Provider):
    """``slots`` executors split over ``nodes`` agents (the first ones get the remainder),
    talking over pipes."""

    name = "local"

    def __init__(self, slots: int, nodes: int = 1, memory_gb: float | None = None,
                 name: str = "local", gpus: int = 0, memory_budget: float | str | None = None,
                 memory_pause: float | str | None = None) -> None:
        if isinstance(slots, bool) or not isinstance(slots, int) or slots < 1:
            raise UsageError(f"workers={slots!r}: give a number of executor slots >= 1 (or "
                             f"leave it out for one per core)")
        if isinstance(nodes, bool) or not isinstance(nodes, int) or nodes < 1:
            raise UsageError(f"nodes={nodes!r}: give a number of local node agents >= 1")
        if slots < nodes:
            raise UsageError(f"workers={slots} cannot be split over nodes={nodes}: each node "
                             f"needs at least one slot; give workers >= nodes")
        self.slots = slots
        self.nodes = nodes
        # slots of node i: an even split, the first ones take the remainder
        self.per_node = [slots // nodes + (1 if i < slots % nodes else 0) for i in range(nodes)]
        total = total_memory_gb()
        self.memory_gb = memory_gb if memory_gb is not None else total / nodes
        self.procs: list[subprocess.Popen[bytes]] = []
        self.adopted: list[NodeHandle] = []     # agents of an earlier run, reached by socket
        # not handshaken yet: a child process, or (adopted) the socket of an agent waiting
        self.launched: list[tuple[str, subprocess.Popen[bytes] | int]] = []
        self.refusals: list[str] = []
        self.node_name = name
        self.gpus = gpus            # GPUs each node declares (GPU @constraint placement)
        self.memory_budget = memory_budget      # None: the run's (wire.budget)
        self.memory_pause = memory_pause

    CMD = [sys.executable, "-m", "taskflow.node", "--stdio"]

    def launch(self) -> None:
        """Start every agent process (their interpreters load while the master goes on)."""
        if self.launched:
            return
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join(
            [p for p in sys.path if p] + ([env["PYTHONPATH"]] if env.get("PYTHONPATH") else []))
        for i in range(self.nodes):
            name = self.node_name if self.nodes == 1 else f"{self.node_name}-{i}"
            if self.adopt is not None and name in self.adopt.nodes:
                from .adopting import connect_local
                fd, why = connect_local(self.adopt, name)
                if why:
                    self.refusals.append(why)
                if fd is not None:
                    self.launched.append((name, fd))
                    continue
            # (its stderr through the master's, not the master's own: an agent that outlives
            # a killed master, agent/orphan.py, must not hold the master's output open)
            proc = subprocess.Popen(self.CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=env, close_fds=True,
                                    start_new_session=True)
            assert proc.stderr is not None
            threading.Thread(target=_forward, args=(proc.stderr.fileno(),), daemon=True,
                             name=f"taskflow-stderr-{name}").start()
            self.procs.append(proc)
            self.launched.append((name, proc))

    def start(self, config: Hello, timeout: float = 30.0, *, adoptable: bool = False) -> list[NodeHandle]:
        handles = []
        self.launch()
        procs, self.launched = self.launched, []
        cmd = self.CMD
        for (name, proc), slots in zip(procs, self.per_node):
            if isinstance(proc, int):           # an agent of the earlier run, adopted
                h = NodeHandle(name, proc, proc, slots=slots, memory_gb=self.memory_gb,
                               provider=self)
                self.adopted.append(h)
            else:
                assert proc.stdout is not None and proc.stdin is not None     # PIPEs
                h = NodeHandle(name, proc.stdout.fileno(), proc.stdin.fileno(), slots=slots,
                               memory_gb=self.memory_gb, provider=self)
                h.proc = proc
            h.gpus = self.gpus
            cfg: Hello = {**config, "name": name, "slots": slots, "memory_gb": self.memory_gb,
                          "label": "localhost"}   # the machine, as COMPSs names it
            if self.memory_budget is not None:      # this provider's own marks (cluster file)
                cfg["memory_budget"] = self.memory_budget
            if self.memory_pause is not None:
                cfg["memory_pause"] = self.memory_pause
            try:
                h.handshake(cfg, timeout, describe=f" (command: {' '.join(cmd)})")
            except NodeStartError:
                self.stop()
                raise
            handles.append(h)
        return handles

    def adoption_refusals(self) -> list[str]:
        return self.refusals

    def kill(self, handle: NodeHandle) -> None:
        """Kill a node's whole process group (used by tests of node loss)."""
        proc = handle.proc
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)

    def stop(self, timeout: float = 5.0) -> None:
        for h in self.adopted:          # (told SHUTDOWN by the runtime: they exit)
            h.close()
        self.adopted = []
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
            for f in (proc.stdout, proc.stderr):
                try:
                    if f is not None:
                        f.close()
                except (OSError, AttributeError):
                    pass
        self.procs = []


def _forward(fd: int) -> None:
    """An agent's stderr to the master's, until the agent (and its executors) close it."""
    try:
        while True:
            chunk = os.read(fd, 65536)
            if not chunk:
                return
            os.write(2, chunk)
    except OSError:
        pass
