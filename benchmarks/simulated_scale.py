"""``scale_bench.py --simulated``: the master against simulated nodes (see scale_bench's doc).

Every sample runs in a fresh interpreter (``scale_bench.py --one JSON``), so
its peak RSS and its collector's state are its own; node counts take turns
in every repetition.
"""
from __future__ import annotations

import datetime as dt
import json
import math
import os
import platform
import resource
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _proc_cpu(pids: list[int]) -> float:
    """CPU seconds (user + system) of these processes so far."""
    total = 0.0
    tick = os.sysconf("SC_CLK_TCK")
    for pid in pids:
        try:
            with open(f"/proc/{pid}/stat") as f:
                fields = f.read().rpartition(")")[2].split()
            total += (int(fields[11]) + int(fields[12])) / tick
        except (OSError, ValueError, IndexError):
            pass
    return total


def _log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def one(p: dict[str, Any]) -> dict[str, Any]:
    """One sample, in this (fresh) interpreter: p = {nodes, tasks, sleep, run_dir}."""
    import taskflow
    from taskflow import wait_on
    from taskflow.providers.simulated import SimulatedProvider
    from scale_bench import noop

    nodes, tasks, sleep = p["nodes"], p["tasks"], p.get("sleep", 0.0)
    t = time.perf_counter()
    prov = SimulatedProvider(nodes, task_seconds=sleep)
    rt = taskflow.Runtime(providers=[prov], run_dir=p["run_dir"], echo_logs=False).start()
    start_s = time.perf_counter() - t
    try:
        warm = 2 * nodes if sleep else max(20_000, 4 * nodes)
        wait_on([noop(i) for i in range(warm)])     # every node has the function, means known
        rt.bus.flush()
        sims = [proc.pid for proc in prov.procs]
        writer = [rt.journal.proc.pid] if rt.journal is not None and rt.journal.proc else []
        s0, j0 = _proc_cpu(sims), _proc_cpu(writer)
        c0 = _cpu()
        t0 = time.perf_counter()
        vals = wait_on([noop(i) for i in range(tasks)])
        wall = time.perf_counter() - t0
        rt.bus.flush()                              # the sample's rows, pickled for the journal
        cpu = _cpu() - c0
        sim_cpu, writer_cpu = _proc_cpu(sims) - s0, _proc_cpu(writer) - j0
        if len(vals) != tasks or vals[0] != 0 or vals[-1] != tasks - 1:
            raise AssertionError("wrong results")
    finally:
        rt.stop()
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out = {"nodes": nodes, "tasks": tasks, "tasks_per_s": tasks / wall, "seconds": wall,
           "master_cpu_us_per_task": cpu / tasks * 1e6, "master_peak_rss_mb": rss,
           "start_s": start_s, "sim_cpu_us_per_task": sim_cpu / tasks * 1e6,
           "journal_cpu_us_per_task": writer_cpu / tasks * 1e6}
    if sleep:
        ideal = math.ceil(tasks / nodes) * sleep
        out.update(ideal_s=ideal, makespan_over_ideal=wall / ideal,
                   over_fractional_ideal=wall / (tasks * sleep / nodes))
    return out


def _child(p: dict[str, Any]) -> dict[str, Any]:
    r = subprocess.run([sys.executable, str(HERE / "scale_bench.py"), "--one", json.dumps(p)],
                       capture_output=True, text=True, timeout=1800)
    if r.returncode != 0:
        raise RuntimeError(f"sample {p} failed:\n{r.stderr[-3000:]}")
    return json.loads(r.stdout.strip().splitlines()[-1])


def main(args: Any, counts: list[int], results: Path) -> int:
    results.mkdir(parents=True, exist_ok=True)
    run_dir = str(results / "scale-runs")
    samples: dict[int, list[dict[str, Any]]] = {}
    for rep in range(args.repeat):
        for n in counts:
            r = _child({"nodes": n, "tasks": args.tasks, "run_dir": run_dir})
            samples.setdefault(n, []).append(r)
            _log(f"rep {rep + 1}: {n} simulated nodes: {r['tasks_per_s']:,.0f} tasks/s, master "
                 f"{r['master_cpu_us_per_task']:.2f} us CPU/task, peak RSS "
                 f"{r['master_peak_rss_mb']:.0f} MB (started in {r['start_s']:.2f} s); simulator "
                 f"{r['sim_cpu_us_per_task']:.2f}, journal writer "
                 f"{r['journal_cpu_us_per_task']:.2f} us CPU/task")
    keys = ("tasks_per_s", "master_cpu_us_per_task", "master_peak_rss_mb", "start_s",
            "sim_cpu_us_per_task", "journal_cpu_us_per_task")
    med = [{"nodes": n, "tasks": args.tasks,
            **{k: statistics.median(r[k] for r in samples[n]) for k in keys}} for n in counts]
    s2: list[dict[str, Any]] = []
    big = 1024 if 1024 in counts else max(counts)
    if args.sleep_tasks:
        for rep in range(args.repeat):
            r = _child({"nodes": big, "tasks": args.sleep_tasks, "sleep": 0.05,
                        "run_dir": run_dir})
            s2.append(r)
            _log(f"S2 rep {rep + 1}: {args.sleep_tasks:,} x 50 ms on {big} simulated nodes: "
                 f"{r['seconds']:.3f} s = {r['makespan_over_ideal']:.3f} x ideal "
                 f"({r['ideal_s']:.3f} s)")
    lines = ["| simulated nodes | tasks/s (min-max) | master CPU µs/task (min-max) | "
             "master peak RSS MB | start-up s |", "|---|---|---|---|---|"]
    for m in med:
        v = samples[m["nodes"]]
        rates = [r["tasks_per_s"] for r in v]
        cpus = [r["master_cpu_us_per_task"] for r in v]
        lines.append(f"| {m['nodes']} | {m['tasks_per_s']:,.0f} ({min(rates):,.0f}-"
                     f"{max(rates):,.0f}) | {m['master_cpu_us_per_task']:.2f} ({min(cpus):.2f}-"
                     f"{max(cpus):.2f}) | {m['master_peak_rss_mb']:.0f} | {m['start_s']:.2f} |")
    base = med[0]
    for m in med[1:]:
        lines.append(f"\n{m['nodes']} / {base['nodes']} nodes: master CPU per task "
                     f"{m['master_cpu_us_per_task'] / base['master_cpu_us_per_task']:.2f}x, "
                     f"throughput {m['tasks_per_s'] / base['tasks_per_s']:.2f}x")
    s2_med = None
    if s2:
        s2_med = {k: statistics.median(r[k] for r in s2) for k in
                  ("seconds", "ideal_s", "makespan_over_ideal", "over_fractional_ideal",
                   "master_cpu_us_per_task")}
        lines.append(f"\nS2: {args.sleep_tasks:,} x 50 ms on {big} simulated one-slot nodes: "
                     f"makespan {s2_med['seconds']:.3f} s = {s2_med['makespan_over_ideal']:.3f} x "
                     f"ideal ({s2_med['ideal_s']:.3f} s = ceil(tasks / nodes) x 50 ms; "
                     f"{s2_med['over_fractional_ideal']:.3f} x tasks x 50 ms / nodes)")
    table = "\n".join(lines)
    print(table)
    meta = {"date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "python": platform.python_version(), "cores": os.cpu_count(), "tasks": args.tasks,
            "repeat": args.repeat}
    path = args.json or str(results / "scale_simulated.json")
    Path(path).write_text(json.dumps({"simulated": med, "samples": samples, "s2": s2,
                                      "s2_median": s2_med, "meta": meta, "table": table},
                                     indent=2))
    return 0
