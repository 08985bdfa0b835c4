"""Objects a task gives to the tasks it calls, declared INOUT (as PyCOMPSs's agents' tests
do), under --agents: each call reads the version the one before wrote, a reading call sees
it too, and compss_wait_on in the task gives the last one; a method's object (self) too.
With "collection", a COLLECTION_INOUT list instead: an error at the call."""
import sys

from pycompss.api.api import compss_wait_on
from pycompss.api.parameter import COLLECTION_INOUT, IN, INOUT
from pycompss.api.task import task


class Box:
    def __init__(self):
        self.value = 0

    @task()                     # self: INOUT, as PyCOMPSs's methods
    def add(self, n):
        self.value += n


@task(box=INOUT)
def increment(box):
    box.value += 1


@task(box=IN, returns=1)
def read(box):
    return box.value


@task(items=INOUT)
def append_one(items):
    items.append(1)


@task(items=COLLECTION_INOUT)
def double_all(items):
    for i, x in enumerate(items):
        items[i] = [2 * v for v in x]


@task(returns=1)
def parent():
    box = Box()
    increment(box)
    increment(box)
    seen = read(box)            # after both increments
    box.add(10)
    items = [0]
    append_one(items)
    append_one(items)
    box, items, seen = compss_wait_on(box), compss_wait_on(items), compss_wait_on(seen)
    return {"box": box.value, "seen": seen, "items": items}


@task(returns=1)
def collection_parent():
    items = [[1], [2]]
    double_all(items)
    return compss_wait_on(items)


if __name__ == "__main__":
    if sys.argv[1:] == ["collection"]:
        print("RESULT", compss_wait_on(collection_parent()))
    else:
        print("RESULT", compss_wait_on(parent()))
