"""No-op throughput with the journal on and off (issue 6's 15 % target).

Each measurement is a fresh process: start a 2-worker runtime, submit N
no-op tasks, wait for all of them; throughput = N / (submit + wait time).
Runs alternate on/off so drift on the machine hits both alike.

    python benchmarks/journal_overhead.py [--tasks 10000] [--repeat 5]
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
import json, sys, time, taskflow
from taskflow import task, wait_on
@task(returns=int)
def noop(x):
    return x
n, mode, root = int(sys.argv[1]), sys.argv[2], sys.argv[3]
if mode == "thread":                                # the journal written from the bus thread
    import os
    os.environ["TASKFLOW_JOURNAL"] = "thread"
with taskflow.Runtime(workers=2, run_dir=root, journal=mode in ("on", "thread"),
                      echo_logs=False) as rt:
    if mode == "bus":                               # events emitted, nobody writes them
        rt.bus.subscribe(lambda evs: None)
    wait_on([noop(i) for i in range(200)])          # warm-up: executors, function shipping
    t0 = time.perf_counter()
    futs = [noop(i) for i in range(n)]
    wait_on(futs)
    dt = time.perf_counter() - t0
t_total = time.perf_counter() - t0                  # includes the journal's final flush
import resource
cpu = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"tps": n / dt, "seconds": dt, "with_stop": t_total,
                  "master_cpu": cpu.ru_utime + cpu.ru_stime}))
"""


def measure(n: int, journal: str, root: str) -> dict:
    out = subprocess.run([sys.executable, "-c", CHILD, str(n), journal, root],
                         capture_output=True, text=True, check=True, cwd=root)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=10000)
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--bus", action="store_true",
                    help="also measure the bus with a tuple subscriber that drops the events "
                         "(it pays for expanding the task rows into event tuples)")
    ap.add_argument("--thread", action="store_true",
                    help="also measure the journal written from the bus thread "
                         "(TASKFLOW_JOURNAL=thread) instead of its writer process")
    a = ap.parse_args()
    modes = ["off", "on"] + (["bus"] if a.bus else []) + (["thread"] if a.thread else [])
    res: dict[str, list] = {m: [] for m in modes}
    with tempfile.TemporaryDirectory() as root:
        for i in range(a.repeat):
            for mode in (modes if i % 2 == 0 else modes[::-1]):
                r = measure(a.tasks, mode, root)
                res[mode].append(r)
                print(f"journal {mode:>6}: {r['tps']:8.0f} tasks/s ({r['seconds']:.3f} s, "
                      f"{r['with_stop']:.3f} s with stop)", flush=True)
    med = {m: statistics.median(x["tps"] for x in v) for m, v in res.items()}
    cpu = {m: statistics.median(x["master_cpu"] for x in v) for m, v in res.items()}
    print("median CPU seconds of the master process (whole child, start-up included): " +
          ", ".join(f"{m} {c:.3f}" for m, c in cpu.items()))
    med_stop = {m: statistics.median(a.tasks / x["with_stop"] for x in v) for m, v in res.items()}

    for m in modes[2:]:
        print(f"median {m}: {med[m]:.0f} tasks/s ({med[m] / med['off']:.3f} of off; "
              f"including stop() {med_stop[m] / med_stop['off']:.3f})")
    print(f"median: journal off {med['off']:.0f} tasks/s, on {med['on']:.0f} tasks/s, "
          f"on/off = {med['on'] / med['off']:.3f}; including stop(): off {med_stop['off']:.0f}, "
          f"on {med_stop['on']:.0f} ({med_stop['on'] / med_stop['off']:.3f})")
    print(json.dumps({"tasks": a.tasks, "repeat": a.repeat, "median_tps": med,
                      "median_tps_with_stop": med_stop, "runs": res}), file=sys.stderr)


if __name__ == "__main__":
    os.environ.setdefault("PYTHONPATH", os.path.join(os.path.dirname(__file__), "..", "src"))
    main()
