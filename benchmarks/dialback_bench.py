"""Throughput of dial-back nodes (TLS, mutual proofs) against local pipe nodes.

    python benchmarks/dialback_bench.py [--repeat 5] [--tasks 10000] [--workers 2]

Workload A (independent no-op tasks) on one node agent with W slots, reached
either through pipes (the local provider) or by dialling back over TCP with
TLS (as Slurm agents do), alternating the two, in the same run; prints the
median tasks/s of each and the ratio dial-back / pipes.
"""
from __future__ import annotations

import argparse
import os
import queue
import statistics
import subprocess
import sys
import tempfile
import time
from typing import Any

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "src"))

import taskflow  # noqa: E402
from taskflow import task, wait_on  # noqa: E402
from taskflow.providers.base import Provider  # noqa: E402
from taskflow.providers.dialback import SECRET_FILE_ENV, DialbackServer, write_secret  # noqa: E402
from taskflow.providers.handle import NodeHandle  # noqa: E402


class LocalDialback(Provider):
    """One local agent that joins by dialling back (``python -m taskflow.node --connect``)."""

    name = "dialback-local"

    def __init__(self, slots: int) -> None:
        self.slots = slots
        self.server: DialbackServer | None = None
        self.proc: subprocess.Popen[bytes] | None = None
        self.tmp = tempfile.mkdtemp(prefix="tf-db-")

    def start(self, config: Any, timeout: float, *, adoptable: bool = False) -> list[NodeHandle]:
        joined: queue.Queue[NodeHandle] = queue.Queue()
        self.server = DialbackServer(lambda meta: {**config, "name": "dialback-0",
                                                   "slots": self.slots}, joined.put)
        secret = write_secret(os.path.join(self.tmp, "secret"), self.server.secret)
        env = dict(os.environ, **{SECRET_FILE_ENV: secret},
                   PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
        self.proc = subprocess.Popen([sys.executable, "-m", "taskflow.node", "--connect",
                                      self.server.address], env=env)
        return [joined.get(timeout=timeout)]

    def stop(self) -> None:
        if self.server is not None:
            self.server.close()
        if self.proc is not None:
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@task(returns=1)
def noop(i):
    return i


def rate(provider: Provider | None, workers: int, n: int) -> float:
    kw: dict[str, Any] = {"providers": [provider]} if provider is not None else {}
    with taskflow.Runtime(workers=workers, journal=False, echo_logs=False,
                          run_dir=os.path.join(tempfile.gettempdir(), "tf-db-runs"), **kw) as rt:
        wait_on([noop(i) for i in range(2000)])
        best = 0.0
        for _ in range(3):
            t0 = time.perf_counter()
            wait_on([noop(i) for i in range(n)])
            best = max(best, n / (time.perf_counter() - t0))
        assert not rt.failed
    return best


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    pipes, dial = [], []
    for _ in range(a.repeat):
        pipes.append(rate(None, a.workers, a.tasks))
        dial.append(rate(LocalDialback(a.workers), a.workers, a.tasks))
    p, d = statistics.median(pipes), statistics.median(dial)
    print(f"A, {a.tasks} no-op tasks on one {a.workers}-slot agent, median of {a.repeat}: "
          f"pipes {p:,.0f} tasks/s, dial-back (TLS) {d:,.0f} tasks/s, ratio {d / p:.3f}")


if __name__ == "__main__":
    main()
