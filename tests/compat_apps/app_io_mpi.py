"""An @IO @mpi task: its ranks are I/O executors, so it overlaps a computing task that
holds the node's one computing unit."""
import time

from pycompss.api.IO import IO
from pycompss.api.api import compss_wait_on
from pycompss.api.mpi import mpi
from pycompss.api.task import task


@IO()
@mpi(runner="mpirun", processes=2, flags="--oversubscribe")
@task(returns=1)
def dump():
    from mpi4py import MPI
    t0 = time.time()
    time.sleep(1.0)
    return MPI.COMM_WORLD.size, t0, time.time()


@task(returns=1)
def compute():
    t0 = time.time()
    time.sleep(1.0)
    return t0, time.time()


if __name__ == "__main__":
    d, c = dump(), compute()           # both submitted before either is waited for
    ranks, c = compss_wait_on(d), compss_wait_on(c)
    size, t0, t1 = ranks[0]
    print("RESULT", {"ranks": [r[0] for r in ranks], "overlap": t0 < c[1] and c[0] < t1})
