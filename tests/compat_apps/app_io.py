"""@IO tasks on the nodes' I/O executors (runcompss --io_executors), overlapping the
computing tasks; every task's COMPSS_* / OMP_NUM_THREADS."""
import os
import time

from pycompss.api.IO import IO
from pycompss.api.api import compss_wait_on
from pycompss.api.constraint import constraint
from pycompss.api.task import task


@constraint(computing_units=2)          # the whole node: computing tasks one at a time
@task(returns=1)
def compute(seconds):
    t0 = time.time()
    time.sleep(seconds)
    return t0, time.time(), os.getpid()


@IO()
@task(returns=1)
def write(name, seconds):
    t0 = time.time()
    time.sleep(seconds)
    with open(name, "w") as f:
        f.write(name)
    return t0, time.time(), os.getpid()


def env():
    return [os.environ.get(k) for k in ("COMPSS_NUM_NODES", "COMPSS_HOSTNAMES",
                                        "COMPSS_NUM_THREADS", "OMP_NUM_THREADS")]


@task(returns=1)
def one_unit():
    return env()


@constraint(computing_units=2)
@task(returns=1)
def two_units():
    return env()


if __name__ == "__main__":
    comp = [compute(1.0) for _ in range(2)]
    ios = [write(f"io{i}.txt", 0.8) for i in range(2)]
    comp, ios = compss_wait_on(comp), compss_wait_on(ios)

    def overlaps(a, b):
        return a[0] < b[1] and b[0] < a[1]
    print("RESULT", {
        "io_overlaps_compute": all(any(overlaps(i, c) for c in comp) for i in ios),
        "io_overlap_each_other": overlaps(ios[0], ios[1]),
        "io_pids_not_compute": not ({i[2] for i in ios} & {c[2] for c in comp}),
        "files": sorted(open(f"io{i}.txt").read() for i in range(2)),
        "env1": compss_wait_on(one_unit()), "env2": compss_wait_on(two_units())})
