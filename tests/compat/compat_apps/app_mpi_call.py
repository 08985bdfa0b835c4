"""@mpi decided at each call: processes from a module global defined after the task,
scale_by_cu with a @constraint, returns=N checked against the ranks; collection layouts."""
from pycompss.api.api import compss_wait_on
from pycompss.api.constraint import constraint
from pycompss.api.mpi import mpi
from pycompss.api.parameter import COLLECTION_IN, block_count, block_length, stride
from pycompss.api.task import task


@mpi(runner="mpirun", processes="NPROCS", flags="--oversubscribe")
@task(returns=1)
def size():
    from mpi4py import MPI
    return MPI.COMM_WORLD.size


@constraint(computing_units="UNITS")
@mpi(runner="mpirun", processes=1, scale_by_cu=True, flags="--oversubscribe")
@task(returns=2)
def scaled():
    from mpi4py import MPI
    return MPI.COMM_WORLD.rank


@mpi(runner="mpirun", processes=2, flags="--oversubscribe",
     col_layout={block_count: 2, block_length: 2, stride: 3})
@task(col=COLLECTION_IN, returns=2)
def one_block_each(col):
    return list(col)


@mpi(runner="mpirun", processes=2, flags="--oversubscribe",
     col_layout={block_count: 4, block_length: 1, stride: 2})
@task(col=COLLECTION_IN, returns=1)
def round_robin(col):
    return list(col)


@mpi(runner="mpirun", processes=2, flags="--oversubscribe",
     col_layout={block_count: 2, block_length: 1, stride: 1})
@task(col=COLLECTION_IN, returns=2)
def one_element_each(col):
    return col              # the element itself, not a list of one (PyCOMPSs)


@mpi(runner="mpirun", processes=4, processes_per_node=2, flags="--oversubscribe")
@task(returns=4)
def two_groups_one_node():
    from mpi4py import MPI
    return MPI.COMM_WORLD.rank     # COMPSs's two "nodes" of 2 ranks share the one node


NPROCS = 3          # read when size() is called, not when it was declared
UNITS = 2

if __name__ == "__main__":
    first = size()
    NPROCS = 2
    second = size()
    data = list(range(10))
    out = {"sizes": compss_wait_on([first, second]),
           "scaled": compss_wait_on(scaled()),
           "blocks": compss_wait_on(one_block_each(data)),
           "round_robin": compss_wait_on(round_robin(data)),
           "one_element": compss_wait_on(one_element_each([[7], [8]])),
           "groups": compss_wait_on(two_groups_one_node())}
    UNITS = 3       # 3 ranks now, but returns=2: an error naming the task at the call
    try:
        scaled()
        out["mismatch"] = "no error"
    except Exception as exc:
        out["mismatch"] = str(exc)
    print("RESULT", sorted(out.items()))
