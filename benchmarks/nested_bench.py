"""Tasks that call tasks (issue 36): N1-N3 against benchmarks A and B in the same sitting.

    python benchmarks/nested_bench.py [--only A,B,N1,N2,N3,X] [--repeat 3] [--fib 20]
                                      [--cpu] [--json out.json]

Each workload runs in a fresh 2- or 4-slot local runtime (one node agent), after a
warm-up; figures are medians of --repeat, and only same-run ratios mean much.

A   10,000 independent no-ops from the program (benchmarks/workloads.py's A): tasks/s.
B   a chain of 1,000 ``inc`` calls from the program (workloads' B): us per link.
N1  recursive Fibonacci by nested tasks, fib(20) (21,891 tasks), 2 slots: tasks/s and
    its ratio to A (target >= 0.3).
N2  8 parents, each calling 50 children of 0.1 s and waiting for them, 4 slots:
    makespan against the ideal 400 x 0.1 / 4 = 10 s (target <= 1.15 x; a waiting parent
    holds no slot).
N3  one task making a chain of 1,000 nested ``inc`` calls (each reads the previous
    one's future) and waiting for the last: us per link against B's (target <= 2 x).
X   ``taskflow.Executor().map`` over 10,000 no-op items (a plain function, on the
    running runtime), then ``concurrent.futures.as_completed`` over 1,000 submissions
    (each yielded once): map's items/s and its ratio to A (target >= 0.5).

``--cpu`` adds each workload's CPU time per task in microseconds, by process (the
master's loop thread, its nested-calls thread, the rest of the master, the agent, its
executors, the journal's writer): what a task costs the machine in all, a figure that
moves far less than throughput on a loaded machine (benchmarks/cpu_split.py).
"""
from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

import taskflow  # noqa: E402
from taskflow import task, wait_on  # noqa: E402

from benchmarks.cpu_split import cpu_split, per_task  # noqa: E402


@task(returns=1)
def noop(x):
    return x


@task(returns=1)
def inc(x):
    return x + 1


@task(returns=1)
def fib(n):
    if n < 2:
        return n
    a, b = fib(n - 1), fib(n - 2)
    x, y = wait_on(a, b)
    return x + y


@task(returns=1)
def child(i, s):
    time.sleep(s)
    return i


@task(returns=1)
def parent(k, n, s):
    return sum(wait_on([child(k * 1000 + i, s) for i in range(n)]))


@task(returns=1)
def chain(n):
    x = inc(0)
    for _ in range(n - 1):
        x = inc(x)
    return wait_on(x)


def plain_noop(x):
    return x


def fib_tasks(n: int) -> int:
    a, b = 1, 1                      # calls of fib(0) and fib(1)
    for _ in range(n - 1):
        a, b = b, a + b + 1
    return b if n else a


def _runtime(workers: int, tmp: str) -> taskflow.Runtime:
    return taskflow.Runtime(workers=workers, run_dir=tmp)      # as benchmark A runs it


def _warm(rt: taskflow.Runtime) -> None:
    wait_on([noop(i) for i in range(200)])
    wait_on(inc(1))
    wait_on(fib(6))
    wait_on(chain(5))


# tasks each workload runs (the --cpu figures are per task)
TASKS = {"A": 10_000, "B": 1000, "N2": 8 + 8 * 50, "N3": 1 + 1000, "X": 10_000 + 1000}


def run_a() -> dict[str, float]:
    t = time.perf_counter()
    assert wait_on([noop(i) for i in range(10_000)]) == list(range(10_000))
    return {"tasks_per_s": 10_000 / (time.perf_counter() - t)}


def run_b() -> dict[str, float]:
    t = time.perf_counter()
    x = inc(0)
    for _ in range(999):
        x = inc(x)
    assert wait_on(x) == 1000
    return {"us_per_link": (time.perf_counter() - t) / 1000 * 1e6}


def run_n1(n: int) -> dict[str, float]:
    t = time.perf_counter()
    v = wait_on(fib(n))
    dt = time.perf_counter() - t
    expect = {20: 6765}.get(n)
    assert expect is None or v == expect, v
    return {"tasks_per_s": fib_tasks(n) / dt, "seconds": dt}


def run_n2() -> dict[str, float]:
    t = time.perf_counter()
    sums = wait_on([parent(k, 50, 0.1) for k in range(8)])
    dt = time.perf_counter() - t
    assert sums == [sum(k * 1000 + i for i in range(50)) for k in range(8)]
    return {"makespan_s": dt, "ratio_to_ideal": dt / 10.0}


def run_n3() -> dict[str, float]:
    t = time.perf_counter()
    assert wait_on(chain(1000)) == 1000
    return {"us_per_link": (time.perf_counter() - t) / 1000 * 1e6}


def run_x() -> dict[str, float]:
    with taskflow.Executor() as ex:                # (the runtime running: the workload's)
        t = time.perf_counter()
        assert list(ex.map(plain_noop, range(10_000))) == list(range(10_000))
        dt = time.perf_counter() - t
        futs = [ex.submit(plain_noop, i) for i in range(1000)]
        seen = [f.result() for f in cf.as_completed(futs, timeout=600)]
        assert sorted(seen) == list(range(1000))        # each once
    return {"tasks_per_s": 10_000 / dt}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--only", default="A,B,N1,N2,N3,X")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--fib", type=int, default=20)
    ap.add_argument("--cpu", action="store_true",
                    help="CPU microseconds per task, by process (the master's threads, the "
                         "agent, executors, the journal)")
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    which = a.only.split(",")
    plan: list[tuple[str, int, Callable[[], dict[str, float]]]] = [
        ("A", 2, run_a), ("B", 2, run_b), ("N1", 2, lambda: run_n1(a.fib)),
        ("N2", 4, run_n2), ("N3", 2, run_n3), ("X", 2, run_x)]
    got: dict[str, list[dict[str, float]]] = {}
    for rep in range(a.repeat):
        for name, workers, fn in plan:
            if name not in which:
                continue
            with tempfile.TemporaryDirectory() as tmp, _runtime(workers, tmp) as rt:
                _warm(rt)
                before = cpu_split() if a.cpu else None
                res = fn()
                if before is not None:
                    n = fib_tasks(a.fib) if name == "N1" else TASKS[name]
                    res.update(per_task(before, cpu_split(), n))
            got.setdefault(name, []).append(res)
            print(f"[{rep + 1}/{a.repeat}] {name}: " +
                  ", ".join(f"{k}={v:.4g}" for k, v in res.items()), file=sys.stderr, flush=True)
    med = {n: {k: statistics.median(r.get(k, 0.0) for r in rs) for k in rs[0]}
           for n, rs in got.items()}
    out: dict[str, Any] = {"medians": med, "runs": got}
    if "A" in med and "N1" in med:
        out["N1/A"] = med["N1"]["tasks_per_s"] / med["A"]["tasks_per_s"]
    if a.cpu and "A" in med and "N1" in med:
        out["N1/A cpu_us_per_task"] = med["N1"]["cpu_us"] / med["A"]["cpu_us"]
    if "A" in med and "X" in med:
        out["X/A"] = med["X"]["tasks_per_s"] / med["A"]["tasks_per_s"]
    if "B" in med and "N3" in med:
        out["N3/B"] = med["N3"]["us_per_link"] / med["B"]["us_per_link"]
    print(json.dumps(out if a.json is None else {k: v for k, v in out.items() if k != "runs"},
                     indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(out, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
