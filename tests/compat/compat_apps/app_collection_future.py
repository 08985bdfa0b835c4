"""A task's result (a future) given where a collection is declared (issue 37): one object,
as PyCOMPSs takes any future, so the task gets the producer's value (COLLECTION_IN), or
changes it (COLLECTION_INOUT) and a later reader sees the change."""
from pycompss.api.api import compss_wait_on
from pycompss.api.parameter import COLLECTION_IN, COLLECTION_INOUT
from pycompss.api.task import task


@task(returns=1)
def make(n):
    return [[i] for i in range(n)]


@task(returns=1, blocks=COLLECTION_IN)
def total(blocks):
    return sum(b[0] for b in blocks)


@task(blocks=COLLECTION_INOUT)
def extend(blocks):
    blocks.append([10])


if __name__ == "__main__":
    made = make(4)
    before = total(made)
    extend(made)
    after = total(made)
    print("RESULT", {"before": compss_wait_on(before), "after": compss_wait_on(after),
                     "made": compss_wait_on(made)})
