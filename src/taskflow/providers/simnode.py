"""Simulated node agents: many endpoints of the real wire in one process, no executors.

    python -m taskflow.providers.simnode --fds 5,6,7 [--control FD] [--task-seconds S]

Each descriptor is one node's end of a socket pair whose other end the
master holds as an ordinary :class:`~taskflow.providers.handle.NodeHandle`
(:class:`~taskflow.providers.simulated.SimulatedProvider` makes them). Every
node speaks the protocol the real agent speaks: it reads HELLO and answers
READY, keeps FUNC digests, takes TASKS frames and answers RESULTS frames,
sends STARTED for tasks long enough to be watched, a SAMPLE of its "load"
every ``sample_interval`` seconds (the heartbeat the master sees), answers
FETCH with DATA, takes DROP, CANCEL, INTERRUPT and SHUTDOWN. It runs no
Python: a simulated task takes ``--task-seconds`` (0: it ends the moment it
arrives) and returns its first positional argument (None when it has none),
pickled, for each output, so a caller can check its results.

So one or two processes stand in for a thousand hosts, and what a benchmark
measures is the master. The slots are virtual: a task that arrives starts on
the node's slot that frees first (at once if one is free), the way a real
agent starts a prefetched task the moment its executor is free; a task
that finds a slot free starts when the loop's wait ended with its frame
there, not when this one process got to it after the frames of the other
nodes of that round. So the simulation's own delays in serving many nodes
from one process do not shift the nodes' clocks (by at most one round of its
loop); the master's delays in sending work do.

The control descriptor (optional) takes lines ``lose NAME``: that node's
stream is closed at once, as when its host dies (the master's node-loss
path). The process exits when every node's stream has closed.
"""
from __future__ import annotations

import argparse
import heapq
import itertools
import os
import pickle
import selectors
import sys
import time
from typing import Any

from ..wire import messages as M
from ..wire import protocol as P
from ..wire.channel import FdChannel
from ..wire.framewriter import FrameWriter
from ..wire.thresholds import RUNNING_SIGNAL_MIN

NONE = pickle.dumps(None, P.PROTOCOL)


class SimNode:
    """One simulated host: its stream, its virtual slots, what it sends next."""

    __slots__ = ("fd", "chan", "reader", "out", "name", "slots", "free_at", "ready",
                 "results", "started", "sample_at", "interval", "cancelled", "alive", "funcs")

    def __init__(self, fd: int) -> None:
        self.fd = fd
        self.chan = FdChannel(fd, fd)
        self.reader = P.FrameReader(self.chan)
        self.out = FrameWriter(self.chan)
        self.name = f"sim-{fd}"
        self.slots = 1
        self.free_at: list[float] = [0.0]     # a heap: when each virtual slot is free
        self.ready = False                    # HELLO answered
        self.results: list[M.ResultWire] = []
        self.started: list[tuple[int, float]] = []
        self.sample_at = float("inf")
        self.interval = 2.0
        self.cancelled: set[int] = set()
        self.alive = True
        self.funcs: set[bytes] = set()


