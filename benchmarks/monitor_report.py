"""The monitor's report call on a large run: time per call and the process's memory.

The monitor of ``taskflow run --monitor`` lives in the master, whose cyclic
collector is off while the run lasts (:mod:`taskflow.runtime.gctune`), so
this benchmark turns it off the same way, serves the run's journal with
:class:`taskflow.monitor.server.Monitor` and calls ``/api/runs/<run>/report``
over HTTP ``--calls`` times: the time of each call and the resident memory
after each.

    python benchmarks/monitor_report.py RUN_DIR [--calls 16] [--passes]

``--passes``: call :func:`taskflow.observe.report.figures` itself that many
times instead (what each call costs while the run goes on and its journal
changes between calls, so no answer can be reused).

RUN_DIR: a run's directory (make a 100,000-task one with any no-op workflow,
e.g. ``taskflow run --run-dir /tmp/runs -w 2 noop.py``).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import urllib.request

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

from taskflow.monitor.server import Monitor     # noqa: E402
from taskflow.runtime import gctune             # noqa: E402


def rss_mb() -> float:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2**20


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("run_dir")
    ap.add_argument("--calls", type=int, default=16)
    ap.add_argument("--passes", action="store_true")
    args = ap.parse_args()
    run_dir = os.path.abspath(args.run_dir)
    gctune.tune()                                   # as in a master while its run lasts
    if args.passes:
        from taskflow.journal import Journal
        from taskflow.observe.report import figures
        print(f"before: {rss_mb():.0f} MB")
        for i in range(args.calls):
            t0 = time.perf_counter()
            with Journal(run_dir) as j:
                f = figures(j)
            print(f"pass {i + 1:2d}: {time.perf_counter() - t0:6.3f} s, {rss_mb():5.0f} MB, "
                  f"{f['tasks']} tasks")
        return
    mon = Monitor(root=os.path.dirname(run_dir)).start()
    url = f"http://127.0.0.1:{mon.port}/api/runs/{os.path.basename(run_dir)}/report"
    req = urllib.request.Request(url, headers={"Authorization": f"Bearer {mon.token}"})
    print(f"before: {rss_mb():.0f} MB")
    first = None
    try:
        for i in range(args.calls):
            t0 = time.perf_counter()
            with urllib.request.urlopen(req, timeout=600) as resp:
                body = json.loads(resp.read())
            dt = time.perf_counter() - t0
            first = first or body
            same = "same" if body == first else "DIFFERENT"
            print(f"call {i + 1:2d}: {dt:6.3f} s, {rss_mb():5.0f} MB, {body['tasks']} tasks, {same}")
    finally:
        mon.stop()
        gctune.restore()


if __name__ == "__main__":
    main()
