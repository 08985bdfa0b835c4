"""@mpi (a program, and Python on every rank), @mpmd_mpi, @ompss, @multinode."""
import os

from pycompss.api.api import compss_barrier, compss_wait_on, compss_wait_on_file
from pycompss.api.constraint import constraint
from pycompss.api.mpi import mpi
from pycompss.api.mpmd_mpi import mpmd_mpi
from pycompss.api.multinode import multinode
from pycompss.api.ompss import ompss
from pycompss.api.parameter import FILE_OUT_STDOUT
from pycompss.api.task import task

NP = 2


@mpi(runner="mpirun", processes=2)
@task()
def ranks():
    from mpi4py import MPI
    return MPI.COMM_WORLD.rank * 10


@mpi(runner="mpirun", processes=2)
@task(returns=2)
def ranks_two():
    from mpi4py import MPI
    return MPI.COMM_WORLD.rank + 100


@mpi(runner="mpirun", binary="printf", args="'%s|\\n' {{text}}", processes="NP",
     flags="--oversubscribe")
@task(out=FILE_OUT_STDOUT)
def mpi_echo(text, out):
    pass


@constraint(computing_units=2)
@mpi(runner="mpirun", binary="echo", processes=1, scale_by_cu=True, flags="--oversubscribe")
@task(out=FILE_OUT_STDOUT)
def scaled(text, out):
    pass


@mpmd_mpi(runner="mpirun", flags="--oversubscribe",
          programs=[dict(binary="printf", processes=1, args="'first:%s|\\n' {{a}}"),
                    dict(binary="printf", processes=1, args="'second:%s|\\n' {{b}}")])
@task(out=FILE_OUT_STDOUT)
def two_programs(a, b, out):
    pass


@constraint(computing_units=2)
@ompss(binary="sh", args="-c 'echo $OMP_NUM_THREADS'")
@task(out=FILE_OUT_STDOUT)
def threads(out):
    pass


@multinode(computing_nodes=1)
@task(returns=str)
def nodes():
    return os.environ["COMPSS_NUM_NODES"] + ":" + os.environ["COMPSS_NUM_THREADS"]


if __name__ == "__main__":
    out = {"python_mpi": compss_wait_on(ranks()),
           "per_rank": compss_wait_on(ranks_two())}
    mpi_echo("hello world", "echo.txt")        # a value is one argument, for MPI too
    scaled("x", "scaled.txt")
    two_programs("A a", "B", "mpmd.txt")
    threads("threads.txt")
    out["multinode"] = compss_wait_on(nodes())
    compss_barrier()
    compss_wait_on_file("echo.txt", "scaled.txt", "mpmd.txt", "threads.txt")
    out["echo"] = open("echo.txt").read().splitlines()
    out["scaled"] = open("scaled.txt").read().split()
    out["mpmd"] = sorted(open("mpmd.txt").read().splitlines())
    out["threads"] = open("threads.txt").read().strip()
    print("RESULT", sorted(out.items()))
