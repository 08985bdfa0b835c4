"""The master's memory for one parent's children (issue 36), each figure in a fresh interpreter.

    python benchmarks/nested_memory.py [--children 10000,40000] [--only P,B,PA,A,F]
                                       [--journal] [--src DIR] [--json out.json]

The master's RSS above its figure after a warm-up (200 no-ops), at its peak
(``ru_maxrss``) and at the end; 2 local slots, the children no-ops:

P   the program calls the no-ops 100 at a time and waits for each batch (the baseline);
B   one task does the same with its children (the master should keep about one batch);
PA  the program calls them all, then waits for them all;
A   one task calls them all, then waits for them all (it holds every handle meanwhile);
F   one task calls them all without keeping a handle, then ``barrier()``.

No journal and no resume log unless ``--journal``: their own buffers (the same for a
program's calls and a task's) otherwise hide what the children cost. ``--src`` runs the
taskflow of another checkout's ``src`` (before and after a change, the same sitting).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

CHILD = r'''
import gc, resource, sys, tempfile
import taskflow
from taskflow import barrier, task, wait_on

@task(returns=1)
def noop(i):
    return i

@task(returns=1)
def in_batches(n):
    s = 0
    for k in range(0, n, 100):
        s += sum(wait_on([noop(i) for i in range(k, min(n, k + 100))]))
    return s

@task(returns=1)
def all_at_once(n):
    return sum(wait_on([noop(i) for i in range(n)]))

@task(returns=1)
def forgets(n):
    for i in range(n):
        noop(i)
    barrier()
    return sum(range(n))

def rss():
    with open("/proc/self/status") as f:
        return int(f.read().split("VmRSS:")[1].split()[0]) / 1024

mode, n, journal = sys.argv[1], int(sys.argv[2]), sys.argv[3] == "1"
with tempfile.TemporaryDirectory() as tmp, taskflow.Runtime(
        workers=2, run_dir=tmp, journal=journal, resumable=journal):
    wait_on([noop(i) for i in range(200)])
    gc.collect()
    base = rss()
    if mode == "P":
        s = 0
        for k in range(0, n, 100):
            s += sum(wait_on([noop(i) for i in range(k, min(n, k + 100))]))
    elif mode == "PA":
        s = sum(wait_on([noop(i) for i in range(n)]))
    else:
        s = wait_on({"B": in_batches, "A": all_at_once, "F": forgets}[mode](n))
    assert s == sum(range(n)), s
    gc.collect()
    end = rss()
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
print(f"{peak - base:.1f} {end - base:.1f}")
'''


def measure(src: Path, mode: str, n: int, journal: bool) -> dict[str, float]:
    env = dict(os.environ, PYTHONPATH=str(src))     # (the agents and executors too)
    out = subprocess.run([sys.executable, "-c", CHILD, mode, str(n), "1" if journal else "0"],
                         env=env, capture_output=True, text=True, timeout=600, cwd=src)
    if out.returncode != 0:
        raise SystemExit(f"{mode} {n}: {out.stderr.strip()[-2000:]}")
    peak, end = map(float, out.stdout.split()[-2:])
    return {"peak_mb": peak, "end_mb": end}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--children", default="10000,40000")
    ap.add_argument("--only", default="P,B,PA,A,F")
    ap.add_argument("--journal", action="store_true")
    ap.add_argument("--src", default=str(ROOT / "src"))
    ap.add_argument("--json")
    a = ap.parse_args(argv)
    got: dict[str, dict[str, dict[str, float]]] = {}
    for n in map(int, a.children.split(",")):
        for mode in a.only.split(","):
            r = got.setdefault(mode, {})[str(n)] = measure(Path(a.src), mode, n, a.journal)
            print(f"{mode} {n}: peak +{r['peak_mb']:.1f} MB, end +{r['end_mb']:.1f} MB",
                  file=sys.stderr, flush=True)
    print(json.dumps(got, indent=1))
    if a.json:
        Path(a.json).write_text(json.dumps(got, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
