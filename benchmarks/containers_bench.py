"""What a container costs a task: start-to-exit per task, @container against a plain program.

One 2-slot local runtime runs, in turns (so drift on the machine hits all alike):

  program      @binary true                                   (the plain program)
  ctr-program  @container(podman, busybox image) @binary true
  python       @task no-op                                    (plain Python, for scale)
  ctr-python   @container(podman, Debian+python3 image) @task no-op
  bare podman  `podman run --rm --init <busybox> true` from subprocess, no taskflow

Latency: one task at a time, each waited for before the next (the start-to-exit
cost of one task). Throughput: N tasks submitted at once on 2 slots. Figures are
medians of the rounds; the ratio rows compare with the plain program of the same
run. Needs root, podman and the images of testbed/containers.sh (built here
when missing).

    python benchmarks/containers_bench.py [--tasks 20] [--rounds 3]
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(os.path.dirname(HERE), "src"))

import taskflow  # noqa: E402
from taskflow import binary, task, wait_on  # noqa: E402
from taskflow.api.container import container  # noqa: E402

BB, PY = "localhost/taskflow-bb:1", "localhost/taskflow-py:1"


@binary(binary="true")
@task(returns=int)
def program():
    ...


@container(engine="podman", image=BB)
@binary(binary="true")
@task(returns=int)
def ctr_program():
    ...


@task(returns=int)
def python():
    return 0


@container(engine="podman", image=PY)
@task(returns=int)
def ctr_python():
    return 0


KINDS = {"program": program, "ctr-program": ctr_program, "python": python,
         "ctr-python": ctr_python}


def bare(n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        subprocess.run(["podman", "run", "--rm", "--init", BB, "true"], check=True,
                       capture_output=True)
    return (time.perf_counter() - t0) / n


def latency(fn, n: int) -> float:
    t0 = time.perf_counter()
    for _ in range(n):
        wait_on(fn())
    return (time.perf_counter() - t0) / n


def throughput(fn, n: int) -> float:
    t0 = time.perf_counter()
    wait_on([fn() for _ in range(n)])
    return n / (time.perf_counter() - t0)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--tasks", type=int, default=20)
    ap.add_argument("--rounds", type=int, default=3)
    a = ap.parse_args()
    root = os.path.dirname(HERE)
    subprocess.run(["bash", os.path.join(root, "testbed", "containers.sh"), "up"],
                   check=True, capture_output=True)
    env_file = os.path.join(os.environ.get("TF_CTR", "/var/tmp/taskflow-containers"), "env")
    for line in open(env_file):
        k, _, v = line.strip().partition("=")
        if k:
            os.environ[k] = v
    lat: dict[str, list[float]] = {k: [] for k in [*KINDS, "bare podman"]}
    tput: dict[str, list[float]] = {k: [] for k in KINDS}
    with tempfile.TemporaryDirectory() as tmp:
        os.chdir(tmp)
        with taskflow.Runtime(workers=2, run_dir=os.path.join(tmp, "runs"), echo_logs=False):
            for fn in KINDS.values():        # warm-up: functions shipped, images checked
                wait_on(fn())
            names = list(KINDS)
            for r in range(a.rounds):
                order = names[r % len(names):] + names[:r % len(names)]
                for k in order:
                    lat[k].append(latency(KINDS[k], a.tasks))
                    tput[k].append(throughput(KINDS[k], a.tasks))
                lat["bare podman"].append(bare(a.tasks))
    med = {k: statistics.median(v) for k, v in lat.items()}
    print(f"tasks per measurement: {a.tasks}, rounds: {a.rounds}, 2 slots, {os.cpu_count()} cores")
    print("| kind | start-to-exit ms/task (median) | tasks/s on 2 slots | vs program |")
    print("|---|---|---|---|")
    for k in [*KINDS, "bare podman"]:
        t = f"{statistics.median(tput[k]):.1f}" if k in tput else "-"
        print(f"| {k} | {med[k] * 1000:.1f} | {t} | {med[k] / med['program']:.1f}x |")
    print(f"container overhead per task: {(med['ctr-program'] - med['program']) * 1000:.0f} ms "
          f"(program), {(med['ctr-python'] - med['python']) * 1000:.0f} ms (Python); taskflow "
          f"around the engine: {(med['ctr-program'] - med['bare podman']) * 1000:.0f} ms")


if __name__ == "__main__":
    main()
