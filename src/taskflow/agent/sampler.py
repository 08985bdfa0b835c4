"""Resource samples a node reports (the DTES seed): CPU, memory, disk, network, GPU."""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Any

import psutil


class Sampler:
    """Takes a sample every ``interval`` seconds when asked."""

    def __init__(self, interval: float = 2.0) -> None:
        self.interval = max(0.2, float(interval))
        self._due = time.time() + 0.2
        self._gpu = shutil.which("nvidia-smi")
        psutil.cpu_percent(None)  # prime the counter
        # A node confined to some cores (taskset, cpuset, a batch allocation) reports theirs.
        aff = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        self._cores = aff if aff and len(aff) < (psutil.cpu_count() or 1) else None
        if self._cores:
            psutil.cpu_percent(None, percpu=True)
        self._procs: dict[int, Any] = {}    # pid -> psutil.Process

    def next_due(self) -> float:
        return self._due

    def _own_cpu(self) -> float:
        """CPU % (of this node's cores) used by the agent and its executors: the rest is
        outside load, which least-loaded placement avoids."""
        pids = _descendants(os.getpid())
        if pids is None:         # no /proc/<pid>/task/<tid>/children: psutil scans /proc
            try:
                me = psutil.Process()
                pids = [me.pid] + [p.pid for p in me.children(recursive=True)]
            except psutil.Error:
                return 0.0
        total = 0.0
        seen: dict[int, Any] = {}
        for pid in pids:
            known = self._procs.get(pid)
            if known is None:
                try:
                    known = psutil.Process(pid)
                    known.cpu_percent(None)      # primed: counts from the next sample on
                except psutil.Error:
                    continue
            else:
                try:
                    total += known.cpu_percent(None)
                except psutil.Error:
                    continue
            seen[pid] = known
        self._procs = seen
        ncores = len(self._cores) if self._cores else (psutil.cpu_count() or 1)
        return min(100.0, total / ncores)

    def _cpu(self) -> float:
        if not self._cores:
            cpu: float = psutil.cpu_percent(None)
            return cpu
        per: list[float] = psutil.cpu_percent(None, percpu=True)
        return sum(per[i] for i in self._cores if i < len(per)) / len(self._cores)

    def sample(self) -> dict[str, Any]:
        self._due = time.time() + self.interval
        vm = psutil.virtual_memory()
        try:
            disk = psutil.disk_usage(".").percent
        except OSError:
            disk = None
        net = psutil.net_io_counters()
        s: dict[str, Any] = {
            "t": time.time(),
            "cpu": self._cpu(),
            "cpu_own": self._own_cpu(),
            "load1": psutil.getloadavg()[0],
            "mem": vm.percent,
            "mem_avail_gb": vm.available / 2**30,
            "disk": disk,
            "net_sent": net.bytes_sent if net else 0,
            "net_recv": net.bytes_recv if net else 0,
        }
        if self._gpu:
            s["gpu"] = _gpu_util(self._gpu)
        return s


def _descendants(root: int) -> list[int] | None:
    """``root`` and every process under it, read from /proc/<pid>/task/<tid>/children.

    psutil's ``children(recursive=True)`` reads the stat file of every process
    on the host; with 128 agents on one machine (the many-nodes benchmark)
    their samples cost more CPU than the tasks. This reads the agent's own tree
    only. None when the kernel has no such file (psutil then).
    """
    out = [root]
    todo = [root]
    while todo:
        pid = todo.pop()
        try:
            tids = os.listdir(f"/proc/{pid}/task")
        except OSError:
            continue                       # ended meanwhile
        for tid in tids:
            try:
                with open(f"/proc/{pid}/task/{tid}/children", "rb") as f:
                    kids = f.read().split()
            except FileNotFoundError:
                if pid == root and tid == str(root):
                    return None            # not this kernel's feature
                continue
            except OSError:
                continue
            for k in kids:
                child = int(k)
                out.append(child)
                todo.append(child)
    return out


def _gpu_util(exe: str) -> list[float] | None:
    try:
        out = subprocess.run([exe, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=5).stdout
        return [float(x) for x in out.split()]
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
