"""L: a task's output as journal rows: carriage-return progress and one very long line.

    python benchmarks/loglines_bench.py [--updates 10000,60000] [--line-mb 200] [--json PATH]

L1  a Python task writes N flushed ``\\r`` progress updates (as tqdm does when its stream is
    not a terminal), N = 10,000 and 60,000: microseconds per update, timed inside the task
    (the capture's own cost). Linear when the two per-update figures are within 3x (they were
    0.04 ms and 0.16 ms before: the executor joined the partial line on every write).
L2  the same from a program (``python3 -c`` as a @binary): microseconds of the whole task
    per update (the node reads them through a pipe).
L3  a Python task prints one line of ``--line-mb`` MB without a newline; L4 a program does
    (its job file keeps the whole line): the peak resident memory summed over the run's
    processes (this master, its agent and executors, the journal writer), sampled every
    20 ms with psutil, minus the same sum before the task; the journal's rows for the task
    and its largest row (the cut is 1 MiB).
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

import psutil  # noqa: E402

import taskflow  # noqa: E402
from taskflow import binary, task, wait_on  # noqa: E402

PROGRESS = ("import sys, time\nn = int(sys.argv[1])\nfor i in range(n):\n"
            "    sys.stdout.write('\\r%6d/%d |%-50s|' % (i, n, '#' * (50 * i // n)))\n"
            "    sys.stdout.flush()\nsys.stdout.write('\\n')\n")
LONG = ("import sys\nmb = int(sys.argv[1])\nchunk = 'x' * 2**20\n"
        "for _ in range(mb):\n    sys.stdout.write(chunk)\nsys.stdout.flush()\n")


@task(returns=float)
def progress(n: int) -> float:
    t = time.perf_counter()
    for i in range(n):
        sys.stdout.write("\r%6d/%d |%-50s|" % (i, n, "#" * (50 * i // n)))
        sys.stdout.flush()
    sys.stdout.write("\n")
    return time.perf_counter() - t


@binary(binary=sys.executable, args="-c {{code}} {{n}}")
@task(returns=int)
def program(code: str, n: int) -> None:
    ...


@task(returns=int)
def long_line(mb: int) -> int:
    chunk = "x" * 2**20
    for _ in range(mb):
        sys.stdout.write(chunk)
    sys.stdout.flush()
    return mb


class PeakRss(threading.Thread):
    """The largest sum of resident memory over this process and its descendants."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.peak = 0
        self.stop_at = False

    @staticmethod
    def now() -> int:
        me = psutil.Process()
        total = 0
        for p in [me] + me.children(recursive=True):
            try:
                total += p.memory_info().rss
            except psutil.Error:
                pass
        return total

    def run(self) -> None:
        while not self.stop_at:
            self.peak = max(self.peak, self.now())
            time.sleep(0.02)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--updates", default="10000,60000")
    ap.add_argument("--line-mb", type=int, default=200)
    ap.add_argument("--json", default=None)
    a = ap.parse_args()
    counts = [int(x) for x in a.updates.split(",")]
    out: dict[str, Any] = {"updates": counts, "line_mb": a.line_mb}
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        with taskflow.Runtime(workers=1, run_dir=str(Path(tmp) / "runs"),
                              echo_logs=False) as rt:
            wait_on(progress(10))                           # the executor is warm
            for n in counts:
                s = wait_on(progress(n))
                out[f"L1_us_per_update_{n}"] = s / n * 1e6
                t = time.perf_counter()
                wait_on(program(PROGRESS, n))
                out[f"L2_us_per_update_{n}"] = (time.perf_counter() - t) / n * 1e6
            for key, make in (("L3", lambda: long_line(a.line_mb)),
                              ("L4", lambda: program(LONG, a.line_mb))):
                base = PeakRss.now()
                watch = PeakRss()
                watch.start()
                t = time.perf_counter()
                fut = make()
                wait_on(fut)
                s = time.perf_counter() - t
                watch.stop_at = True
                watch.join()
                out[f"{key}_seconds"] = s
                out[f"{key}_peak_mb_over_base"] = (watch.peak - base) / 1e6
        from taskflow.journal.reader import Journal
        with Journal(rt.run_dir) as j:
            by_name: dict[str, list[int]] = {}
            for t in j.tasks(limit=100):
                by_name.setdefault(t["name"], []).append(t["id"])
            for key, name in (("L3", "long_line"), ("L4", "program")):
                tid = max(by_name.get(name, [0]))
                lines = j.logs(task=tid, limit=100000)
                out[f"{key}_rows"] = len(lines)
                out[f"{key}_largest_row_bytes"] = max((len(x["line"].encode()) for x in lines),
                                                      default=0)
        os.chdir(ROOT)
    lo, hi = counts[0], counts[-1]
    out["L1_ratio"] = out[f"L1_us_per_update_{hi}"] / out[f"L1_us_per_update_{lo}"]
    out["L2_ratio"] = out[f"L2_us_per_update_{hi}"] / out[f"L2_us_per_update_{lo}"]
    for k, v in out.items():
        print(f"{k:32} {v:.3f}" if isinstance(v, float) else f"{k:32} {v}")
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))


if __name__ == "__main__":
    main()
