"""The local provider: node agents as child processes on this machine.

In an adoptable run an agent that took its master for lost (the master was
paused past the heartbeat time-out) is reached again when the master runs
again (:mod:`.localcomeback`), through its adoption socket or as a fresh agent.
"""
from __future__ import annotations

import os
import signal
import subprocess
import threading
from typing import TYPE_CHECKING

from ..context import total_memory_gb
from ..errors import NodeStartError, UsageError
from ..procwait import wait_exit
from ..wire import messages as M
from ..wire import protocol as P
from . import prestart
from .base import AdoptFrom, Provider
from .handle import NodeHandle
from .nodeconfig import Declared, declared_resources

if TYPE_CHECKING:
    from ..wire.messages import Hello
    from .base import NodeSink
    from .localcomeback import LocalComeback, Reached


class LocalProvider(Provider):
    """``slots`` executors split over ``nodes`` agents (the first ones get the remainder),
    talking over pipes."""

    name = "local"

    def __init__(self, slots: int, nodes: int = 1, memory_gb: float | None = None,
                 name: str = "local", gpus: int = 0, memory_budget: float | str | None = None,
                 memory_pause: float | str | None = None,
                 heartbeat_timeout: float | None = None,
                 resources: dict[str, Declared] | None = None) -> None:
        """``resources``: named resources each node declares ({"license": 4, "gpu": [0, 1]}:
        providers.nodeconfig.declared_resources; ``gpus=N`` is ``gpu: [0..N-1]``).
        ``heartbeat_timeout``: in an adoptable run, the seconds of silence after which its
        agents take the master for lost (None: the run's, wire.adoption.HEARTBEAT_TIMEOUT;
        at least three PINGs' time, wire.adoption.silence_limit)."""
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
        # agents reached on their adoption socket: an earlier run's, or this run's own
        # after a pause (localcomeback.py)
        self.adopted: list[NodeHandle] = []
        # not handshaken yet: a child process, or (adopted) the socket of an agent waiting
        self.launched: list[tuple[str, subprocess.Popen[bytes] | int]] = []
        self.refusals: list[str] = []
        self.node_name = name
        self.gpus = gpus            # GPUs each node declares (GPU @constraint placement)
        try:
            self.resources = declared_resources(resources or {}, gpus)
        except ValueError as exc:
            raise UsageError(f"LocalProvider: {exc}") from None
        self.memory_budget = memory_budget      # None: the run's (wire.budget)
        self.memory_pause = memory_pause
        self.heartbeat_timeout = heartbeat_timeout
        self.started: tuple[Hello, float] | None = None     # (the agents' HELLO, time-out)
        self.adoptable = False      # the run's agents outlive a lost master (start)
        self.handles: list[NodeHandle] = []     # every node it gave the run, in order
        self.comeback: LocalComeback | None = None  # lost agents reached again
        self._env: dict[str, str] = {}

    CMD = prestart.CMD

    def launch(self) -> None:
        """Start every agent process (their interpreters load while the master goes on)."""
        if self.launched:
            return
        self._env = prestart.agent_env()
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
            self.launched.append((name, self._spawn(name)))

    def _spawn(self, name: str) -> subprocess.Popen[bytes]:
        """One agent process for node ``name``, in a session of its own."""
        # (its stderr through the master's, not the master's own: an agent that outlives
        # a killed master, agent/orphan.py, must not hold the master's output open)
        proc = prestart.take(self.CMD, self._env)     # one started early (prestart.py)
        if proc is None:
            proc = subprocess.Popen(self.CMD, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, env=self._env, close_fds=True,
                                    start_new_session=True)
        assert proc.stderr is not None
        threading.Thread(target=_forward, args=(proc.stderr.fileno(),), daemon=True,
                         name=f"taskflow-stderr-{name}").start()
        self.procs.append(proc)
        return proc

    def start(self, config: Hello, timeout: float = 30.0, *, adoptable: bool = False) -> list[NodeHandle]:
        handles = []
        self.started = (config, timeout)
        self.adoptable = adoptable
        self.launch()
        procs, self.launched = self.launched, []
        for (name, proc), slots in zip(procs, self.per_node):
            if isinstance(proc, int):           # an agent of the earlier run, adopted
                h = self._socket_handle(name, proc, slots)
            else:
                h = self._proc_handle(name, proc, slots)
            try:
                self._handshake(h, config, timeout)
            except NodeStartError:
                self.stop()
                raise
            handles.append(h)
        return handles

    def _proc_handle(self, name: str, proc: subprocess.Popen[bytes], slots: int) -> NodeHandle:
        assert proc.stdout is not None and proc.stdin is not None     # PIPEs
        h = NodeHandle(name, proc.stdout.fileno(), proc.stdin.fileno(), slots=slots,
                       memory_gb=self.memory_gb, provider=self)
        h.proc = proc
        h.gpus = self.gpus
        h.resources = self.resources
        return h

    def _socket_handle(self, name: str, fd: int, slots: int) -> NodeHandle:
        """An agent reached on its adoption socket (an earlier run's, or this run's own
        after a pause): closed by :meth:`stop` (told SHUTDOWN by the runtime)."""
        h = NodeHandle(name, fd, fd, slots=slots, memory_gb=self.memory_gb, provider=self)
        h.gpus = self.gpus
        h.resources = self.resources
        self.adopted.append(h)
        return h

    def _handshake(self, h: NodeHandle, config: Hello, timeout: float) -> None:
        cfg: Hello = {**config, "name": h.name, "slots": h.slots, "memory_gb": self.memory_gb,
                      "label": "localhost"}   # the machine, as COMPSs names it
        if self.memory_budget is not None:      # this provider's own marks (cluster file)
            cfg["memory_budget"] = self.memory_budget
        if self.memory_pause is not None:
            cfg["memory_pause"] = self.memory_pause
        if self.adoptable and self.heartbeat_timeout is not None:
            cfg["heartbeat_timeout"] = self.heartbeat_timeout   # (else the run's)
        h.handshake(cfg, timeout, describe=f" (command: {' '.join(self.CMD)})")
        self.handles.append(h)

    # -- lost agents reached again (providers/localcomeback.py) -------------------------
    def attach(self, sink: NodeSink) -> None:
        """The run started: in an adoptable run, an agent whose stream breaks (it took the
        paused master for lost) is reached again."""
        if self.adoptable and self.started is not None:
            from .localcomeback import LocalComeback
            hello, _ = self.started
            self.comeback = LocalComeback(self, sink, float(hello.get("adopt_grace") or 0.0))

    def link_lost(self, node: NodeHandle) -> None:
        proc = node.proc
        if self.comeback is None or (proc is not None and proc.poll() not in (None, 0)):
            return          # (an agent that was killed or crashed is not reached again)
        self.comeback.lost(node, f"its stream broke ({node.lost_reason or 'it closed'})")

    def nodes_coming(self) -> bool:
        """A lost agent is being reached again: a run with no node left waits for it."""
        return self.comeback is not None and self.comeback.coming()

    def reach_again(self, lost: NodeHandle) -> Reached:
        """One try to reach the agent of ``lost`` (the comeback's): through its socket while
        it waits there; a fresh agent when it exited on its own (status 0: it had nothing
        to keep, or its grace ran out); None while it may still listen; why not, when it
        died otherwise."""
        assert self.started is not None        # (attach: after start)
        config, timeout = self.started
        me = self._me(config)
        from .adopting import connect_local
        fd, why = connect_local(me, lost.name)
        if fd is not None:
            h = self._socket_handle(lost.name, fd, lost.slots)
            h.proc = lost.proc
            try:
                self._handshake(h, config, timeout)
            except (NodeStartError, OSError):
                self.adopted.remove(h)
                h.close()
                return None
            return h
        proc = lost.proc
        if proc is None:                    # adopted from an earlier run: not our child
            return None if _alive(lost) else "its agent (adopted from an earlier run) is gone"
        code = proc.poll()
        if code is None:
            return None                     # alive: not listening yet (or a refusal: why)
        if code != 0:
            how = f"was killed by signal {-code}" if code < 0 else f"exited with status {code}"
            return f"its agent {how}" + (f" ({why})" if why else "")
        h = self._proc_handle(lost.name, self._spawn(lost.name), lost.slots)
        try:
            self._handshake(h, config, timeout)
        except NodeStartError as exc:
            return f"a fresh agent did not start: {exc}"
        return h

    @staticmethod
    def _me(config: Hello) -> AdoptFrom:
        """This run's own adoption identity (its agents wait for it to prove it)."""
        return AdoptFrom(str(config.get("adopt_run", "")), str(config.get("adopt_secret", "")),
                         {})

    def dismiss_lost(self, run_id: str, secret: str) -> None:
        """The run ends: an agent it lost that still waits on its socket (not reached again
        in time) is told SHUTDOWN, so no process nor socket is left behind."""
        if self.comeback is not None:
            self.comeback.stop()
        from .adopting import connect_local
        me = AdoptFrom(run_id, secret, {})
        latest = {h.name: h for h in self.handles}      # (a node back has a newer one)
        for name, h in latest.items():
            if h.alive:
                continue
            fd, _ = connect_local(me, name)
            if fd is None:
                continue
            try:
                P.write_all(fd, P.encode(M.SHUTDOWN, None))
            except OSError:
                pass
            os.close(fd)

    def adoption_refusals(self) -> list[str]:
        return self.refusals

    def kill(self, handle: NodeHandle) -> None:
        """Kill a node's whole process group (used by tests of node loss)."""
        proc = handle.proc
        if proc is not None and proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)

    def stop(self, timeout: float = 5.0) -> None:
        if self.comeback is not None:
            self.comeback.stop()
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
                wait_exit(proc, timeout)        # (woken by the exit: procwait.py)
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


def _alive(node: NodeHandle) -> bool:
    """The process of an agent that is not this process's child (adopted) still lives."""
    pid = int(node.info.get("pid") or 0)
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except OSError:
        pass
    return True


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
