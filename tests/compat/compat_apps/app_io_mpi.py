"""An @IO @mpi task: its ranks are I/O executors, so it runs while a computing task holds
the node's one computing unit (they meet: each waits for the other's mark). Its ranks are
scale_by_cu x the units its @constraint declares, though it holds none."""
import os
import time

from pycompss.api.IO import IO
from pycompss.api.api import compss_wait_on
from pycompss.api.constraint import constraint
from pycompss.api.mpi import mpi
from pycompss.api.task import task


def meet(mine, other, patience=60):
    open(mine, "w").close()
    end = time.time() + patience
    while time.time() < end:
        if os.path.exists(other):
            return True
        time.sleep(0.05)
    return False


@constraint(computing_units="2")
@IO()
@mpi(runner="mpirun", processes=1, scale_by_cu=True, flags="--oversubscribe")
@task(returns=1)
def dump():
    from mpi4py import MPI
    return MPI.COMM_WORLD.size, meet(f"io{MPI.COMM_WORLD.rank}.mark", "compute.mark")


@task(returns=1)
def compute():
    return meet("compute.mark", "io0.mark") and meet("compute.mark", "io1.mark")


if __name__ == "__main__":
    d, c = dump(), compute()           # both submitted before either is waited for
    ranks, c = compss_wait_on(d), compss_wait_on(c)
    print("RESULT", {"ranks": [r[0] for r in ranks], "met": [c] + [r[1] for r in ranks]})
