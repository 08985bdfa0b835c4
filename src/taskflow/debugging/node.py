"""The node of an inline run: the master's ordinary node stream, served by the calling thread.

An inline run (:mod:`.inline`) keeps the whole master (graph, file versions,
journal, resume log, retries) and gives it one node whose "agent" is this
module, on the other end of a socket pair. Nothing serves that end on its
own: the thread that called the task (the script's) reads it whenever it
waits (:meth:`HereNode.serve`), runs each task it finds there with the
executor's own code (:func:`taskflow.agent.executor.loop.run_task`: the same
parameter handling, programs spawned the same way) and writes the results
back. So a task runs in the caller's thread, where ``breakpoint()`` and an
IDE's debugger stop, and a task called inside it runs inline as a plain call
(as in an MPI rank).

A plan (:mod:`.plan`) uses the same node with a :class:`Runner` that stubs
what it must not run.
"""
from __future__ import annotations

import os
import select
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Callable

from .. import context
from ..agent.executor import loop as exec_loop
from ..agent.executor.capture import Current
from ..agent.executor.loop import _load_function
from ..context import total_memory_gb
from ..providers.base import Provider
from ..providers.handle import NodeHandle
from ..wire import messages as M
from ..wire import protocol as P
from ..wire.channel import FdChannel

if TYPE_CHECKING:
    from ..graph.spec import TaskSpec

NODE_NAME = "inline"


class Runner:
    """How the node runs one task: the executor's way (an inline run)."""

    def run(self, node: HereNode, msg: M.TaskWire) -> M.ResultWire:
        task = M.TaskMsg(*msg)
        if task.options is not None and task.options.limits is not None:
            # not here: a memory limit would cap the master's own process, and a time-out
            # the time a debugger session stops the task
            msg = tuple(task._replace(options=task.options._replace(limits=None)))
        cur = Current()
        cur.t0 = time.time()
        res = exec_loop.run_task(node.funcs, msg, cur, node.store)
        tid, status, _, error, timing = res
        if status == M.ERROR and error is not None and error.type_name == "KeyboardInterrupt":
            res = (tid, M.INTERRUPTED, None, error, timing)     # (Ctrl-C: the run's interrupt)
        if cur.logs:                # a program's lines: journaled (and echoed) as an agent's
            node.send(M.LOG, [(msg[0], t, level, text) for t, level, text in cur.logs])
        return res

    def fetch(self, node: HereNode, did: int) -> M.Payload | None:
        """A value the master asks for (FETCH)."""
        return node.store.get(did)

    def drop(self, node: HereNode, dids: list[int]) -> None:
        """Values no task will read any more (DROP)."""
        for did in dids:
            node.store.pop(did, None)


def as_task(run: Callable[..., M.ResultWire], *args: Any) -> M.ResultWire:
    """``run(*args)`` as a task runs: a task called inside it runs inline (api.task)."""
    with context.running_inline():
        return run(*args)