class Simulator:
    """The loop serving every simulated node of this process."""

    def __init__(self, fds: list[int], task_seconds: float, control: int | None) -> None:
        self.sel = selectors.DefaultSelector()
        self.nodes: dict[int, SimNode] = {}
        self.by_name: dict[str, SimNode] = {}
        self.task_seconds = max(0.0, task_seconds)
        # (due, seq, kind, node, task id, what): "end" a result, "start" a STARTED entry,
        # "sample" the node's next heartbeat
        self.timers: list[tuple[float, int, str, SimNode, int, Any]] = []
        self.seq = itertools.count()
        self.dirty: set[SimNode] = set()      # nodes with frames to send this round
        self.control = control
        self.control_buf = b""
        self.rows = 0                         # node count, for staggering samples
        self.arrived = time.time()            # when the frames being read were there
        for fd in fds:
            os.set_blocking(fd, False)
            node = SimNode(fd)
            self.nodes[fd] = node
            self.sel.register(fd, selectors.EVENT_READ, node)
            node.out.attach(self.sel, node)
        if control is not None:
            os.set_blocking(control, False)
            self.sel.register(control, selectors.EVENT_READ, None)

    # -- the loop ----------------------------------------------------------------
    def run(self) -> None:
        sel = self.sel
        while self.nodes:
            timers = self.timers
            wait = 1.0
            if timers:
                wait = max(0.0, min(wait, _first_due(timers) - time.time()))
            events = sel.select(wait)
            # what this round reads was there by now: a node's task starts then, not when
            # this one process gets to its frame after serving the nodes before it
            self.arrived = time.time()
            for key, mask in events:
                node = key.data
                if node is None:
                    self._control()
                    continue
                if mask & selectors.EVENT_READ and node.alive:
                    self._read(node)
                if mask & selectors.EVENT_WRITE and node.alive:
                    self._flush(node)
            now = time.time()
            while timers and _first_due(timers) <= now:
                _, _, kind, node, tid, what = heapq.heappop(timers)
                if node.alive:
                    self._due(node, kind, tid, what, now)
            if self.dirty:
                for node in self.dirty:
                    self._send(node)
                self.dirty.clear()

    def _due(self, node: SimNode, kind: str, tid: int, what: Any, now: float) -> None:
        if kind == "end":
            if tid in node.cancelled:
                node.cancelled.discard(tid)
                return
            node.results.append(what)
        elif kind == "start":
            if tid not in node.cancelled:
                node.started.append((tid, what))
        else:                                 # "sample": the node's heartbeat
            node.out.queue(P.encode(M.SAMPLE, _sample(now)))
            self._timer(now + node.interval, "sample", node, 0, None)
        self.dirty.add(node)

    def _timer(self, due: float, kind: str, node: SimNode, tid: int, what: Any) -> None:
        heapq.heappush(self.timers, (due, next(self.seq), kind, node, tid, what))

    # -- frames in -------------------------------------------------------------
    def _read(self, node: SimNode) -> None:
        try:
            msgs = node.reader.feed()
        except BlockingIOError:
            return
        except OSError:
            msgs = None
        if msgs is None:
            self._close(node)
            return
        for op, body in msgs:
            if op == M.TASKS:
                self._tasks(node, body)
            elif op == M.HELLO:
                self._hello(node, body)
            elif op == M.FUNC:
                node.funcs.add(body.digest)
            elif op == M.FETCH:       # nothing is held here: every value went back inline
                node.out.queue(P.encode(M.DATA, [(did, None) for did in body]))
                self.dirty.add(node)
            elif op == M.CANCEL:
                node.cancelled.update(body)
            elif op == M.SHUTDOWN:
                self._close(node)
                return
            # DROP, INTERRUPT, DATA, PULL, PART: nothing is held or runs for real here

    def _hello(self, node: SimNode, hello: M.Hello) -> None:
        node.name = hello.get("name", node.name)
        node.slots = max(1, int(hello.get("slots") or 1))
        node.free_at = [0.0] * node.slots
        node.interval = max(0.2, float(hello.get("sample_interval", 2.0)))
        self.by_name[node.name] = node
        mem = float(hello.get("memory_gb") or 4.0)
        info: M.Ready = {"hostname": f"sim-{node.name}", "pid": os.getpid(), "slots": node.slots,
                         "cpus": node.slots, "memory_gb": mem,
                         "python": sys.version.split()[0], "version": _version(),
                         "memory_budget": int(mem * 0.6 * 2**30),
                         "memory_pause": int(mem * 0.8 * 2**30)}
        node.out.queue(P.encode(M.READY, info))
        node.ready = True
        # the first samples spread over one interval, as hosts started together drift apart
        self.rows += 1
        first = time.time() + 0.1 + node.interval * ((self.rows * 0.618) % 1.0)
        self._timer(first, "sample", node, 0, None)
        self.dirty.add(node)

    def _tasks(self, node: SimNode, batch: list[M.TaskWire]) -> None:
        now = self.arrived
        d = self.task_seconds
        free_at = node.free_at
        signal = d >= RUNNING_SIGNAL_MIN
        for tid, _dg, argv, _r, _k, _n, _i, _o, _p, _u, _e, outputs in batch:
            value = pickle.dumps(next(iter(argv), None), P.PROTOCOL) if argv else NONE
            outs: list[M.Output] = [value] * len(outputs)
            if d <= 0:
                node.results.append((tid, M.OK, outs, None, (now, now)))
                continue
            start = max(min(free_at), now)    # the virtual slot that frees first
            end = start + d
            heapq.heapreplace(free_at, end)
            if signal:
                if start <= now:
                    node.started.append((tid, start))
                else:
                    self._timer(start, "start", node, tid, start)
            self._timer(end, "end", node, tid, (tid, M.OK, outs, None, (start, end)))
        self.dirty.add(node)

    # -- frames out -------------------------------------------------------------
    def _send(self, node: SimNode) -> None:
        if not node.alive:
            return
        out = node.out
        if node.results:              # (the real agent's order: results, then STARTED)
            out.queue(P.encode(M.RESULTS, node.results))
            node.results = []
        if node.started:
            out.queue(P.encode(M.STARTED, node.started))
            node.started = []
        self._flush(node)

    def _flush(self, node: SimNode) -> None:
        try:
            node.out.flush()
        except OSError:
            self._close(node)

    def _close(self, node: SimNode) -> None:
        if not node.alive:
            return
        node.alive = False
        node.out.detach()
        try:
            self.sel.unregister(node.fd)
        except (KeyError, ValueError):
            pass
        try:
            os.close(node.fd)
        except OSError:
            pass
        self.nodes.pop(node.fd, None)
        self.by_name.pop(node.name, None)

    # -- control ----------------------------------------------------------------
    def _control(self) -> None:
        assert self.control is not None
        try:
            data = os.read(self.control, 4096)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:                  # the master is gone: so are its nodes
            self.sel.unregister(self.control)
            self.control = None
            for node in list(self.nodes.values()):
                self._close(node)
            return
        self.control_buf += data
        *lines, self.control_buf = self.control_buf.split(b"\n")
        for line in lines:
            word, _, name = line.decode(errors="replace").partition(" ")
            lost = self.by_name.get(name)
            if word == "lose" and lost is not None:
                self._close(lost)         # the host is gone: its stream ends, no goodbye


def _first_due(timers: list[tuple[float, int, str, SimNode, int, Any]]) -> float:
    """When the heap's first timer is due."""
    for due, *_ in timers[:1]:
        return due
    return float("inf")


def _sample(now: float) -> dict[str, Any]:
    """A load sample with the fields of agent.sampler's (an idle host's figures)."""
    return {"t": now, "cpu": 0.0, "cpu_own": 0.0, "load1": 0.0, "mem": 10.0,
            "mem_avail_gb": 4.0, "disk": 10.0, "net_sent": 0, "net_recv": 0}


def _version() -> str:
    from .._version import __version__
    return __version__


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m taskflow.providers.simnode",
                                 description="simulated taskflow node agents (for benchmarks "
                                             "and tests of the master)")
    ap.add_argument("--fds", required=True, help="comma-separated descriptors, one per node")
    ap.add_argument("--control", type=int, default=None, help="descriptor of control lines")
    ap.add_argument("--task-seconds", type=float, default=0.0)
    a = ap.parse_args(argv)
    fds = [int(x) for x in a.fds.split(",") if x]
    Simulator(fds, a.task_seconds, a.control).run()


if __name__ == "__main__":
    main()
