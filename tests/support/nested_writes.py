"""Tasks for tests/core/test_nested_writes.py: a parent giving its objects to parameters
that the tasks it calls write (importable: the worker has them by reference)."""
from __future__ import annotations

from taskflow import COLLECTION_INOUT, INOUT, task, wait_on


class Box:
    def __init__(self) -> None:
        self.value = 0


@task(box=INOUT)
def increment(box):
    box.value += 1


@task(returns=1)
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
def writes_its_objects():
    box = Box()
    increment(box)
    increment(box)              # reads the version the first call wrote
    seen = read(box)            # so does a reading call
    items = [0]
    append_one(items)
    wait_on(box, items)         # both brought up to date in place, as in the program
    return box.value, wait_on(seen), items


@task(returns=1)
def gives_a_collection():
    items = [[1], [2]]
    double_all(items)
    return wait_on(items)