class HereNode:
    """The agent's end of the inline node's stream, and what it holds."""

    def __init__(self, funcs_of: Callable[[bytes], tuple[Any, str | None]], runner: Runner) -> None:
        a, b = socket.socketpair()
        self._master_sock, self._my_sock = a, b      # (kept: closing them closes the fds)
        self.chan = FdChannel(b.fileno(), b.fileno())
        self.reader = P.FrameReader(self.chan)
        self.funcs: dict[bytes, Any] = {}
        self.names: dict[bytes, str] = {}       # digest -> the task's name (the master's)
        self.store: dict[int, M.Payload] = {}
        self.runner = runner
        self._funcs_of = funcs_of
        # one thread at a time serves it (that thread again inside a task that waits)
        self.serving = threading.RLock()
        self.closed = False

    def handle(self, provider: Provider, slots: int) -> NodeHandle:
        fd = self._master_sock.fileno()
        h = NodeHandle(NODE_NAME, fd, fd, slots=slots, memory_gb=total_memory_gb(),
                       provider=provider)
        h.info = {"hostname": socket.gethostname(), "pid": os.getpid(), "slots": slots,
                  "cpus": os.cpu_count(), "inline": True}
        h.channel.set_blocking(False)
        return h

    def send(self, op: int, body: Any) -> None:
        P.write_all(self.chan, P.encode(op, body))

    def serve(self, seconds: float) -> bool:
        """Read what the master sent within ``seconds`` and do it (the caller's thread);
        whether anything came."""
        if self.closed:
            time.sleep(min(seconds, 0.05))
            return False
        if not select.select([self.chan.rfd], [], [], seconds)[0]:
            return False
        msgs = self.reader.feed()
        if msgs is None:
            self.closed = True
            return False
        for op, body in msgs:
            self._one(op, body)
        return True

    def _one(self, op: int, body: Any) -> None:
        if op == M.TASKS:
            for msg in body:
                self.send(M.RESULTS, [self._run(msg)])
        elif op == M.FUNC:
            func, name = self._funcs_of(body.digest)
            self.funcs[body.digest] = func if func is not None else _load_function(body.payload)
            self.names[body.digest] = str(name or getattr(self.funcs[body.digest],
                                                          "__qualname__", "?"))
        elif op == M.DATA:
            for did, payload in body:
                if payload is not None:
                    self.store[did] = payload
        elif op == M.FETCH:
            self.send(M.DATA, [(did, self.runner.fetch(self, did)) for did in body])
        elif op == M.DROP:
            self.runner.drop(self, body)
        elif op == M.PULL:              # no other node copies from this one
            self.send(M.PART, [(did, off, -1, b"") for did, off, _ in body])
        elif op == M.SHUTDOWN:
            self.closed = True
        # CANCEL, INTERRUPT: a task here has ended before the loop sees the next frame;
        # PING, KEYS, ADOPT, NESTED: nothing to do in the master's own process

    def _run(self, msg: M.TaskWire) -> M.ResultWire:
        res = as_task(self.runner.run, self, msg)
        tid, status, outputs, error, timing = res
        if status == M.OK and outputs is not None:
            for did, out in zip(msg[11], outputs):
                if out is not None and type(out) is not M.Held:
                    self.store[did] = out
        return res

    def close(self) -> None:
        self.closed = True
        for s in (self._my_sock, self._master_sock):
            try:
                s.close()
            except OSError:
                pass


class HereProvider(Provider):
    """The provider of the inline node (one, in this process)."""

    name = "inline"

    def __init__(self, slots: int, runner: Runner | None = None) -> None:
        self.slots = slots
        self.runner = runner or Runner()
        self.node: HereNode | None = None
        self.specs: list[TaskSpec] = []

    def start(self, config: M.Hello, timeout: float, *,
              adoptable: bool = False) -> list[NodeHandle]:
        if config.get("data_dir"):      # where a task's failure record goes (keepinputs)
            from ..agent.executor import loglines
            loglines.KEEP_DIR[:] = [os.path.join(os.path.dirname(config["data_dir"]), "jobs")]
        self.node = HereNode(self._func, self.runner)
        return [self.node.handle(self, self.slots)]

    def _func(self, digest: bytes) -> tuple[Any, str | None]:
        """The task function itself (not a copy unpickled: what a debugger's breakpoints
        in the script's file name) and the task's name; (None, None) if no spec of this
        run has ``digest``."""
        from ..runtime import current
        rt = current._current
        if rt is None:
            return None, None
        for spec, run in list(rt.spec_runs.items()):
            if run.digest == digest:
                target: Any = spec.wrapper or spec.func
                if getattr(target, "spec", None) is spec:   # an api.task.TaskFunction: its
                    return target.__wrapped__, spec.name    # function, as a worker has it
                return getattr(target, "__taskflow_body__", target), spec.name
        return None, None

    def stop(self) -> None:
        if self.node is not None:
            self.node.close()
