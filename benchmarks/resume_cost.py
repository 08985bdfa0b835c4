"""The cost of being resumable: the same workloads with the resume log on and off.

Runs are resumable by default (issue 26): "on" is the default, "off" is
``--no-resumable`` (``Runtime(resumable=False)``). Each measurement is a fresh
process that starts a 2-worker runtime, runs one workload and reports its
throughput, the master's CPU time and its peak RSS. Runs alternate on/off (on,
off, off, on, ...) so drift on the machine hits both alike; the figures are
medians and the on/off ratios (the default's budget: on/off >= 0.95 on A).

Workloads:
  A    10,000 independent no-op tasks (benchmarks/workloads.py's A)
  V10K 2,000 tasks each returning 10 KB, fetched by the master
  V1M  200 tasks each returning 1 MB, fetched by the master
  G    1,000,000 no-op tasks in one run (``--g``; takes minutes)

    python benchmarks/resume_cost.py [--repeat 5] [--g] [--g-tasks 1000000]
                                     [--checkpoint tasks=1000,seconds=30]
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

CHILD = r"""
import json, resource, sys, time, taskflow
from taskflow import task, wait_on
@task(returns=int)
def noop(x):
    return x
@task(returns=bytes)
def blob(i, n):
    return i.to_bytes(8, "little") * (n // 8)
kind, mode, n, root = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
ckpt = sys.argv[5] if mode == "ckpt" else None
with taskflow.Runtime(workers=2, run_dir=root, echo_logs=False,
                      resumable=(mode != "off"), checkpoint=ckpt) as rt:
    wait_on([noop(i) for i in range(200)])          # warm-up: executors, function shipping
    t0 = time.perf_counter()
    if kind in ("A", "G"):
        wait_on([noop(i) for i in range(n)])
        count = n
    else:
        size = {"V10K": 10_000, "V1M": 1_000_000}[kind]
        vals = wait_on([blob(i, size) for i in range(n)])
        assert all(len(v) == size - size % 8 for v in vals)
        count = n
    dt = time.perf_counter() - t0
    log = rt.recovery.log.path if rt.recovery.log is not None else None
t_total = time.perf_counter() - t0                  # stop() included: the last writes
self_ru = resource.getrusage(resource.RUSAGE_SELF)
import os
print(json.dumps({"tps": count / dt, "seconds": dt, "with_stop": t_total,
                  "master_cpu": self_ru.ru_utime + self_ru.ru_stime,
                  "peak_rss": self_ru.ru_maxrss * 1024,
                  "log_bytes": os.path.getsize(log) if log and os.path.exists(log) else 0}))
"""

DEFAULT_SIZES = {"A": 10_000, "V10K": 2_000, "V1M": 200}


def measure(kind: str, mode: str, n: int, root: str, policy: str = "") -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, kind, mode, str(n), root, policy],
                         capture_output=True, text=True, cwd=root)
    if out.returncode != 0:
        raise SystemExit(f"{kind} {mode}: the child failed:\n{out.stderr}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--g", action="store_true", help="also run G (1,000,000 tasks)")
    ap.add_argument("--g-tasks", type=int, default=1_000_000)
    ap.add_argument("--only", default=None, help="workloads, e.g. A,V1M")
    ap.add_argument("--checkpoint", default=None, metavar="POLICY",
                    help="also measure a checkpoint policy (e.g. tasks=1000,seconds=30)")
    a = ap.parse_args()
    sizes = dict(DEFAULT_SIZES)
    if a.g:
        sizes["G"] = a.g_tasks
    if a.only:
        sizes = {k: v for k, v in sizes.items() if k in a.only.upper().split(",")}
    rows = []
    with tempfile.TemporaryDirectory() as root:
        for kind, n in sizes.items():
            res: dict[str, list[dict]] = {"off": [], "on": []}
            if a.checkpoint:
                res["ckpt"] = []
            reps = a.repeat if kind != "G" else max(1, a.repeat // 2)
            for i in range(reps):
                order = ("on", "off", "ckpt") if i % 2 == 0 else ("ckpt", "off", "on")
                for mode in (m for m in order if m in res):
                    r = measure(kind, mode, n, root, a.checkpoint or "")
                    res[mode].append(r)
                    print(f"{kind:>5} {mode:>4}: {r['tps']:9.0f} tasks/s, master CPU "
                          f"{r['master_cpu']:.2f} s, peak RSS {r['peak_rss'] / 2**20:.0f} MiB, "
                          f"log {r['log_bytes'] / 2**20:.1f} MiB", flush=True)
            med = {m: {k: statistics.median(x[k] for x in v) for k in v[0]}
                   for m, v in res.items()}
            rows.append((kind, n, med))
    print()
    print("| workload | tasks | off tasks/s | on tasks/s | on/off | master CPU on/off | "
          "peak RSS off -> on | resume.log |")
    print("|---|---|---|---|---|---|---|---|")
    for kind, n, med in rows:
        off, on = med["off"], med["on"]
        print(f"| {kind} | {n:,} | {off['tps']:,.0f} | {on['tps']:,.0f} | "
              f"{on['tps'] / off['tps']:.3f} | {on['master_cpu'] / off['master_cpu']:.3f} | "
              f"{off['peak_rss'] / 2**20:.0f} -> {on['peak_rss'] / 2**20:.0f} MiB | "
              f"{on['log_bytes'] / 2**20:.1f} MiB |")
    if a.checkpoint:
        print(f"\nwith --checkpoint {a.checkpoint}:\n")
        print("| workload | off tasks/s | checkpoint tasks/s | checkpoint/off | on/off |")
        print("|---|---|---|---|---|")
        for kind, _n, med in rows:
            off, on, ck = med["off"], med["on"], med["ckpt"]
            print(f"| {kind} | {off['tps']:,.0f} | {ck['tps']:,.0f} | "
                  f"{ck['tps'] / off['tps']:.3f} | {on['tps'] / off['tps']:.3f} |")
    print(json.dumps({"repeat": a.repeat, "rows": [{"workload": k, "tasks": n, "median": m}
                                                   for k, n, m in rows]}), file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", os.path.join(os.path.dirname(__file__), "..", "src"))
    main()
