"""S: does the master keep up as nodes are added?

    python benchmarks/scale_bench.py [--nodes 2,8,32,64,128] [--tasks 100000] [--repeat 3]
                                     [--sleep-tasks 10000] [--json PATH]
    python benchmarks/scale_bench.py --simulated 2,64,1024[,4096] [--tasks 100000]
                                     [--repeat 3] [--sleep-tasks 10000] [--json PATH]

--simulated: the real master against N simulated node agents of one slot
(taskflow.providers.simulated: every node a real endpoint of the wire,
served by one process per 1,024 nodes, no executors), so what is measured
is the master alone. Each sample is a fresh interpreter (its peak RSS is its
own); node counts take turns in every repetition. Per sample: --tasks no-op
tasks after a warm-up, tasks/s, the master's CPU per task (this process, all
threads, until the journal has taken every row of the sample) and its peak
RSS; then S2 on 1,024 nodes (or the largest N): --sleep-tasks tasks of 50 ms
on simulated one-slot nodes, makespan / ideal with ideal = ceil(tasks / N) x
50 ms (tasks are whole). JSON: {"simulated": [{"nodes", "tasks",
"tasks_per_s", "master_cpu_us_per_task", "master_peak_rss_mb"}, ...]} (the
medians) plus the samples and S2.

S   100,000 no-op tasks (submit all, wait all) on N local node agents of one
    slot each, N in --nodes, and on 2 agents of N/2 slots each for the largest
    N (the same total slots on few nodes). Per run: tasks/s and the master's
    CPU time per task (this process, all its threads: user + system, from
    getrusage), so a per-task loop over the nodes would show as CPU growing
    with N.
S2  10,000 tasks of time.sleep(0.05) on the largest N one-slot agents:
    makespan / ideal, ideal = tasks x 0.05 s / N.

Each configuration starts its own runtime (start-up time is reported apart,
not timed in the figures), warms every slot up, then runs --repeat times;
configurations take turns in every repetition. A 2-core machine runs every
agent and executor here, so the absolute rates fall with N for the machine's
sake (256 processes share 2 cores); the master's CPU per task is what shows
whether the master itself scales.
"""
from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import platform
import resource
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))
RESULTS = ROOT / "benchmarks" / "results"

import taskflow  # noqa: E402
from taskflow import task, wait_on  # noqa: E402


@task(returns=1)
def noop(x):  # type: ignore[no-untyped-def]
    return x


@task(returns=1)
def nap(seconds):  # type: ignore[no-untyped-def]
    import time as _t

    _t.sleep(seconds)
    return seconds


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def cpu_self() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


