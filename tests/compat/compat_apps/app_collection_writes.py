"""COLLECTION_OUT / COLLECTION_INOUT whose elements are lists or None (issue 37): the task's
assignments (out[i] = x) and in-place appends come back, at Depth 1 and at the default
depth, and a later task reads them; a collection of plain values is read, as PyCOMPSs does."""
from pycompss.api.api import compss_wait_on
from pycompss.api.parameter import (COLLECTION_IN, COLLECTION_INOUT, COLLECTION_OUT, Depth,
                                    Type)
from pycompss.api.task import task


@task(out={Type: COLLECTION_OUT, Depth: 1})
def fill(out):
    for i in range(len(out)):
        out[i] = [i] * (i + 1)


@task(out=COLLECTION_OUT)                   # the default depth: [] has nothing to follow
def fill_deep(out):
    for i in range(len(out)):
        out[i] = {"i": i}


@task(acc={Type: COLLECTION_INOUT, Depth: 1})
def grow(acc):
    for i, a in enumerate(acc):
        a.append(100 + i)


@task(values=COLLECTION_INOUT)
def change_values(values):
    values[0] = 99                          # plain values: PyCOMPSs passes them by value


@task(returns=1, xs=COLLECTION_IN)
def sizes(xs):
    return [len(x) for x in xs]


if __name__ == "__main__":
    lists = [[] for _ in range(3)]
    fill(lists)
    read = sizes(lists)
    deep = [[], None]
    fill_deep(deep)
    acc = [[] for _ in range(2)]
    grow(acc)
    grown = sizes(acc)
    nones = [None, None]
    fill(nones)
    values = [1, 2]
    change_values(values)
    try:
        fill({None, 3})                     # a set: no place for the task's values
        refused = "no error"
    except Exception as exc:
        refused = f"{type(exc).__name__}: {exc}"
    print("RESULT", {"lists": compss_wait_on(lists), "read": compss_wait_on(read),
                     "deep": compss_wait_on(deep), "acc": compss_wait_on(acc),
                     "grown": compss_wait_on(grown), "nones": compss_wait_on(nones),
                     "values": compss_wait_on(values), "refused": refused})
