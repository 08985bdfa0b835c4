"""Fresh-interpreter measurements (workloads E and G), run by run.py as a subprocess.

    python benchmarks/child.py E <runtime> <workers> <t0> <out.json>
    python benchmarks/child.py G <runtime> <workers> <n_tasks> <out.json>

E: ``t0`` is the parent's ``time.time()`` taken just before it spawned this
interpreter, so "first_result_s" covers interpreter start, imports, runtime
start-up and one task's round trip. "stop_s" is the runtime's own stop();
the parent adds the interpreter's exit to get the teardown figure.

G: ``n_tasks`` no-ops submitted and gathered in windows of ``G_WINDOW`` (the
next window is submitted before the previous one is gathered, so the
workers never wait on the program), the way a program of millions of tasks
runs: it keeps the tasks in flight, not the tasks done. Reported: tasks/s,
the peak RSS of this (master) process from ``getrusage(RUSAGE_SELF)`` in MB
(``master_peak_rss_mb``) and per task above the peak after start-up and
warm-up, and A's rate (10,000 no-ops, submit all, wait all) measured in this
interpreter just before, with G's rate over it (``g_over_a``).

Results go to a file rather than stdout, so a leftover grandchild holding the
pipe open can't hang the parent.
"""
import time

T_FIRST_LINE = time.time()

import gc  # noqa: E402
import json  # noqa: E402
import os  # noqa: E402
import resource  # noqa: E402
import sys  # noqa: E402
from pathlib import Path  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))


def _rss_bytes() -> int:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # Linux: KiB


def main_e(name: str, workers: int, t0: float, out: Path) -> None:
    from benchmarks import workloads
    from benchmarks.peers import load

    mod = load(name)
    h = mod.start(workers)
    v = h.result(h.submit(workloads.noop, 1))
    t_first = time.time()
    assert v == 1, v
    mod.stop(h)
    t_stopped = time.time()
    out.write_text(json.dumps({
        "interpreter_to_first_line_s": T_FIRST_LINE - t0,
        "first_result_s": t_first - t0,
        "first_result_abs": t_first,
        "stop_s": t_stopped - t_first,
    }))


G_WINDOW = 25_000


def main_g(name: str, workers: int, n: int, out: Path) -> None:
    from benchmarks import workloads
    from benchmarks.peers import load

    mod = load(name)
    h = mod.start(workers)
    workloads.warm_up(h, workers)
    import statistics
    a = statistics.median(workloads.run_a(h)["tasks_per_s"] for _ in range(3))  # A, here
    gc.collect()
    base = _rss_bytes()
    t = time.perf_counter()
    total = count = 0
    first = last = None
    prev: list = []
    for lo in range(0, n, G_WINDOW):
        futs = [h.submit(workloads.noop, i) for i in range(lo, min(n, lo + G_WINDOW))]
        if prev:
            vals = h.gather(prev)
            total += sum(vals)
            count += len(vals)
            first = vals[0] if first is None else first
            last = vals[-1]
        prev = futs
    vals = h.gather(prev)
    total += sum(vals)
    count += len(vals)
    first = vals[0] if first is None else first
    last = vals[-1]
    dt = time.perf_counter() - t
    peak = _rss_bytes()
    ok = count == n and first == 0 and last == n - 1 and total == n * (n - 1) // 2
    del prev, vals
    mod.stop(h)
    out.write_text(json.dumps({
        "tasks_per_s": n / dt,
        "seconds": dt,
        "bytes_per_task": (peak - base) / n,
        "baseline_rss_bytes": base,
        "peak_rss_bytes": peak,
        "master_peak_rss_mb": peak / 1e6,
        "a_tasks_per_s": a,
        "g_over_a": n / dt / a,
        "window": G_WINDOW,
        "n_tasks": n,
        "ok": ok,
    }))


if __name__ == "__main__":
    kind, runtime, w, arg, path = sys.argv[1:6]
    os.environ.setdefault("PYTHONPATH", str(ROOT))
    if kind == "E":
        main_e(runtime, int(w), float(arg), Path(path))
    elif kind == "G":
        main_g(runtime, int(w), int(arg), Path(path))
    else:
        sys.exit(f"unknown kind {kind!r}")
