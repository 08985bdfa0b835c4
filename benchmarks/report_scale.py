"""How long `taskflow report --html` takes, and how big the page is, for a large run.

A real run (2 workers) of N tasks in a few names, with fan-ins every 1,000
tasks and one failure in 10,000, then the report made from its journal:
the time of the markdown alone and of markdown + HTML, and the page's size.

    python benchmarks/report_scale.py [--tasks 100000]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "src"))

import taskflow                                     # noqa: E402
from taskflow import task                           # noqa: E402


@task(returns=int)
def work(x):
    return x


@task(returns=int)
def gather(*xs):
    return len(xs)


@task(returns=int)
def check(x):
    if x % 10_000 == 0:
        raise ValueError(f"check {x} failed")
    return x


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=100_000)
    args = ap.parse_args()
    root = tempfile.mkdtemp(prefix="report-scale-")
    t0 = time.time()
    with taskflow.Runtime(workers=2, run_dir=root, echo_logs=False) as rt:
        block: list = []
        futs = []
        for i in range(args.tasks):
            if i % 100 == 0:
                futs.append(check(i))
            elif i % 1000 == 999:
                futs.append(gather(*block))
                block = []
            else:
                f = work(i)
                block.append(f)
        try:
            taskflow.barrier()
        except taskflow.TaskError:          # the checks meant to fail
            pass
    run = time.time() - t0
    from taskflow.observe.report import report
    t1 = time.time()
    md = report(rt.run_dir)
    t_md = time.time() - t1
    out = os.path.join(root, "report.html")
    t2 = time.time()
    report(rt.run_dir, out)
    t_html = time.time() - t2
    print(f"{args.tasks:,} tasks ran in {run:.1f} s; report: markdown {t_md:.1f} s "
          f"({len(md) / 1e3:.0f} kB), markdown + HTML {t_html:.1f} s "
          f"({os.path.getsize(out) / 1e6:.2f} MB at {out})")


if __name__ == "__main__":
    main()
