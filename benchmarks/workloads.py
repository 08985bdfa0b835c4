"""The benchmark workloads, defined once for every runtime.

Task bodies live at module level here so that every runtime pickles them by
reference (``benchmarks.workloads.noop``) and its workers import this module.
Runtimes that need their own decorated copy (taskflow) mirror these bodies
one for one and map them by ``__name__``.

A workload drives a *handle* (see ``benchmarks.peers.Handle``): ``submit(fn,
*args)`` returns a future-like object (futures may be passed as arguments to
later submits), ``gather(futs)`` returns the list of values and
``result(fut)`` one value.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any, Callable, Protocol

# --------------------------------------------------------------------------
# Task bodies. Imports happen inside the function where one is needed:
# Parsl ships functions without their module's imports when pickled by value.
# --------------------------------------------------------------------------


def noop(x: int) -> int:
    """A: return the argument."""
    return x


def inc(x: int) -> int:
    """B: each link of the chain takes the previous result."""
    return x + 1


def source() -> list[int]:
    """C: the value every middle task reads (a small list, ~5 KB pickled)."""
    return list(range(C_SOURCE_LEN))


def middle(src: list[int], i: int) -> int:
    """C: read the source and produce one value."""
    return src[i % len(src)] + i


def total(*xs: int) -> int:
    """C: the reduction over all middle results (varargs: every runtime tracks them)."""
    return sum(xs)


def sleep_task(seconds: float) -> float:
    """D: idle work, so the makespan only measures scheduling overhead."""
    import time as _time

    _time.sleep(seconds)
    return seconds


TASK_FUNCTIONS: tuple[Callable[..., Any], ...] = (noop, inc, source, middle, total, sleep_task)

# --------------------------------------------------------------------------
# Sizes (from shared/BENCHMARKS.md)
# --------------------------------------------------------------------------
A_TASKS = 10_000
B_CHAIN = 1_000
C_MIDDLE = 2_000
C_SOURCE_LEN = 1_000
D_TASKS = 200
D_SLEEP = 0.05
D_SLOTS = 8
D_IDEAL = D_TASKS * D_SLEEP / D_SLOTS  # 1.25 s
G_TASKS = 1_000_000


class Handle(Protocol):
    """What a runtime adapter's ``start(workers)`` returns."""

    def submit(self, fn: Callable[..., Any], *args: Any) -> Any: ...

    def gather(self, futs: list[Any]) -> list[Any]: ...

    def result(self, fut: Any) -> Any: ...


# --------------------------------------------------------------------------
# Workloads run on a warmed-up handle. Each returns {metric: value}.
# --------------------------------------------------------------------------


def warm_up(h: Handle, workers: int) -> None:
    """Touch every worker and every task function before anything is timed."""
    h.gather([h.submit(sleep_task, 0.02) for _ in range(2 * workers)])
    h.gather([h.submit(noop, i) for i in range(50 * workers)])
    f = h.submit(inc, 0)
    for _ in range(9):
        f = h.submit(inc, f)
    assert h.result(f) == 10
    s = h.submit(source)
    mids = [h.submit(middle, s, i) for i in range(4 * workers)]
    h.result(h.submit(total, *mids))


def run_a(h: Handle) -> dict[str, float]:
    """A. Throughput: submit 10,000 independent no-ops, wait for all."""
    t = time.perf_counter()
    futs = [h.submit(noop, i) for i in range(A_TASKS)]
    vals = h.gather(futs)
    dt = time.perf_counter() - t
    if vals != list(range(A_TASKS)):
        raise AssertionError("A: wrong results")
    return {"tasks_per_s": A_TASKS / dt, "seconds": dt}


def run_b(h: Handle) -> dict[str, float]:
    """B. Latency: a chain of 1,000 tasks, each taking the previous result."""
    t = time.perf_counter()
    f = h.submit(inc, 0)
    for _ in range(B_CHAIN - 1):
        f = h.submit(inc, f)
    v = h.result(f)
    dt = time.perf_counter() - t
    if v != B_CHAIN:
        raise AssertionError(f"B: expected {B_CHAIN}, got {v!r}")
    return {"us_per_task": dt / B_CHAIN * 1e6, "seconds": dt}


def c_expected() -> int:
    return sum(middle(source(), i) for i in range(C_MIDDLE))


def run_c(h: Handle) -> dict[str, float]:
    """C. Fan-out/fan-in: 1 source -> 2,000 readers -> 1 reduction."""
    t = time.perf_counter()
    s = h.submit(source)
    mids = [h.submit(middle, s, i) for i in range(C_MIDDLE)]
    v = h.result(h.submit(total, *mids))
    dt = time.perf_counter() - t
    if v != c_expected():
        raise AssertionError("C: wrong reduction")
    return {"seconds": dt}


def run_d(h: Handle) -> dict[str, float]:
    """D. Efficiency: 200 x sleep(0.05) on 8 slots; makespan / 1.25 s."""
    t = time.perf_counter()
    h.gather([h.submit(sleep_task, D_SLEEP) for _ in range(D_TASKS)])
    dt = time.perf_counter() - t
    return {"makespan_over_ideal": dt / D_IDEAL, "seconds": dt}


@dataclass(frozen=True)
class Workload:
    key: str
    title: str
    #: "session": run on a warmed-up handle; "child": fresh interpreter (benchmarks/child.py)
    mode: str
    run: Callable[[Handle], dict[str, float]] | None = None
    #: worker count override (D uses 8 slots for every runtime)
    workers: int | None = None
    timeout_s: float = 300.0


WORKLOADS: dict[str, Workload] = {
    "A": Workload("A", "throughput, 10,000 no-ops", "session", run_a),
    "B": Workload("B", "latency, chain of 1,000", "session", run_b),
    "C": Workload("C", "fan-out/fan-in 1-2,000-1", "session", run_c),
    "D": Workload("D", "200 x sleep(0.05) on 8 slots", "session", run_d, workers=D_SLOTS),
    "E": Workload("E", "start-up and teardown", "child", timeout_s=120.0),
    "G": Workload("G", "scale, no-ops in one run", "child", timeout_s=3600.0),
}

#: Table columns: (workload, metric key, header, higher_is_better)
COLUMNS: list[tuple[str, str, str, bool]] = [
    ("A", "tasks_per_s", "A tasks/s", True),
    ("B", "us_per_task", "B µs/task", False),
    ("C", "seconds", "C s", False),
    ("D", "makespan_over_ideal", "D makespan/ideal", False),
    ("E", "first_result_s", "E s to first result", False),
    ("E", "teardown_s", "E teardown s", False),
    ("G", "tasks_per_s", "G tasks/s", True),
    ("G", "bytes_per_task", "G bytes/task", False),
    ("G", "master_peak_rss_mb", "G master peak RSS MB", False),
    ("G", "g_over_a", "G / A (same sitting)", True),
]
