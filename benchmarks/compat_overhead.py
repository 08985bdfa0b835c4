"""What the PyCOMPSs layer costs per task call, against taskflow's own @task, same run.

    python benchmarks/compat_overhead.py [--tasks 20000] [--repeat 5] [--workers 2]

Each repetition runs, in a fresh child process each and alternating the order,
N no-op calls of a function declared with ``taskflow.task(returns=int)`` and
the same function declared with ``pycompss.api.task.task(returns=int)`` (the
layer imported as ``taskflow.compat.pycompss``), and of a PyCOMPSs task whose
``returns`` is read from its source, waits for all values, and reports
tasks/s. The ratio compat / native is the figure to read: PyCOMPSs itself
needs a JVM and cannot run on the same machine for a peer comparison here.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

CHILD = r'''
import sys, time
import taskflow
kind, n = sys.argv[1], int(sys.argv[2])
if kind == "native":
    from taskflow import task
    @task(returns=int)
    def noop(x):
        return x
else:
    from taskflow.compat.pycompss.api.task import task
    if kind == "compat":
        @task(returns=int)
        def noop(x):
            return x
    else:                                  # returns read from the source
        @task()
        def noop(x):
            return x
from taskflow import wait_on
with taskflow.Runtime(workers=int(sys.argv[3]), journal=False) as rt:
    wait_on([noop(i) for i in range(200)])
    t0 = time.perf_counter()
    wait_on([noop(i) for i in range(n)])
    print(n / (time.perf_counter() - t0))
'''


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--tasks", type=int, default=20000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--workers", type=int, default=2)
    a = ap.parse_args()
    kinds = ["native", "compat", "inferred"]
    rates: dict[str, list[float]] = {k: [] for k in kinds}
    env = dict(os.environ, TASKFLOW_RUN_DIR=os.path.join("/tmp", f"tf-compat-bench-{os.getpid()}"))
    for r in range(a.repeat):
        order = kinds[r % 3:] + kinds[:r % 3]
        for k in order:
            out = subprocess.run([sys.executable, "-c", CHILD, k, str(a.tasks), str(a.workers)],
                                 capture_output=True, text=True, check=True, env=env, timeout=600)
            rates[k].append(float(out.stdout.strip()))
        time.sleep(0.2)
    med = {k: statistics.median(v) for k, v in rates.items()}
    print(f"| calls ({a.tasks} no-ops, {a.workers} workers, median of {a.repeat}) | tasks/s "
          f"| / native |")
    print("|---|---|---|")
    for k, label in (("native", "taskflow @task(returns=int)"),
                     ("compat", "pycompss @task(returns=int)"),
                     ("inferred", "pycompss @task() (returns from the source)")):
        print(f"| {label} | {med[k]:,.0f} | {med[k] / med['native']:.2f} |")


if __name__ == "__main__":
    main()