class Config:
    def __init__(self, nodes: int, slots: int) -> None:
        self.nodes, self.slots = nodes, slots
        self.name = f"{nodes} x {slots}"
        t = time.perf_counter()
        self.rt = taskflow.Runtime(workers=nodes * slots, nodes=nodes,
                                   run_dir=str(RESULTS / "scale-runs")).start()
        self.start_s = time.perf_counter() - t
        t = time.perf_counter()
        total = nodes * slots
        wait_on([nap(0.05) for _ in range(2 * total)])    # every slot of every node
        wait_on([noop(i) for i in range(200 * total)])     # the no-op's mean is known
        self.warm_s = time.perf_counter() - t

    def noops(self, n: int) -> dict[str, float]:
        c0 = cpu_self()
        t = time.perf_counter()
        vals = wait_on([noop(i) for i in range(n)])
        s = time.perf_counter() - t
        c = cpu_self() - c0
        if vals[0] != 0 or vals[-1] != n - 1 or len(vals) != n:
            raise AssertionError("wrong results")
        return {"tasks_per_s": n / s, "seconds": s, "master_cpu_us_per_task": c / n * 1e6}

    def sleeps(self, n: int, sleep: float) -> dict[str, float]:
        c0 = cpu_self()
        t = time.perf_counter()
        wait_on([nap(sleep) for _ in range(n)])
        s = time.perf_counter() - t
        ideal = n * sleep / (self.nodes * self.slots)
        return {"makespan_s": s, "ideal_s": ideal, "makespan_over_ideal": s / ideal,
                "master_cpu_us_per_task": (cpu_self() - c0) / n * 1e6}

    def close(self) -> None:
        self.rt.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--simulated", default=None, metavar="N,N,...",
                   help="simulated one-slot nodes (e.g. 2,64,1024,4096) instead of local agents")
    p.add_argument("--one", default=None, help=argparse.SUPPRESS)   # a child's sample (JSON)
    p.add_argument("--nodes", default="2,8,32,64,128")
    p.add_argument("--tasks", type=int, default=100_000)
    p.add_argument("--sleep-tasks", type=int, default=10_000, help="0: skip S2")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--json", default=None, help="default: results/scale.json (simulated: results/scale_simulated.json)")
    args = p.parse_args(argv)
    if args.one is not None:
        import simulated_scale
        print(json.dumps(simulated_scale.one(json.loads(args.one))))
        return 0
    if args.simulated is not None:
        import simulated_scale
        return simulated_scale.main(args, [int(x) for x in args.simulated.split(",") if x],
                                    RESULTS)
    counts = [int(x) for x in args.nodes.split(",") if x]
    big = max(counts)
    shapes = [(n, 1) for n in counts] + ([(2, big // 2)] if big > 2 else [])
    RESULTS.mkdir(parents=True, exist_ok=True)
    samples: dict[str, list[dict[str, float]]] = {}
    starts: dict[str, dict[str, float]] = {}
    # One configuration at a time (128 agents and 2 x 64 executors do not fit together on
    # a small machine): each runs its repetitions back to back.
    for nodes, slots in shapes:
        cfg = Config(nodes, slots)
        starts[cfg.name] = {"start_s": cfg.start_s, "warm_s": cfg.warm_s}
        log(f"{cfg.name}: started in {cfg.start_s:.1f} s, warmed up in {cfg.warm_s:.1f} s")
        try:
            for rep in range(args.repeat):
                r = cfg.noops(args.tasks)
                samples.setdefault(cfg.name, []).append(r)
                log(f"  S {cfg.name} rep {rep + 1}: {r['tasks_per_s']:,.0f} tasks/s, master "
                    f"{r['master_cpu_us_per_task']:.1f} us CPU/task")
            if args.sleep_tasks and (nodes, slots) == (big, 1):
                r = cfg.sleeps(args.sleep_tasks, 0.05)
                samples["S2"] = [r]
                log(f"  S2 {cfg.name}: makespan {r['makespan_s']:.2f} s = "
                    f"{r['makespan_over_ideal']:.3f} x ideal")
        finally:
            cfg.close()
    med = {k: {m: statistics.median(r[m] for r in v) for m in v[0]} for k, v in samples.items()}
    lines = ["| nodes x slots | tasks/s (min-max) | master CPU µs/task | start-up s |",
             "|---|---|---|---|"]
    for nodes, slots in shapes:
        name = f"{nodes} x {slots}"
        v = samples[name]
        rates = [r["tasks_per_s"] for r in v]
        lines.append(f"| {name} | {med[name]['tasks_per_s']:,.0f} ({min(rates):,.0f}-{max(rates):,.0f}) | "
                     f"{med[name]['master_cpu_us_per_task']:.1f} | {starts[name]['start_s']:.1f} |")
    base = f"2 x {big // 2}"
    if base in med and f"{big} x 1" in med:
        lines.append(f"\n{big} x 1 / {base}: throughput {med[f'{big} x 1']['tasks_per_s'] / med[base]['tasks_per_s']:.2f}; "
                     f"{big} x 1 / 2 x 1: throughput {med[f'{big} x 1']['tasks_per_s'] / med['2 x 1']['tasks_per_s']:.2f}, "
                     f"master CPU per task {med[f'{big} x 1']['master_cpu_us_per_task'] / med['2 x 1']['master_cpu_us_per_task']:.2f}")
    if "S2" in med:
        lines.append(f"S2: {args.sleep_tasks:,} x 50 ms on {big} one-slot nodes: makespan "
                     f"{med['S2']['makespan_s']:.2f} s = {med['S2']['makespan_over_ideal']:.3f} x ideal "
                     f"({med['S2']['ideal_s']:.3f} s)")
    table = "\n".join(lines)
    print(table)
    meta = {"date": dt.datetime.now().astimezone().isoformat(timespec="seconds"),
            "python": platform.python_version(), "cores": os.cpu_count(), "tasks": args.tasks,
            "repeat": args.repeat}
    Path(args.json or RESULTS / "scale.json").write_text(json.dumps({"meta": meta, "samples": samples, "medians": med,
                                           "starts": starts, "table": table}, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
