"""The chaos driver's view of a run's processes (benchmarks/chaos.py): the master's node
agents and their executors (psutil), killing a tree, and what is left afterwards."""
from __future__ import annotations

import threading
import time

import psutil


def tree(pid: int) -> list[psutil.Process]:
    try:
        p = psutil.Process(pid)
        return [p, *p.children(recursive=True)]
    except psutil.NoSuchProcess:
        return []


def agents_of(master: int) -> list[psutil.Process]:
    """The node agents the master started (its children running taskflow.node)."""
    out = []
    try:
        kids = psutil.Process(master).children()
    except psutil.NoSuchProcess:
        return []
    for k in kids:
        try:
            if "taskflow.node" in " ".join(k.cmdline()):
                out.append(k)
        except psutil.Error:
            continue
    return out


def executors_of(agent: psutil.Process) -> list[psutil.Process]:
    try:
        return [k for k in agent.children() if "taskflow.node" in " ".join(k.cmdline())]
    except psutil.Error:
        return []


def kill_tree(pid: int) -> None:
    for p in reversed(tree(pid)):
        try:
            p.kill()
        except psutil.Error:
            pass


def left_behind(procs: list[psutil.Process], wait: float) -> list[str]:
    """Which of ``procs`` are still alive ``wait`` seconds from now (zombies count as gone)."""
    deadline = time.time() + wait
    alive = procs
    while True:
        alive = [p for p in alive if _alive(p)]
        if not alive or time.time() > deadline:
            break
        time.sleep(0.1)
    out = []
    for p in alive:
        try:
            out.append(f"{p.pid} {' '.join(p.cmdline())[:80]}")
        except psutil.Error:
            continue
    return out


def _alive(p: psutil.Process) -> bool:
    try:
        return p.is_running() and p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


class Watcher(threading.Thread):
    """Remembers every process of the run's tree while it runs (to find what is left)."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid = pid
        self.seen: dict[int, psutil.Process] = {}
        self.stop = threading.Event()

    def run(self) -> None:
        while not self.stop.is_set():
            for p in tree(self.pid):
                self.seen.setdefault(p.pid, p)
            self.stop.wait(0.05)

    def procs(self) -> list[psutil.Process]:
        self.stop.set()
        self.join()
        return [p for pid, p in self.seen.items() if pid != self.pid]
