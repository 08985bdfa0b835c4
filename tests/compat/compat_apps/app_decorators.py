"""@implement, @reduction, @local, @IO, @prolog / @epilog."""
import os

from pycompss.api.api import compss_barrier, compss_wait_on
from pycompss.api.constraint import constraint
from pycompss.api.epilog import epilog
from pycompss.api.implement import implement
from pycompss.api.IO import IO
from pycompss.api.local import local
from pycompss.api.parameter import COLLECTION_IN, INOUT
from pycompss.api.prolog import prolog
from pycompss.api.reduction import reduction
from pycompss.api.task import task


@implement(source_class="app_decorators", method="compute")
@constraint(computing_units=1)
@task(returns=str)
def compute_small(x):
    return f"alternative:{x}"


@constraint(computing_units=64)          # no node of this run has 64 units
@task(returns=str)
def compute(x):
    return f"main:{x}"


@task(returns=int)
def area(h, w):
    return h * w


@reduction(chunk_size="2")
@task(returns=int, areas=COLLECTION_IN)
def total(areas):
    print("reducing", len(areas))
    return sum(areas)


@task(v=INOUT)
def append_ones(v):
    v += [1, 1, 1]


@local
def scale(v, k):
    return [k * x for x in v]


@IO()
@task(returns=int)
def io_task(text):
    with open("io.txt", "w") as fh:
        fh.write(text)
    return len(text)


@prolog(binary="mkdir", args="-p {{sandbox}}")
@epilog(binary="touch", args="{{sandbox}}/epilog-ran")
@task(returns=bool)
def in_sandbox(sandbox):
    return os.path.isdir(sandbox)


if __name__ == "__main__":
    out = {"implement": compss_wait_on(compute(3))}
    out["reduction"] = compss_wait_on(total([area(i, i) for i in range(10)]))
    v = [1, 2, 3]
    append_ones(v)
    out["local"] = scale(v, 2)
    out["io"] = compss_wait_on(io_task("abc"))
    out["prolog"] = compss_wait_on(in_sandbox("sandbox"))
    compss_barrier()
    out["epilog"] = os.path.exists("sandbox/epilog-ran")
    print("RESULT", sorted(out.items()))
