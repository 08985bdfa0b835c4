"""Resource samples a node reports (the DTES seed): CPU, memory, disk, network, GPU."""
from __future__ import annotations

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

    def next_due(self) -> float:
        return self._due

    @staticmethod
    def total_memory_gb() -> float:
        return psutil.virtual_memory().total / 2**30

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
            "cpu": psutil.cpu_percent(None),
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


def _gpu_util(exe: str) -> list[float] | None:
    try:
        out = subprocess.run([exe, "--query-gpu=utilization.gpu", "--format=csv,noheader,nounits"],
                             capture_output=True, text=True, timeout=5).stdout
        return [float(x) for x in out.split()]
    except (OSError, ValueError, subprocess.SubprocessError):
        return None
