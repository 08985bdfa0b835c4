"""@IO tasks on the nodes' I/O executors (runcompss --io_executors), running while the
computing tasks hold every computing unit; every task's COMPSS_* / OMP_NUM_THREADS.

A computing task and an I/O task meet: each leaves a mark and waits (at most argv[1]
seconds) for the other's, so both see each other only if they run at the same time."""
import os
import sys
import time

from pycompss.api.IO import IO
from pycompss.api.api import compss_wait_on
from pycompss.api.constraint import constraint
from pycompss.api.task import task


def meet(mine, other, patience):
    open(mine, "w").close()
    end = time.time() + patience
    while time.time() < end:
        if os.path.exists(other):
            return True
        time.sleep(0.05)
    return False


@constraint(computing_units=2)          # the whole node: no computing task beside it
@task(returns=1)
def compute(patience):
    return meet("compute.mark", "io.mark", patience), os.getpid()


@IO()
@task(returns=1)
def write(name, patience):
    with open(name, "w") as f:
        f.write(name)
    return meet("io.mark", "compute.mark", patience), os.getpid()


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
    patience = float(sys.argv[1])
    c, w = compute(patience), write("io0.txt", patience)
    c, w = compss_wait_on(c), compss_wait_on(w)
    print("RESULT", {"met": [c[0], w[0]], "io_pid_not_compute": c[1] != w[1],
                     "file": open("io0.txt").read(),
                     "env1": compss_wait_on(one_unit()), "env2": compss_wait_on(two_units())})
