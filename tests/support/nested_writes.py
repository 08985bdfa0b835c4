"""Tasks for tests/core/test_nested_writes.py: a parent giving its object, or a number, to
an INOUT parameter of a task it calls (importable: the worker has them by reference)."""
from __future__ import annotations

from taskflow import INOUT, task, wait_on


class Box:
    def __init__(self) -> None:
        self.value = 0


@task(box=INOUT)
def increment(box):
    box.value += 1


@task(returns=1)
def gives_its_object():
    box = Box()
    increment(box)
    return wait_on(box).value


@task(returns=1)
def keeps_a_list(items):
    increment_list(items)
    return items


@task(items=INOUT)
def increment_list(items):
    items.append(1)
